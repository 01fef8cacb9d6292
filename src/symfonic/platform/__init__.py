"""The paths the reference pages name for budgets and publishing; the code is in
`symfonic.turns`.
"""

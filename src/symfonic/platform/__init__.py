"""The paths the reference pages name for budgets and publishing; the code is in
:mod:`symfonic.turns`."""

"""What every transport shares and none owns: the host of the agents on one store, its
background sweep, the live pause feed, webhooks and background runs.
"""

"""What every transport shares and none owns: the host of the agents on one store, its
background sweep, and a turn whose first event has been pulled.
"""

"""The steps of a turn's lifecycle that every transport shares: a resumed turn's
settlement (:mod:`~symfonic.turns.resumed_turn`) and the claim's lease
(:mod:`~symfonic.turns.lease`)."""

"""A turn's lifecycle, one step per module, below every agent and transport.

- :mod:`~symfonic.turns.start`: a first turn, from the run marker to its pause or answer;
- :mod:`~symfonic.turns.claim`: a resume's checks, then the single-use claim;
- :mod:`~symfonic.turns.replay`: an answer already settled, answered again;
- :mod:`~symfonic.turns.rehydrate`: the paused round's messages, rebuilt from the checkpoint;
- :mod:`~symfonic.turns.continuation`: the kernel continued from there;
- :mod:`~symfonic.turns.resumed_turn`: settling a claim (publish, second pause, abandon);
- :mod:`~symfonic.turns.lease`: keeping the claim, and how long its writes may wait;
- :mod:`~symfonic.turns.budget`: quotas refused before the claim, plans enforced during the turn;
- :mod:`~symfonic.turns.settlement`: the writes a turn ends in, each one transaction,
  and what a finished turn may publish;
- :mod:`~symfonic.turns.delegation`: another agent as a tool, its first turn in its own session;
- :mod:`~symfonic.turns.delegated_resume`: resuming through a delegate's pause, then the caller;
- :mod:`~symfonic.turns.resume`: the resume's steps in order;
- :mod:`~symfonic.turns.outcomes`: events into the result a caller gets;
- :mod:`~symfonic.turns.runtime`: what these steps need of the agent running them.
"""

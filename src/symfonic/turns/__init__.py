"""A turn's lifecycle, one step per module, below every agent and transport.

A first turn:

- :mod:`~symfonic.turns.start`: the run marker set, the kernel's rounds run;
- :mod:`~symfonic.turns.started_turn`: the one write it ends in (pause, publish, or the
  marker cleared), for a root's turn and a delegate's alike.

A resume, in the order :mod:`~symfonic.turns.resume` runs its steps:

- :mod:`~symfonic.turns.resolve`: the token verified once, and the pause it names;
- :mod:`~symfonic.turns.refusals` (with :mod:`~symfonic.turns.asked_digest` and
  :mod:`~symfonic.turns.replay`): every refusal before the claim, or the outcome replayed;
- :mod:`~symfonic.turns.claim`: the budget admitted, then the single-use claim;
- :mod:`~symfonic.turns.continuation` (with :mod:`~symfonic.turns.rehydrate`): the kernel
  run on from the checkpoint, through a delegate first (:mod:`~symfonic.turns.delegated_resume`);
- :mod:`~symfonic.turns.resumed_turn`: the won claim's turn and its settlement (publish,
  second pause, abandon), for a root's claim and a delegate's alike.

Either, started in the background: :mod:`~symfonic.turns.background` (the turn driven by
a task whether or not anyone listens, its events kept in the store).

Beneath them: :mod:`~symfonic.turns.settlement` (the writes a turn ends in, each one
transaction), :mod:`~symfonic.turns.lease` (a claim kept alive, and how long its writes
may wait), :mod:`~symfonic.turns.budget`, :mod:`~symfonic.turns.recent_pauses`,
:mod:`~symfonic.turns.delegation` (another agent as a tool), :mod:`~symfonic.turns.outcomes`
(events into a ``TurnResult``) and :mod:`~symfonic.turns.runtime` (what the steps need of
the agent running them).
"""

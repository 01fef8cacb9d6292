"""Approval decided per call: a rule on the arguments says whether a person must approve, and who.

A rule is asked once, before its round dispatches anything, and its decision is data
from then on; a rule that fails decides nothing and its round runs nothing.
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

from symfonic.capabilities.human.escalation import escalation_chain
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import Escalation

T = TypeVar("T")

logger = logging.getLogger(__name__)

CallArgs: TypeAlias = Mapping[str, Any]
Decides: TypeAlias = (
    Callable[[CallArgs], T | Awaitable[T]] | Callable[[CallArgs, Principal], T | Awaitable[T]]
)
"""A rule: called with the call's arguments, and with the principal too if it
takes a second positional parameter; sync (run on the event loop, so keep it
quick) or async."""


@dataclass(frozen=True)
class Approver:
    """A call that needs a person: ``audience`` is the scope that may approve it
    (``None``: the session's owner), and ``query`` the question they are asked."""

    audience: str | None
    query: str
    escalate: tuple[Escalation, ...] = ()
    approvers: int = 1
    allow_requester: bool = True


def default_question(tool: str) -> str:
    """The question of a gate without a description; the arguments are shown beside it."""
    return f"Approve {tool}?"


class RuleFailed(Exception):
    """A rule raised or gave no decision; ``words`` is what the model is told."""

    def __init__(self, words: str) -> None:
        super().__init__(words)
        self.words = words


def _takes_principal(rule: Callable[..., Any]) -> bool:
    """Whether ``rule`` is called with the principal after the arguments.

    Decided once, at configuration: a rule with one positional parameter gets
    the arguments, one with two (or ``*args``) gets the principal as well.
    """
    try:
        parameters = list(inspect.signature(rule).parameters.values())
    except (TypeError, ValueError):  # some builtins have no signature: arguments only
        return False
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return True
    positional = [
        p
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    if not positional or len(required) > 2:
        raise ConfigurationError(
            f"an approval rule is called with the call's arguments, and optionally the "
            f"principal; {rule!r} takes {len(required) or 'no'} positional parameters"
        )
    return len(positional) >= 2


class _Rule(Generic[T]):
    """One user callable, with how it is called settled at configuration."""

    def __init__(self, rule: Decides[T]) -> None:
        if not callable(rule):
            raise ConfigurationError(f"an approval rule must be callable, not {rule!r}")
        self._rule: Callable[..., T | Awaitable[T]] = rule
        self._with_principal = _takes_principal(rule)

    async def __call__(self, args: CallArgs, principal: Principal) -> object:
        # A deep copy: what the rule does to its arguments never reaches the call.
        given = copy.deepcopy(dict(args))
        decided = self._rule(given, principal) if self._with_principal else self._rule(given)
        return await decided if inspect.isawaitable(decided) else decided

    def __repr__(self) -> str:
        return repr(self._rule)


def _scope(value: object, tool: str) -> str | None:
    if value is None or (isinstance(value, str) and value):
        return value
    raise RuleFailed(
        f"the approval rule for {tool} chose the audience {value!r}, where a scope name "
        "(or None, for the session's owner) is needed"
    )


class ApprovalRule:
    """When a call of one tool needs a person's approval, and whose; see `needs_approval`."""

    def __init__(
        self,
        when: Decides[bool] | None = None,
        *,
        audience: str | Decides[str | None] | None = None,
        description: str | Decides[str] | None = None,
        escalate: Iterable[Escalation] | None = None,
        approvers: int = 1,
        allow_requester: bool | None = None,
    ) -> None:
        self._when = None if when is None else _Rule(when)
        self._escalate = escalation_chain(escalate)
        self._approvers = _configured_approvers(approvers, audience)
        self._allow_requester = approvers == 1 if allow_requester is None else allow_requester
        if description is None or isinstance(description, str):
            self._description: str | _Rule[str] | None = _configured_text(description)
        else:
            self._description = _Rule(description)
        if audience is None or isinstance(audience, str):
            self._audience: str | _Rule[str | None] | None = _configured_scope(audience)
        else:
            self._audience = _Rule(audience)

    def __repr__(self) -> str:
        return (
            f"needs_approval({self._when!r}, audience={self._audience!r}, "
            f"description={self._description!r})"
        )

    async def decide(self, tool: str, args: CallArgs, principal: Principal) -> Approver | None:
        """Who must approve this call, or ``None`` when it runs as an ordinary call.

        Raises `RuleFailed`, in words, when a rule raises or answers with
        something other than a decision.
        """
        try:
            if self._when is not None:
                needed = await self._when(args, principal)
                if not isinstance(needed, bool):
                    raise RuleFailed(
                        f"the approval rule for {tool} gave {needed!r}, where True (a person "
                        "must approve) or False (it runs as it is) is needed"
                    )
                if not needed:
                    return None
            if isinstance(self._audience, _Rule):
                audience = _scope(await self._audience(args, principal), tool)
            else:
                audience = self._audience
            if audience is None and self._approvers > 1:
                raise RuleFailed(
                    f"the approval rule for {tool} needs {self._approvers} approvers and chose "
                    "the session's owner, who is one person; choose a scope instead"
                )
        except RuleFailed:
            raise
        except Exception as error:  # the rule is the developer's code: any error is its own
            raise RuleFailed(
                f"the approval rule for {tool} failed on this call ({_described(error)})"
            ) from error
        question = await self.question(tool, args, principal)
        return Approver(audience, question, self._escalate, self._approvers, self._allow_requester)

    async def question(self, tool: str, args: CallArgs, principal: Principal) -> str:
        """The description's question for this call, or the default one when it fails.

        ``principal``: whose message the turn answers, also when an edit words it again.
        """
        if not isinstance(self._description, _Rule):
            return self._description or default_question(tool)
        try:
            question = await self._description(args, principal)
        except Exception as error:  # the developer's code: any error only loses the wording
            logger.warning(
                "the approval description for %s failed on this call (%s); "
                "the default question is asked instead",
                tool,
                _described(error),
            )
            return default_question(tool)
        if not isinstance(question, str) or not question.strip():
            logger.warning(
                "the approval description for %s gave %s, where the question's text is "
                "needed; the default question is asked instead",
                tool,
                "an empty text" if isinstance(question, str) else f"a {type(question).__name__}",
            )
            return default_question(tool)
        return question


def _configured_text(description: str | None) -> str | None:
    if description is not None and not description.strip():
        raise ConfigurationError("an approval description is the question's text, not empty")
    return description


def _configured_approvers(approvers: int, audience: object) -> int:
    if isinstance(approvers, bool) or not isinstance(approvers, int) or approvers < 1:
        raise ConfigurationError(
            f"approvers= is how many distinct people must approve, 1 or more, not {approvers!r}"
        )
    if approvers > 1 and audience is None:
        raise ConfigurationError(
            f"approvers={approvers} needs an audience scope that many people hold; without "
            "one, only the session's owner may approve"
        )
    return approvers


def _configured_scope(audience: str | None) -> str | None:
    if audience == "":
        raise ConfigurationError("an approval audience is a scope name, or None for the owner")
    return audience


def _described(error: Exception) -> str:
    """An exception in words: its kind and message, never its repr."""
    if isinstance(error, KeyError) and error.args:
        return f"{type(error).__name__}: there is no {error.args[0]!r}"
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def needs_approval(
    when: Decides[bool] | None = None,
    *,
    audience: str | Decides[str | None] | None = None,
    description: str | Decides[str] | None = None,
    escalate: Iterable[Escalation] | None = None,
    approvers: int = 1,
    allow_requester: bool | None = None,
) -> ApprovalRule:
    """Approval that depends on the call: ``approval={"send_payment": needs_approval(...)}``.

    Every rule below takes ``(args)`` or ``(args, principal)`` and may be async; the
    principal is the one whose message the turn answers, the same after a resume.

    Args:
        when: ``True`` when a person must approve this call, ``False`` when it runs
            like any other tool. Omitted, every call needs approval.
        audience: the scope that may approve, or a rule that returns it per call.
            ``None``: the session's owner.
        description: the question the approver reads, or a rule that words it from
            the call (``lambda args: f"Pay {args['amount']}"``). Omitted, it is
            ``Approve send_payment?`` with the arguments beside it.
        escalate: `escalation` steps that re-address the pause while nobody answers.
        approvers: distinct principals of the audience who must approve before the
            call runs (four eyes: ``2``); one reject rejects it.
        allow_requester: whether the principal whose message started the turn may
            approve its own request. By default only when one approval is enough.
    """
    return ApprovalRule(
        when,
        audience=audience,
        description=description,
        escalate=escalate,
        approvers=approvers,
        allow_requester=allow_requester,
    )

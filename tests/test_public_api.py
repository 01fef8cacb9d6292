"""The names others build on: the public API, the seed import paths, provider strings.

Changing anything pinned here is a breaking change for users; update this file
only on purpose.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import sys

import pytest

import symfonic
from symfonic import ConfigurationError, Limits, SymfonicAgent
from symfonic.testing import ScriptedChatModel, reply

PUBLIC = {
    "BudgetRefused",
    "ConfigurationError",
    "InvalidAnswer",
    "Limits",
    "OwnRequest",
    "PauseAbandoned",
    "PauseAlreadyAnswered",
    "PauseAlreadyClaimed",
    "PauseExpired",
    "StaleQuestion",
    "PauseForbidden",
    "PauseInfo",
    "PauseNotFound",
    "Principal",
    "Quota",
    "RequestError",
    "RevisionConflict",
    "SessionBusy",
    "SessionNotFound",
    "SessionPaused",
    "SymfonicAgent",
    "SymfonicError",
    "TurnResult",
    "Webhook",
    "WebhookSettings",
    "escalation",
    "interaction",
    "needs_approval",
}


def test_the_package_exports_exactly_its_public_names() -> None:
    assert set(symfonic.__all__) == PUBLIC
    assert len(symfonic.__all__) == len(PUBLIC)
    for name in PUBLIC:
        assert getattr(symfonic, name) is not None


def test_the_testing_module_exports_the_scripted_model() -> None:
    from symfonic.testing import ScriptedChatModel as Scripted
    from symfonic.testing import call, calls

    assert {"ScriptedChatModel", "call", "calls", "reply"} <= set(
        importlib.import_module("symfonic.testing").__all__
    )
    assert callable(call) and callable(calls) and Scripted is ScriptedChatModel


@pytest.mark.parametrize(
    ("module", "names"),
    [
        (
            "symfonic.agent.cutover.rehydration",
            ["rehydrate", "NOT_DISPATCHED", "InteractionConfigurationError"],
        ),
        ("symfonic.agent.cutover.kernel_resume", ["kernel_resume"]),
        ("symfonic.platform.transport_conversation", ["answer_of_result", "UnusableFinal"]),
        ("symfonic.platform.resume_budget", ["admit_resume_budget"]),
        ("symfonic.capabilities.human.turnstate", ["TurnCheckpointStore", "ResumeOutcome"]),
        ("symfonic.core.contracts.types", ["ResponseCompleteEvent", "TurnPausedEvent"]),
        ("symfonic.agent.fastapi.shared_resume_turn", ["ResumedTurn"]),
    ],
)
def test_the_seed_import_paths(module: str, names: list[str]) -> None:
    loaded = importlib.import_module(module)
    for name in names:
        assert hasattr(loaded, name), f"{module}.{name}"


def test_seed_signatures() -> None:
    from symfonic.agent.cutover.rehydration import rehydrate
    from symfonic.agent.fastapi.shared_resume_turn import ResumedTurn
    from symfonic.platform.resume_budget import admit_resume_budget

    assert list(inspect.signature(rehydrate).parameters) == ["outcome"]
    assert list(inspect.signature(ResumedTurn).parameters) == [
        "guarded", "principal", "session_id", "scope", "claim_id",
    ]
    assert list(inspect.signature(ResumedTurn.admission).parameters) == ["self", "budgeted"]
    assert (
        inspect.signature(ResumedTurn.admission).parameters["budgeted"].kind
        is inspect.Parameter.KEYWORD_ONLY
    )
    assert inspect.iscoroutinefunction(ResumedTurn.settle)
    assert inspect.iscoroutinefunction(ResumedTurn.release)
    assert list(inspect.signature(admit_resume_budget).parameters) == ["agent", "issuer_scope"]


def test_the_unusable_final_is_one_type_everywhere() -> None:
    from symfonic.core.contracts.errors import UnusableFinal
    from symfonic.platform import transport_conversation

    assert transport_conversation.UnusableFinal is UnusableFinal


def test_turn_result_and_pause_info_fields() -> None:
    fields = {f.name for f in dataclasses.fields(symfonic.TurnResult)}
    assert {"status", "session_id", "revision", "answer", "pause", "error"} <= fields
    pause_fields = {f.name for f in dataclasses.fields(symfonic.PauseInfo)}
    assert {
        "token", "pause_id", "kind", "query", "response_schema", "tool_call_id", "expires_at",
    } <= pause_fields
    from symfonic.core.contracts.types import TurnError

    assert {f.name for f in dataclasses.fields(TurnError)} == {"code", "message"}


def test_actionable_failures_are_distinct_types() -> None:
    kinds = [
        symfonic.PauseExpired,
        symfonic.PauseAbandoned,
        symfonic.PauseAlreadyClaimed,
        symfonic.PauseForbidden,
        symfonic.InvalidAnswer,
        symfonic.PauseNotFound,
        symfonic.BudgetRefused,
        symfonic.SessionNotFound,
        symfonic.SessionBusy,
        symfonic.SessionPaused,
        symfonic.RevisionConflict,
    ]
    for kind in kinds:
        assert issubclass(kind, symfonic.RequestError)
        others = [k for k in kinds if k is not kind]
        assert not any(issubclass(kind, other) for other in others), kind
    assert len({k.code for k in kinds}) == len(kinds)
    assert {k.status for k in kinds} == {403, 404, 409, 410, 422, 429}
    # Answered with another answer is a kind of "someone else got there": caught as
    # either, told apart by its code.
    assert issubclass(symfonic.PauseAlreadyAnswered, symfonic.PauseAlreadyClaimed)
    assert symfonic.PauseAlreadyAnswered.code not in {k.code for k in kinds}


def test_the_agent_takes_the_documented_arguments(sqlite_url: str) -> None:
    def send_payment(amount: int) -> str:
        """Pay."""
        return "ok"

    def lookup(name: str) -> str:
        """Look up."""
        return name

    agent = SymfonicAgent(
        name="assistant",
        model=ScriptedChatModel(respond=lambda messages: reply("hi")),
        instructions="Be careful.",
        tools=[send_payment, lookup],
        approval={"send_payment"},
        store=sqlite_url,
        limits=Limits(max_tool_rounds=8),
        pause_ttl=86400,
    )
    assert agent.pause_ttl == 86400 and agent.limits.max_tool_rounds == 8
    run = inspect.signature(agent.run).parameters
    assert list(run)[:3] == ["message", "session_id", "principal"]
    assert run["session_id"].default is None and run["principal"].default == "local"
    assert list(inspect.signature(agent.stream).parameters)[:3] == [
        "message", "session_id", "principal",
    ]
    resume = inspect.signature(agent.resume).parameters
    assert list(resume)[:3] == ["token", "answer", "principal"]
    assert resume["status"].default == "resolved"


def test_pauses_last_a_day_unless_configured() -> None:
    agent = SymfonicAgent(model=ScriptedChatModel.from_script(["x"]))
    assert agent.pause_ttl == 24 * 3600
    with pytest.raises(ConfigurationError):
        SymfonicAgent(model=ScriptedChatModel.from_script(["x"]), pause_ttl=0)


def test_approval_must_name_a_tool_the_agent_has() -> None:
    with pytest.raises(ConfigurationError, match="approval"):
        SymfonicAgent(model=ScriptedChatModel.from_script(["x"]), approval={"nothing"})


@pytest.mark.parametrize(
    ("model", "module", "extra"),
    [
        ("openai:gpt-4.1-mini", "langchain_openai", "openai"),
        ("anthropic:claude-sonnet-4-5", "langchain_anthropic", "anthropic"),
        ("ollama:llama3.1", "langchain_ollama", "ollama"),
    ],
)
def test_a_provider_without_its_extra_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, model: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ConfigurationError) as raised:
        SymfonicAgent(model=model)
    assert f"pip install -e '.[{extra}]'" in str(raised.value)


def test_openai_without_langchain_openai_installed() -> None:
    if importlib.util.find_spec("langchain_openai") is not None:
        pytest.skip("langchain-openai is installed here")
    with pytest.raises(ConfigurationError, match=r"pip install -e '\.\[openai\]'"):
        SymfonicAgent(model="openai:gpt-4.1-mini")


@pytest.mark.parametrize("model", ["gpt-4.1-mini", "openai:", "nosuch:model"])
def test_a_malformed_model_string_is_a_configuration_error(model: str) -> None:
    with pytest.raises(ConfigurationError):
        SymfonicAgent(model=model)


def test_a_provider_string_resolves_through_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    made: list[dict[str, object]] = []

    class ChatOpenAI(FakeListChatModel):
        def __init__(self, **options: object) -> None:
            made.append(options)
            super().__init__(responses=["hi"])

    fake = types.ModuleType("langchain_openai")
    fake.ChatOpenAI = ChatOpenAI  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "langchain_openai", fake)
    agent = SymfonicAgent(model="openai:gpt-4.1-mini")
    assert isinstance(agent.model, ChatOpenAI)
    assert made == [{"model": "gpt-4.1-mini"}]

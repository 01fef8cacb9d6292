"""The LangGraph side: ``create_react_agent`` + a tool that calls ``interrupt()``.

LangGraph's documented human-in-the-loop pattern on its official savers,
``AsyncSqliteSaver`` and ``AsyncPostgresSaver`` (on a psycopg pool sized to the
concurrency). A cycle is ``ainvoke`` with the user message, which interrupts,
then ``ainvoke(Command(resume=…))``. History is preloaded with
``aupdate_state``. The one knob changed from LangGraph's defaults: ``PRAGMA
synchronous`` on the SQLite saver's connection is the spec's (FULL by default,
as symfonic's own), so the SQLite figures compare equal durability.
"""

from __future__ import annotations

import itertools
import warnings
from contextlib import AsyncExitStack
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command, interrupt
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from bench.history import TOOL_RESULT, USER_MESSAGE
from bench.workloads.base import Workload, WorkloadError, history_messages
from bench.workloads.scripted_model import ScriptedToolModel

with warnings.catch_warnings():
    # create_react_agent is deprecated in favour of langchain.agents.create_agent
    # (a separate package); it is still the LangGraph-native entry point the issue names.
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


@tool
async def send_payment(amount: int, currency: str, invoice: str) -> str:
    """Send a payment to a supplier; a person must approve it first."""
    answer = interrupt({"action": "send_payment", "amount": amount, "invoice": invoice})
    if not isinstance(answer, dict) or answer.get("decision") != "approve":
        return "the person rejected the payment"
    return TOOL_RESULT


class LangGraphWorkload(Workload):
    system = "langgraph"

    _stack: AsyncExitStack | None = None
    _graph: Any = None
    _saver: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._thread_numbers = itertools.count()

    async def open(self) -> None:
        self._stack = AsyncExitStack()
        if self.spec.store == "sqlite":
            self._saver = await self._open_sqlite(self._stack)
        else:
            self._saver = await self._open_postgres(self._stack)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._graph = create_react_agent(
                ScriptedToolModel(), [send_payment], checkpointer=self._saver
            )

    async def _open_sqlite(self, stack: AsyncExitStack) -> Any:
        saver = await stack.enter_async_context(
            AsyncSqliteSaver.from_conn_string(self.spec.location)
        )
        await saver.setup()  # idempotent; sets WAL and creates the tables
        await saver.conn.execute(f"PRAGMA synchronous={self.spec.sqlite_synchronous}")
        return saver

    async def _open_postgres(self, stack: AsyncExitStack) -> Any:
        size = max(1, self.spec.concurrency)
        pool = AsyncConnectionPool(
            self.spec.location,
            min_size=size,
            max_size=size,
            open=False,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        )
        await pool.open(wait=True)
        stack.push_async_callback(pool.close)
        return AsyncPostgresSaver(pool)  # type: ignore[arg-type]

    async def setup(self) -> None:
        if self.spec.store == "postgresql":
            await self._saver.setup()  # migrations; the SQLite saver ran its setup on open

    async def add_sessions(self, count: int) -> list[str]:
        history = self.spec.history
        keys = [f"thread-{next(self._thread_numbers):05d}" for _ in range(count)]
        for key in keys:
            if history:
                # Built per thread so no two threads share message objects (or memory).
                await self._graph.aupdate_state(
                    self._config(key), {"messages": history_messages(history)}, as_node="agent"
                )
        return keys

    @staticmethod
    def _config(key: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": key}}

    async def pause(self, session: str) -> Any:
        result = await self._graph.ainvoke(
            {"messages": [HumanMessage(USER_MESSAGE)]}, self._config(session)
        )
        if not result.get("__interrupt__"):
            raise WorkloadError(f"langgraph turn on {session} did not interrupt")
        return None

    async def resume(self, session: str, handle: Any) -> None:
        result = await self._graph.ainvoke(
            Command(resume={"decision": "approve"}), self._config(session)
        )
        last = result["messages"][-1]
        if result.get("__interrupt__") or not isinstance(last, AIMessage) or last.tool_calls:
            raise WorkloadError(f"langgraph resume on {session} did not complete")

    async def close(self) -> None:
        if self._stack is not None:
            await self._stack.aclose()
        self._stack = self._graph = self._saver = None

    def settings(self) -> dict[str, Any]:
        if self.spec.store == "sqlite":
            return {"sqlite_synchronous": self.spec.sqlite_synchronous}
        return {"pool_size": max(1, self.spec.concurrency)}

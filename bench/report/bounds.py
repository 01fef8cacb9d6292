"""The report's "What bounds symfonic here": each missed target, by how much, and why.

Margins and per-cycle budgets come from this run's results.json. What a run cannot
see -- where inside the process a cycle's time goes -- comes from a profile
(cProfile / pyinstrument on the development machine; the commands are in
``bench/README.md``), labelled as such so a reader can tell measured from profiled.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.report.ceiling import render_ceiling
from bench.report.figures import STORE_TITLES, Results, markdown_table
from bench.report.http import server_cores
from bench.report.marginal import render_marginal
from bench.report.targets import FLOOR_SHARE, SPEEDUP_AT_ZERO, check_targets

PROFILE_NOTE = (
    "The bullets marked *profile* come from py-spy and cProfile on the development machine "
    "(history 0, concurrency 1 unless they say otherwise), not from this run; "
    "`bench/README.md` says how to profile again."
)

PROFILES = {
    "sqlite": (
        "*profile*: the two model calls through langchain-core's `BaseChatModel.ainvoke` "
        "(callback manager, run ids, an `inspect.signature` of the model on every call, two "
        "`asyncio.gather`s) are ≈31% of a cycle, ≈0.3–0.4 ms each: LangGraph pays them too.",
        "*profile*: the store is ≈40%: four write transactions (start, pause, claim, publish), "
        "nine statements: starting a turn and claiming a pause each read the history with a "
        "second statement of their transaction, a pause's checkpoint is in its row, and the "
        "owner's approval is claimed without the pause being looked up. (The history was a "
        "subquery of their `RETURNING`, but SQLite keeps `RETURNING` rows aside until the "
        "update is done, which copied the history once more: in a bench child at 1,000 "
        "messages a read took 1.33 ms that way and 0.83 ms as a second statement.) "
        "SQLite's own code is ≈7% of a cycle's ≈5.5 million instructions (callgrind; the "
        "interpreter runs ≈80%); its commits cost system calls: of ≈96 a cycle, ≈38 are "
        "`pwrite`s (two for each WAL page) and ≈27 `fcntl` locks (strace). The rest of the "
        "store is the adapter's Python (binding, rows to records, JSON).",
        "*profile*: the rest, ≈27%, is spread thinly over symfonic's own Python (the kernel, "
        "typed events, tokens, the generators that carry events), no item above ≈3%. A plain "
        "approval is accepted without walking the pause's `oneOf` schema (jsonschema took "
        "≈50 µs), and no generator is left for the event loop's finalizer (three a cycle "
        "were, each a wake-up through the loop's self-pipe).",
        "*profile*: LangGraph's own cycle crosses threads ≈30 times (`aiosqlite` runs every "
        "statement on a thread and wakes the loop through its self-pipe), so its speed depends "
        "on how the machine schedules those hand-offs: at history 0, concurrency 1 it measured "
        "45–60 cycles/s on a quiet machine but 68–91 while another process kept one of the two "
        "cores busy (the threads then hand off on one core), when symfonic, single-threaded, "
        "slowed down. A run flagged busy below understates symfonic's ratios for that reason too.",
    ),
    "postgresql": (
        "*profile*: the store is ≈60% of a cycle: four round trips (start, record the pause, "
        "claim, publish), each one statement; three commits wait for the disk (record, claim, "
        "publish), a run marker's does not. The owner's plain approval is claimed without the "
        "pause being looked up first (the claim's condition does the lookup's checks), which "
        "saved a round trip of ≈0.4–0.5 ms (≈0.2 ms of it client CPU). The model calls are "
        "≈21%.",
        "*profile*: at concurrency 1 a cycle is the floor's three durable commits *plus* "
        "symfonic's CPU, one after the other: ≈2.3–3.5 ms of CPU (≈0.1–0.15 ms per round trip "
        "in asyncpg and the loop's socket handling, on top of what SQLite's cycle spends "
        "outside its store). At concurrency 16 the one event loop is CPU-bound, which is what "
        "separates it from the floor.",
    ),
}

HISTORY_NOTE = (
    "*profile*, history 100–10,000: a cycle rebuilds the history twice as langchain-core "
    "messages, once per model call (the turn that pauses and the turn that resumes may run on "
    "different workers, so each reads the store). Per message of history and rebuild, in "
    "isolation at 1,000 messages with start-up frozen: SQLite's aggregate of the stored "
    "bodies into one text ≈0.25 µs, ≈0.75 µs inside a bench child (the brackets that make it "
    "a JSON array are added in Python: SQLite's `'[' || … || ']'` had tripled it), decoding "
    "it ≈0.37 µs, assembling "
    "the message ≈1.1 µs with the collections and frees it causes (symfonic's own type checks "
    "and one copy of a prototype's state, where pydantic's validation takes ≈2.4 µs), "
    "langchain-core's passes over the list in `ainvoke` ≈0.2 µs (the kernel hands the model a "
    "`ChatPromptValue`, which spares it a check and a copy of every message; given a list it "
    "was ≈0.5–0.9 µs): ≈2 µs a rebuild, ≈4 µs a cycle, against LangGraph's ≈50–120 µs, "
    "which serializes the whole list at every step (the machine's speed moves both figures). "
    "At 10,000 messages, which no longer fit in the caches, langchain-core's passes alone take "
    "≈0.7 µs a message a call; the floor + model calls pays them too. "
    "By instructions (callgrind, concurrency 1) a SQLite cycle is ≈5.5 million at history 0 "
    "and ≈60 million at 1,000 (≈68 million before those two changes). What grows faster than "
    "the history is the garbage collector: each full collection walks the messages of every "
    "turn in flight (langchain-core's message is three tracked objects: the instance, its "
    "`__dict__` and its fields-set; an `AIMessage` two more, its lists of tool calls), at "
    "≈0.3–0.6 µs an object once they no longer fit in the caches. Python starts a full "
    "collection once a quarter as many objects as survived the last one have reached the "
    "oldest generation since, so each object that gets there costs about five visits, "
    "whatever the heap's size; at concurrency 1 most of a rebuild dies younger, but sixteen "
    "turns in flight keep one another's histories alive through every collection. They are "
    "alive together because a model call yields to the event loop with its prompt in hand: "
    "langchain-core's `agenerate` runs the call, and then its `on_llm_end` callback, each as "
    "a task of its own (`asyncio.gather`, `shielded`), callbacks or none, and the other "
    "turns run meanwhile. Letting go of the history before the store's writes rather than "
    "at the end of the turn changed nothing (PostgreSQL, 1,000 messages, concurrency 16, "
    "alternating children: 118, 118, 119 cycles/s before, 116, 117, 114 after; full "
    "collections ≈1.05 s in both). At 1,000 "
    "messages and concurrency 16 (≈16,000 messages, ≈64,000 tracked objects alive), full "
    "collections took 2.2 s of a 7.6 s child (52 of them, ≈42 ms each), against 0.17 s at "
    "concurrency 1. That is where the ratio falls at concurrency 16, while the bytes "
    "symfonic writes per cycle stay flat and LangGraph's grow with the history."
)

# The profiled cycle (history 0, concurrency 1), ms, at the machine's fast and slow moments
# (its speed moves by 2× within an hour): a run far outside profiles another build.
PROFILED_MS = {"sqlite": (1.0, 2.2), "postgresql": (2.3, 4.9)}
STALE_FACTOR = 1.5
# Stores whose commits are a server's work, which the benchmark process waits for.
SERVER_STORES = frozenset({"postgresql"})

REMEDIES = (
    "History: the widening table above gives, step by step, the most an added message may "
    "cost symfonic: LangGraph's cost per message divided by the ratio at the lower history. "
    "The two targets pull against each other there: the higher the ratio at history 0, the "
    "less each message of history may cost for the ratio to keep rising. Stored bodies are "
    "already assembled without pydantic's validation (`tests/core/test_messages.py` pins them "
    "equal to what langchain-core builds), in one function per message. What is left of a rebuild "
    "is mostly the objects themselves: assembling them, collecting and freeing them are "
    "over half of it, the database's read, the JSON decode and langchain-core's passes the "
    "rest. Keeping a message's attributes in the instance (no `__dict__` object, one tracked "
    "object fewer) measured, in isolation, ≈5–10% faster with sixteen turns in flight and "
    "≈15% slower with one, so it was not done. A worker-local cache of committed history, "
    "keyed by session and revision, would skip one of the two rebuilds on the worker that "
    "paused; a resume on another worker, the case the store exists for, would gain nothing, "
    "and every open conversation would stay in memory. Not done.",
    "The garbage collector: a deployment that holds long histories can make full collections "
    "rarer (`gc.set_threshold`); that is a process-wide choice symfonic leaves to the "
    "deployment, and the benchmark leaves every system at Python's thresholds (each child only "
    "freezes what its start-up left alive, for every system alike).",
    "SQLite: fewer B-tree pages per commit with `WITHOUT ROWID` tables looked like ≈3% of a "
    "cycle in isolation, but an A/B of whole cycles on a real store showed no gain beyond "
    "the noise (−7% to +7% across three pairs; a pause row and a checkpoint are wide rows, "
    "which such tables keep in their index pages): not done.",
    "The LangGraph target on SQLite asks for a cycle at most a tenth of LangGraph's, whose "
    "own speed moves by up to half from one moment to the next (above). Of symfonic's cycle, "
    "the model calls (≈31%) are paid by both systems and the store's SQLite half (≈20%) is "
    "commits any runtime makes: what is left to cut is the store's Python and the ≈27% "
    "spread over symfonic's own code, where no single item is above ≈3% of the cycle.",
    "The floor target: the table of shares above measures what it leaves reachable. Where "
    "the floor + model calls (the floor's commits and the two model calls, nothing else) is "
    "itself below 50% of the floor, no runtime that calls a langchain-core model meets it, "
    "whatever it does: on SQLite the two calls take about as long as the floor's commits, "
    "and with a long history langchain-core's own passes over the conversation in each call "
    "outweigh any store's commits. What is left to symfonic there is its own share, the "
    "table's last column: mostly the history's read and rebuild, which a resume on another "
    "worker cannot skip.",
)


@dataclass(frozen=True)
class Budget:
    """History 0, one store and concurrency: ms per cycle of throughput (1000 ÷ cycles/s)."""

    symfonic: float | None
    cpu: float | None  # symfonic's CPU per cycle in its own process, all threads
    langgraph: float | None
    floor: float | None
    goal: float | None  # the speed-up over LangGraph the targets ask for

    @property
    def for_langgraph(self) -> float | None:
        """The slowest symfonic cycle that meets the LangGraph target."""
        return None if self.langgraph is None or not self.goal else self.langgraph / self.goal

    @property
    def for_floor(self) -> float | None:
        """The slowest symfonic cycle that is still 50% of the floor's speed."""
        return None if self.floor is None else self.floor / FLOOR_SHARE

    @property
    def needed(self) -> float | None:
        known = [b for b in (self.for_langgraph, self.for_floor) if b is not None]
        return min(known) if known else None


def budget(results: Results, store: str, concurrency: int) -> Budget:
    def ms(system: str) -> float | None:
        rate = results.value(system, store, 0, concurrency, "cycles_per_second")
        return 1000 / rate if rate else None

    cpu = results.value("symfonic", store, 0, concurrency, "cpu_ms_per_cycle")
    return Budget(ms("symfonic"), cpu, ms("langgraph"), ms("floor"), SPEEDUP_AT_ZERO.get(store))


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.2f}"


def _budget_table(results: Results) -> list[str]:
    header = [
        "store",
        "conc.",
        "symfonic",
        "its CPU",
        "LangGraph",
        "floor",
        "needed for the LangGraph target",
        "needed for 50% of the floor",
        "symfonic over the tighter",
    ]
    rows = []
    for store in results.axis("store"):
        if 0 not in results.axis("history", store):
            continue
        for c in results.axis("concurrency", store):
            b = budget(results, store, c)
            over = "—"
            if b.symfonic is not None and b.needed is not None:
                over = "within" if b.symfonic <= b.needed else f"{b.symfonic / b.needed:.2f}×"
            cells = [STORE_TITLES.get(store, store), str(c), _ms(b.symfonic), _ms(b.cpu)]
            cells += [_ms(b.langgraph), _ms(b.floor), _ms(b.for_langgraph), _ms(b.for_floor)]
            rows.append([*cells, over])
    return markdown_table(header, rows)


def _measured(results: Results, store: str) -> str:
    """What this run itself says about the bound, at concurrency 1."""
    b = budget(results, store, 1)
    if b.symfonic is None:
        return "not measured at history 0, concurrency 1 in this run."
    text = f"this run, history 0, concurrency 1: {b.symfonic:.2f} ms per cycle"
    if b.cpu is not None:
        text += f", {b.cpu:.2f} ms of it CPU in the benchmark process ({b.cpu / b.symfonic:.0%})"
    if b.floor is not None:
        text += f"; the floor's commits take {b.floor:.2f} ms"
    profiled = PROFILED_MS.get(store)
    if profiled and not profiled[0] / STALE_FACTOR <= b.symfonic <= profiled[1] * STALE_FACTOR:
        text += (
            f". **The profile below is stale for this build**: it had ≈{profiled[0]:.1f}–"
            f"{profiled[1]:.1f} ms per cycle, this run {b.symfonic:.2f}; profile again"
        )
    if b.for_langgraph is not None and b.floor is not None and b.for_langgraph < b.floor:
        text += (
            f". The LangGraph target asks for {b.for_langgraph:.2f} ms, less than the floor "
            "itself: no system making these commits reaches it on this machine"
        )
    elif store in SERVER_STORES and b.for_langgraph is not None and b.floor is not None:
        text += (
            f". One cycle waits for its commits and computes in turn: the LangGraph target "
            f"({b.for_langgraph:.2f} ms) leaves {b.for_langgraph - b.floor:.2f} ms beside the "
            f"floor's {b.floor:.2f} ms of commits (their own client CPU included)"
        )
        if b.cpu is not None:
            text += f", for symfonic's {b.cpu:.2f} ms of CPU"
    return text + "."


def _http(results: Results, store: str) -> str | None:
    rows = [r for r in (results.http or {}).get("results", []) if r["store"] == store]
    if not rows:
        return None
    top = max(rows, key=lambda r: int(r["clients"]))
    cores, rate = server_cores(top), top.get("resumes_per_s")
    if cores is None or not rate or top.get("p50_ms") is None:
        return None
    return (
        f"HTTP, {top['clients']} clients: the one uvicorn process kept {cores:.2f} cores busy "
        f"({top['server_cpu_ms_per_resume']:.2f} ms CPU per resume) for {rate:,.0f} resumes/s; "
        f"latency is queueing behind it (clients ÷ rate = {1000 * top['clients'] / rate:,.0f} "
        f"ms, p50 {top['p50_ms']:,.0f} ms)."
    )


def render_bounds(results: Results) -> list[str]:
    lines = ["## What bounds symfonic here", ""]
    missed = [c for c in check_targets(results) if c.met is False]
    lines += [f"- {c.verdict}: {c.target}: {c.measured}." for c in missed] or [
        "No target is missed in this run."
    ]
    goals = "/".join(f"{v:.0f}" for v in SPEEDUP_AT_ZERO.values())
    lines += [
        "",
        "Milliseconds per cycle at history 0 (1000 ÷ cycles/s, all slots together), and the "
        f"slowest symfonic cycle that would meet each target (LangGraph's ÷ {goals}, the "
        f"floor's ÷ {FLOOR_SHARE}):",
        "",
        *_budget_table(results),
        *render_ceiling(results, FLOOR_SHARE),
        PROFILE_NOTE,
        "",
    ]
    for store in results.axis("store"):
        lines.append(f"**{STORE_TITLES.get(store, store)}**, {_measured(results, store)}")
        lines.append("")
        bullets = [*PROFILES.get(store, ()), _http(results, store)]
        lines += [f"- {bullet}" for bullet in bullets if bullet]
        lines.append("")
    lines += [f"**History.** {HISTORY_NOTE}", ""]
    lines += render_marginal(results)
    lines += ["What would close the gap:", ""]
    lines += [f"{i}. {remedy}" for i, remedy in enumerate(REMEDIES, start=1)]
    return [*lines, ""]

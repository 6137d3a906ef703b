"""Agent-level benchmark (issue 24): whole turns on clawlog against LangGraph, the OpenAI
Agents SDK and AutoGen AgentChat, each with its durable state on, in one run.

    python3 scripts/bench_agents.py [--quick]

The turn is the same everywhere (``scripts/bench_agents_peers.py``): a deterministic fake
model asks for one call of a pure-Python tool three times in a row, then answers: four model
steps, three tool calls, no sleep, so the time measured is the framework's. Durable state:
clawlog's SQLite log at ``synchronous=FULL`` (its default); LangGraph's ``AsyncSqliteSaver``
with ``durability="sync"`` (FULL); the OpenAI Agents SDK's ``SQLiteSession`` (its defaults:
WAL, SQLite's default FULL); AutoGen's ``save_state()`` written to a file and fsynced after
each turn (it has no log).

Figures, the frameworks alternating in blocks, the order rotating each round:

* turns/s with 1 session and with 100 concurrent sessions (median of the rounds);
* per-turn time with 1 session, p50 and p99: with a model and a tool that cost nothing, the
  whole of it is the framework's overhead (the log's fsyncs included);
* records written per turn (events, checkpoints and writes, messages, state files) and their
  bytes (the stored blobs, without SQLite's own overhead);
* ``commits_per_turn``: the fsync/fdatasync calls per turn, counted by ``strace -f -c`` on a
  child process running turns, minus a child running none (SQLite in WAL mode at FULL
  fsyncs the WAL once per commit; a checkpoint of the WAL adds its own);
* RSS per 1,000 idle sessions, each framework in its own child process: clawlog's sessions
  passivated (an ``idle_timeout_s`` of 0.2 s; the child waits for their ``actor.stopped``);
  LangGraph's are checkpoints only; the SDK keeps a ``SQLiteSession`` object per session;
  AutoGen keeps its agent objects (it has nothing else);
* clawlog alone: the time to open a 1,000,000-event log (100,000 with ``--quick``) and
  answer a message in a session of 10,000 events (2,000), in a fresh process, from
  ``System.open`` to the answer; and the time to re-run that session
  (``clawlog.actors.replay.rerun``, what ``clawlog replay --rerun`` runs).

``--child cpu FRAMEWORK DIR TURNS`` (not part of the run) prints the turns/s and the process
CPU per turn of 100 sessions running TURNS turns each: the ceiling of the 100-session
figure on one GIL.

Ends with ``RATIOS turns100_vs_langgraph turns100_vs_openai_agents turns100_vs_autogen
turn_p50_overhead_us idle_kb_per_session reopen_answer_ms rerun_10k_ms commits_per_turn``.
Goals (issue 24): turns100 ratios >= 2 against the fastest peer, p50 <= 1500 us, <= 20 KB per
idle session, reopen-and-answer <= 500 ms, re-run <= 100 ms, commits per turn <= one per
model step plus one per side-effecting tool call.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_agents_peers import (
    ANSWER,
    TOOL_CALLS_PER_TURN,
    Peer,
    last_index,
    lookup_result,
    make_peer,
    tool_step,
)

from clawlog import AgentConfig, System
from clawlog.actors.providers import ModelReply, ModelRequest, call, reply
from clawlog.tools import FunctionTool, ToolContext

FRAMEWORKS = ("clawlog", "langgraph", "openai_agents", "autogen")
PEERS = FRAMEWORKS[1:]
SCRIPT = Path(__file__).resolve()


async def lookup(ctx: ToolContext, args: dict[str, Any]) -> str:
    return lookup_result(str(args["key"]))


LOOKUP = FunctionTool(
    "lookup",
    lookup,
    description="Look a key up.",
    parameters={"type": "object", "properties": {"key": {"type": "string"}}},
    # It only reads (what a lookup is), so its step shares one commit (README, "How it
    # works"); declared as a real lookup tool would be.
    side_effects="none",
)


def turn_script(request: ModelRequest) -> ModelReply:
    """Three tool calls, then the answer, counted from the model's own tool-asking replies
    after the turn's user message (so one model serves every session and turn). A request
    offering no tools is the summarizer's (a long session compacts): it gets a summary."""
    if not request.tools:
        return reply("Summary: the user asked questions; each took three lookups.")
    last_user = last_index(request.messages, lambda m: m.role == "user")
    done = sum(1 for m in request.messages[last_user:] if m.role == "assistant")
    # Keys differ from turn to turn: the same call in every turn would be a loop to
    # clawlog's loop detector, and its warnings events no peer writes.
    key = f"{request.messages[last_user].content}/{done}"
    return call("lookup", key=key) if tool_step(done) else reply(ANSWER)


class FakeToolModel:
    """The fake model through clawlog's extension point (the ``Model`` protocol).
    ``ScriptedModel`` would do, but it keeps every request for tests' assertions: memory
    that is the test double's, not the framework's."""

    name = "bench-fake"
    provider = "bench"

    async def complete(self, request: ModelRequest) -> ModelReply:
        return turn_script(request)


class Clawlog:
    """clawlog through its front door: ``System.send``, the log in SQLite."""

    name = "clawlog"

    def __init__(self, path: Path, *, idle_timeout_s: float = 300.0, **store: Any) -> None:
        self.path = path
        self._idle = idle_timeout_s
        self._store = store
        self._system: System | None = None
        self._turns = 0

    async def open(self) -> None:
        self._system = await System.open(self.path, **self._store)
        config = AgentConfig(key="bench", idle_timeout_s=self._idle)
        await self._system.register_agent(config, FakeToolModel(), tools=[LOOKUP])

    async def turn(self, session: str, text: str) -> str:
        assert self._system is not None
        self._turns += 1
        # A user per turn: the default tool rate limit (60 calls a minute per user and
        # tool, seed 004) would otherwise throttle a benchmark's single session.
        return await self._system.send("bench", session, text, user=f"u{self._turns}")

    def stored(self) -> tuple[int, int]:
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            events, size = conn.execute(
                "SELECT count(*), coalesce(sum(length(payload)), 0) FROM events"
            ).fetchone()
            snapshots = conn.execute(
                "SELECT coalesce(sum(length(payload)), 0) FROM snapshots"
            ).fetchone()[0]
        finally:
            conn.close()
        return events, size + snapshots

    async def close(self) -> None:
        if self._system is not None:
            await self._system.close()


Subject = Clawlog | Peer


def subject(name: str, directory: Path, turns_per_session: int) -> Subject:
    directory.mkdir(parents=True, exist_ok=True)
    if name == "clawlog":
        return Clawlog(directory / "clawlog.db")
    return make_peer(name, directory, turns_per_session)


def quiet_peers() -> None:
    """AutoGen's replay client warns on every token count; nothing else here logs."""
    logging.getLogger("autogen_core.events").setLevel(logging.ERROR)
    logging.getLogger("autogen_core").setLevel(logging.ERROR)


# --- turns: 1 session and 100 sessions, alternating --------------------------------------


@dataclass
class Measured:
    latencies: list[float] = field(default_factory=list)
    rates_one: list[float] = field(default_factory=list)
    rates_many: list[float] = field(default_factory=list)
    turns: int = 0
    records: int = 0
    bytes: int = 0

    def p(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def one_session(s: Subject, key: str, turns: int, into: Measured) -> None:
    started = time.perf_counter()
    for i in range(turns):
        t = time.perf_counter()
        answer = await s.turn(key, f"question {i}")
        into.latencies.append(time.perf_counter() - t)
        assert answer == ANSWER, (s.name, answer)
    into.rates_one.append(turns / (time.perf_counter() - started))
    into.turns += turns


async def many_sessions(s: Subject, prefix: str, sessions: int, turns: int, into: Measured) -> None:
    async def session(k: int) -> None:
        for i in range(turns):
            answer = await s.turn(f"{prefix}-{k}", f"question {i}")
            assert answer == ANSWER, (s.name, answer)

    started = time.perf_counter()
    await asyncio.gather(*(session(k) for k in range(sessions)))
    into.rates_many.append(sessions * turns / (time.perf_counter() - started))
    into.turns += sessions * turns


async def alternate(
    directory: Path, rounds: int, one_turns: int, many_turns: int
) -> dict[str, Measured]:
    quiet_peers()
    measured = {name: Measured() for name in FRAMEWORKS}
    subjects = {
        name: subject(name, directory / name, max(one_turns, many_turns) + 1) for name in FRAMEWORKS
    }
    for s in subjects.values():
        await s.open()
    try:
        warm = Measured()
        for s in subjects.values():  # imports, statement caches, first checkpoints
            await one_session(s, "warm", 3, warm)
        start = {name: s.stored() for name, s in subjects.items()}
        for round_ in range(rounds):
            shift = round_ % len(FRAMEWORKS)
            for name in FRAMEWORKS[shift:] + FRAMEWORKS[:shift]:
                await one_session(subjects[name], f"one-{round_}", one_turns, measured[name])
            for name in FRAMEWORKS[shift:] + FRAMEWORKS[:shift]:
                await many_sessions(subjects[name], f"r{round_}", 100, many_turns, measured[name])
        for name, s in subjects.items():
            records, size = s.stored()
            measured[name].records = records - start[name][0]
            measured[name].bytes = size - start[name][1]
    finally:
        for s in subjects.values():
            await s.close()
    return measured


# --- child processes: commits per turn, idle memory, reopen-and-answer -------------------


def child(args: list[str], *, prefix: Sequence[str] = ()) -> dict[str, Any]:
    """Run this script as a child (``--child ...``) and return its last JSON line."""
    done = subprocess.run(
        [*prefix, sys.executable, str(SCRIPT), "--child", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"child {args} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def fsyncs(name: str, directory: Path, turns: int) -> int:
    """fsync + fdatasync calls of a child that opens ``name`` and runs ``turns`` turns."""
    trace = directory / f"strace-{name}-{turns}.txt"
    work = directory / f"commits-{name}-{turns}"
    child(
        ["turns", name, str(work), str(turns)],
        prefix=("strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", str(trace)),
    )
    calls = 0
    for line in trace.read_text().splitlines():
        fields = line.split()
        if fields and fields[-1] in ("fsync", "fdatasync"):
            calls += int(fields[3])
    return calls


def commits_per_turn(name: str, directory: Path, turns: int) -> float:
    return (fsyncs(name, directory, turns) - fsyncs(name, directory, 0)) / turns


async def child_cpu(name: str, directory: Path, turns: int) -> dict[str, Any]:
    """Turns/s and process CPU per turn with 100 sessions, ``turns`` turns each (after one
    turn each to warm up): where the 100-session figure's ceiling is (BENCHMARKS.md)."""
    quiet_peers()
    s = subject(name, directory, turns + 1)
    await s.open()

    async def run(session: int, count: int) -> None:
        for i in range(count):
            assert await s.turn(f"cpu-{session}", f"question {i}") == ANSWER

    await asyncio.gather(*(run(k, 1) for k in range(100)))
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(run(k, turns) for k in range(100)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    await s.close()
    done = 100 * turns
    return {"turns_per_s": done / elapsed, "cpu_ms_per_turn": cpu / done * 1e3}


async def child_turns(name: str, directory: Path, turns: int) -> dict[str, Any]:
    quiet_peers()
    s = subject(name, directory, turns + 1)
    await s.open()
    for i in range(turns):
        assert await s.turn("commits", f"question {i}") == ANSWER
    await s.close()
    return {"turns": turns}


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status: this needs Linux")


async def child_idle(name: str, directory: Path, sessions: int) -> dict[str, Any]:
    """RSS growth per idle session after one turn in each of ``sessions`` sessions."""
    quiet_peers()
    directory.mkdir(parents=True, exist_ok=True)
    s: Subject
    if name == "clawlog":
        s = Clawlog(directory / "clawlog.db", idle_timeout_s=0.2)
    else:
        s = make_peer(name, directory, 2)
    await s.open()
    warm = 20
    for k in range(warm):
        await s.turn(f"warm-{k}", "hello")
    await settle(s, warm)
    before = rss_kb()
    for k in range(sessions):
        await s.turn(f"idle-{k}", "hello")
    await settle(s, warm + sessions)
    after = rss_kb()
    await s.close()
    return {"kb_per_session": (after - before) / sessions, "rss_kb": after}


async def settle(s: Subject, sessions: int) -> None:
    """clawlog: wait until ``sessions`` sessions have passivated (their ``actor.stopped``
    is in the log); then collect garbage, for every framework."""
    if isinstance(s, Clawlog):
        deadline = time.monotonic() + 120
        while stopped_sessions(s.path) < sessions:
            if time.monotonic() > deadline:
                raise SystemExit(f"only {stopped_sessions(s.path)} of {sessions} passivated")
            await asyncio.sleep(0.05)
    gc.collect()


def stopped_sessions(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT count(*) FROM events WHERE type = 'actor.stopped' AND stream LIKE '%session%'"
        ).fetchone()
        return int(row[0])
    finally:
        conn.close()


async def build_big_log(path: Path, session_events: int, total_events: int) -> dict[str, Any]:
    """A session of ``session_events`` events made by real turns (fsyncs off: building is
    not measured), then the mixed log appended around it up to ``total_events``."""
    from clawlog.projections.testing import write_mixed_log_file

    s = Clawlog(path, synchronous="OFF")
    await s.open()
    turns = 0
    while s.stored()[0] < session_events:
        for i in range(20):
            assert await s.turn("long", f"question {turns + i}") == ANSWER
        turns += 20
    await s.close()
    events = s.stored()[0]
    head = await write_mixed_log_file(path, total_events - events)
    return {"turns": turns, "session_events": events, "head": head}


async def child_reopen(path: Path) -> dict[str, Any]:
    """From ``System.open`` on the big log to the answer in its long session."""
    started = time.perf_counter()
    s = Clawlog(path)
    await s.open()
    opened = time.perf_counter()
    answer = await s.turn("long", "one more question")
    answered = time.perf_counter()
    await s.close()
    assert answer == ANSWER, answer
    return {"open_ms": (opened - started) * 1e3, "reopen_answer_ms": (answered - started) * 1e3}


async def rerun_session(path: Path) -> dict[str, Any]:
    from clawlog.actors.replay import rerun
    from clawlog.events import open_store

    store = await open_store(path)
    try:
        started = time.perf_counter()
        report = await rerun(store, "bench", "long", tools=[LOOKUP])
        elapsed = time.perf_counter() - started
    finally:
        await store.close()
    assert report.matched, report.divergence
    return {"rerun_ms": elapsed * 1e3, "turns": report.turns, "tool_calls": report.tool_calls}


def run_child(argv: list[str]) -> None:
    kind, *rest = argv
    if kind == "turns":
        result = asyncio.run(child_turns(rest[0], Path(rest[1]), int(rest[2])))
    elif kind == "cpu":
        result = asyncio.run(child_cpu(rest[0], Path(rest[1]), int(rest[2])))
    elif kind == "idle":
        result = asyncio.run(child_idle(rest[0], Path(rest[1]), int(rest[2])))
    elif kind == "reopen":
        result = asyncio.run(child_reopen(Path(rest[0])))
    elif kind == "rerun":
        result = asyncio.run(rerun_session(Path(rest[0])))
    else:
        raise SystemExit(f"unknown child {kind!r}: turns, cpu, idle, reopen or rerun")
    print(json.dumps(result))


# --- the run -----------------------------------------------------------------------------


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        run_child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller counts (< 2 min)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (the big log)")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        raise SystemExit("strace is needed to count commits: apt-get install strace")
    if args.quick:
        rounds, one_turns, many_turns, idle = 3, 20, 2, 300
        session_events, total_events, commit_turns = 2_000, 100_000, 20
    else:
        rounds, one_turns, many_turns, idle = 7, 60, 3, 1_000
        session_events, total_events, commit_turns = 10_000, 1_000_000, 50
    directory = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-agents-"))
    directory.mkdir(parents=True, exist_ok=True)
    try:
        measured = asyncio.run(alternate(directory / "turns", rounds, one_turns, many_turns))
        commits = {n: commits_per_turn(n, directory, commit_turns) for n in FRAMEWORKS}
        idle_kb = {
            n: child(["idle", n, str(directory / f"idle-{n}"), str(idle)])["kb_per_session"]
            for n in FRAMEWORKS
        }
        big = directory / "big.db"
        if not big.exists():
            built = asyncio.run(build_big_log(big, session_events, total_events))
            print(f"built the log: {built}")
        rerun_result = child(["rerun", str(big)])
        reopen = min(
            (child(["reopen", str(big)]) for _ in range(3)), key=lambda r: r["reopen_answer_ms"]
        )
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    report(measured, commits, idle_kb, reopen, rerun_result, rounds, idle, session_events,
           total_events)  # fmt: skip


def report(
    measured: dict[str, Measured],
    commits: dict[str, float],
    idle_kb: dict[str, float],
    reopen: dict[str, Any],
    rerun_result: dict[str, Any],
    rounds: int,
    idle: int,
    session_events: int,
    total_events: int,
) -> None:
    title = (
        f"one turn (4 model steps, {TOOL_CALLS_PER_TURN} tool calls), durable state on, "
        f"{rounds} rounds alternating"
    )
    table = Table(title=title)
    columns = ("framework", "turns/s 1 session", "turns/s 100 sessions", "p50 ms", "p99 ms",
               "records/turn", "bytes/turn", "fsyncs/turn", f"KB/idle ({idle})")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "framework" else "right")
    for name, m in measured.items():
        table.add_row(
            name,
            f"{statistics.median(m.rates_one):,.0f}",
            f"{statistics.median(m.rates_many):,.0f}",
            f"{m.p(0.5) * 1e3:.2f}",
            f"{m.p(0.99) * 1e3:.2f}",
            f"{m.records / m.turns:.1f}",
            f"{m.bytes / m.turns:,.0f}",
            f"{commits[name]:.1f}",
            f"{idle_kb[name]:.1f}",
        )
    Console(width=150).print(table)
    print(
        f"clawlog, {total_events:,}-event log, session of {session_events:,} events: "
        f"open {reopen['open_ms']:.0f} ms, open and answer {reopen['reopen_answer_ms']:.0f} ms "
        f"(best of 3 fresh processes); re-run of the session ({rerun_result['turns']} turns, "
        f"{rerun_result['tool_calls']} tool calls) {rerun_result['rerun_ms']:.0f} ms"
    )
    ours = statistics.median(measured["clawlog"].rates_many)
    ratios = {
        f"turns100_vs_{peer}": ours / statistics.median(measured[peer].rates_many) for peer in PEERS
    }
    print(
        "RATIOS "
        + " ".join(f"{k}={v:.2f}" for k, v in ratios.items())
        + f" turn_p50_overhead_us={measured['clawlog'].p(0.5) * 1e6:.0f}"
        f" idle_kb_per_session={idle_kb['clawlog']:.1f}"
        f" reopen_answer_ms={reopen['reopen_answer_ms']:.0f}"
        f" rerun_10k_ms={rerun_result['rerun_ms']:.0f}"
        f" commits_per_turn={commits['clawlog']:.1f}"
    )


if __name__ == "__main__":
    main()

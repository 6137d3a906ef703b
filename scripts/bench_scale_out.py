"""Scale-out on PostgreSQL (issue 22): a send to a session another process owns, against
one this process owns, and how long a dead owner's session takes to answer again.

Two processes on one schema: an *owner* (a child process) that serves session ``far``,
and this process, which serves session ``near``. Both answer at once (a scripted model:
only clawlog's time counts). The sends alternate near and far, ``--sends`` of each,
sequentially; p50 and p90 of each side. Then the owner is SIGKILLed and this process sends
to ``far`` again: the time from the kill to that answer, against the lease time it waited
for (the answer needs the dead owner's lease to expire first).

    python3 scripts/bench_scale_out.py --url postgresql://postgres@127.0.0.1:5432/clawlog \\
        [--sends 300] [--lease 3] [--quick]

Prints ``RATIOS remote_send_p50_ms=… takeover_s=…``: ``remote_send_p50_ms`` is how many
ms the far send's p50 is above the near one's (goal ≤ 5 on loopback), ``takeover_s`` the
time from the kill to the first answer by the new owner (goal ≤ lease + 1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clawlog.actors import System  # noqa: E402
from clawlog.actors.agents import AgentConfig  # noqa: E402
from clawlog.actors.providers import ScriptedModel, reply  # noqa: E402

OWNER = """
import asyncio, sys
from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ScriptedModel, reply

async def main(url, schema, lease):
    async with System.open(url, schema=schema, lease_ttl_s=lease) as system:
        await system.register_agent(
            AgentConfig(key="main"), ScriptedModel(lambda r: reply("owner: ok"))
        )
        await system.send("main", "far", "take it")
        print("ready", flush=True)
        await asyncio.Event().wait()

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
"""


async def physical_limit(url: str, rounds: int) -> tuple[float, float]:
    """What a message to another process cannot do without, on this server: one durable
    commit (the message) and two LISTEN/NOTIFY hops (the message to its owner, the reply
    back), each p50 in ms, measured with bare asyncpg."""
    import asyncpg

    writer, listener = await asyncpg.connect(url), await asyncpg.connect(url)
    try:
        table = f"bench_commit_{uuid.uuid4().hex[:8]}"
        await writer.execute(f"CREATE TABLE {table} (n int)")
        commits, hops = [], []
        arrived: asyncio.Queue[float] = asyncio.Queue()
        await listener.add_listener(table, lambda *_: arrived.put_nowait(time.perf_counter()))
        for n in range(rounds):
            started = time.perf_counter()
            await writer.execute(f"INSERT INTO {table} VALUES ($1)", n)
            commits.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await writer.execute(f"NOTIFY {table}")
            hops.append((await arrived.get() - started) * 1000)
        await writer.execute(f"DROP TABLE {table}")
    finally:
        await writer.close()
        await listener.close()
    return statistics.median(commits), statistics.median(hops)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(url: str, sends: int, lease: float) -> dict[str, float]:
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, url, schema, str(lease)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        if owner.stdout.readline().strip() != "ready":
            raise SystemExit("the owner process did not start")
        async with System.open(url, schema=schema, lease_ttl_s=lease) as system:
            model = ScriptedModel(lambda r: reply("here: ok"))
            await system.register_agent(AgentConfig(key="main"), model)
            await system.send("main", "near", "warm up")
            await system.send("main", "far", "warm up")
            near: list[float] = []
            far: list[float] = []
            for n in range(sends):
                for session, times in (("near", near), ("far", far)):
                    started = time.perf_counter()
                    answer = await system.send("main", session, f"m{n}")
                    times.append((time.perf_counter() - started) * 1000)
                    expected = "here: ok" if session == "near" else "owner: ok"
                    assert answer == expected, answer
            os.kill(owner.pid, signal.SIGKILL)
            killed = time.perf_counter()
            owner.communicate(timeout=60)
            answer = await system.send("main", "far", "after the kill", timeout=lease * 10)
            takeover = time.perf_counter() - killed
            assert answer == "here: ok", answer
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.communicate(timeout=60)
    return {
        "near_p50_ms": statistics.median(near),
        "near_p90_ms": percentile(near, 0.9),
        "far_p50_ms": statistics.median(far),
        "far_p90_ms": percentile(far, 0.9),
        "takeover_s": takeover,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--sends", type=int, default=300)
    parser.add_argument("--lease", type=float, default=3.0)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sends = 50 if args.quick else args.sends
    result = asyncio.run(run(args.url, sends, args.lease))
    commit_ms, hop_ms = asyncio.run(physical_limit(args.url, sends))
    floor = commit_ms + 2 * hop_ms
    print(f"sends per side: {sends}, lease: {args.lease:g} s, load: {os.getloadavg()[0]:.2f}")
    for side, label in (("near", "owned here"), ("far", "another process")):
        p50, p90 = result[f"{side}_p50_ms"], result[f"{side}_p90_ms"]
        print(f"{side} ({label}): p50 {p50:.2f} ms  p90 {p90:.2f} ms")
    print(f"takeover after a kill:   {result['takeover_s']:.2f} s (goal ≤ {args.lease + 1:g} s)")
    above = result["far_p50_ms"] - result["near_p50_ms"]
    print(
        f"the physical limit of 'above': one commit {commit_ms:.2f} ms + two NOTIFY hops "
        f"{hop_ms:.2f} ms each = {floor:.2f} ms"
    )
    print(
        f"RATIOS remote_send_p50_ms={above:.2f} takeover_s={result['takeover_s']:.2f} "
        f"near_send_p50_ms={result['near_p50_ms']:.2f} far_send_p50_ms={result['far_p50_ms']:.2f} "
        f"remote_floor_ms={floor:.2f} remote_vs_floor={above / floor:.2f}"
    )


if __name__ == "__main__":
    main()

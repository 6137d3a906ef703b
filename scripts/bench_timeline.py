"""The console's timeline on a 100,000-event log (issue 21): server time to render the page
(its first window) and to answer a window fetch, and what the browser receives.

    python3 scripts/bench_timeline.py [--events N] [--log PATH] [--runs N]
        default: 100,000 events in /tmp/clawlog-bench-timeline-100000.db (the mixed log
        of the readers' benchmark; made once, then reused)

The app runs in this process (``create_app`` over an open console, requests through
httpx's ASGI transport: no sockets, so the time is the server's: routing, reading the
window from the log, building the items, rendering the template). The read models are
caught up before anything is timed, so their runner does not compete. Each request runs
``--runs`` times; the table shows p50 and p95.

Rows: the page unfiltered (the last 400 events), the page filtered by type and agent (a
filter that reads back through the log until it has its window), a window fetch before
the middle of the log, and a window after a position. Ends with
``RATIOS timeline_render_ms=... timeline_window_ms=... timeline_page_kib=...`` (goal:
``timeline_render_ms`` <= 300).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from clawlog.projections.testing import write_mixed_log_file  # noqa: E402
from clawlog.ui import ConsoleConfig, create_app  # noqa: E402
from clawlog.ui.console import open_console  # noqa: E402

GOAL_MS = 300.0


async def measure(client: httpx.AsyncClient, path: str, runs: int) -> tuple[float, float, int]:
    """p50 and p95 milliseconds of ``runs`` GETs of ``path``, and the body's size."""
    times, size = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        answer = await client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        if answer.status_code != 200:
            raise SystemExit(f"{path}: {answer.status_code} {answer.text[:300]}")
        size = len(answer.content)
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)], size


async def main(log: Path, events: int, runs: int) -> None:
    if not log.exists():
        print(f"writing {events} events to {log} ...", file=sys.stderr)
        await write_mixed_log_file(log, events)
    config = ConsoleConfig(db=str(log))
    async with open_console(config) as console:
        head = await console.store.head_position()
        print(f"catching the read models up to {head} ...", file=sys.stderr)
        await console.models.wait_until(head, 600)
        app = create_app(config, console=console)
        app.state.console = console  # what the lifespan does; the ASGI transport runs none
        transport = httpx.ASGITransport(app=app)
        middle = head // 2
        cases = (
            ("page (last window)", "/timeline"),
            ("page, type=tool.* agent=agent1", "/timeline?type=tool.*&agent=agent1"),
            ("window before the middle", f"/timeline/window?before={middle}"),
            ("window after a position", f"/timeline/window?after={middle}"),
        )
        results = {}
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            await measure(client, "/timeline", 2)  # warm: templates compiled, caches filled
            for name, path in cases:
                results[name] = await measure(client, path, runs)
    table = Table(title=f"timeline on {head:,} events ({runs} runs each)")
    for column in ("request", "p50 ms", "p95 ms", "body KiB"):
        table.add_column(column, justify="left" if column == "request" else "right")
    for name, (p50, p95, size) in results.items():
        table.add_row(name, f"{p50:.1f}", f"{p95:.1f}", f"{size / 1024:.0f}")
    Console().print(table)
    render, _, page_size = results["page (last window)"]
    window = results["window before the middle"][0]
    filtered = results["page, type=tool.* agent=agent1"][0]
    verdict = "ok" if render <= GOAL_MS else "OVER the goal"
    print(f"timeline_render_ms {render:.1f} (goal <= {GOAL_MS:.0f}: {verdict})")
    print(
        f"RATIOS timeline_render_ms={render:.1f} timeline_window_ms={window:.1f} "
        f"timeline_filtered_ms={filtered:.1f} timeline_page_kib={page_size / 1024:.0f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--log", type=Path)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    path = args.log or Path(f"/tmp/clawlog-bench-timeline-{args.events}.db")
    asyncio.run(main(path, args.events, args.runs))

"""``web_fetch`` overhead (issue 18): a local 100 KB HTML article fetched end to end through
the tool pipeline, against a bare ``httpx.get`` of the same page, in the same run.

    python3 scripts/bench_web.py            # 300 fetches per side
    python3 scripts/bench_web.py --quick    # 100 fetches per side (well under a minute)

The page (an article with navigation, a sidebar, a footer, tables, lists and code) is
served by a threaded ``http.server`` on 127.0.0.1. Bare: ``httpx.get(url).text``, what a
script fetching a page writes. Ours: ``tools.run_tool_call`` with ``WebFetchTool``
(loopback allowed explicitly): resolve, policy, validation, rate limit with no windows, loop
detection, approval lookup; then the SSRF check, the pinned fetch, Readability's main
content, Markdown, scrubbing, neutralizing, wrapping, the finisher; and the durable events a
Session writes (two appends per call, SQLite synchronous=FULL). A second row keeps the
events in memory. The sides run in alternating batches of 10 sequential fetches, so load
from elsewhere hits both alike. Ends with ``RATIOS web_fetch_overhead=...`` (our p50 / bare
p50; goal <= 2.0).
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from clawlog.events import open_store  # noqa: E402
from clawlog.events.streams import session_stream  # noqa: E402
from clawlog.tools import RateLimitConfig, ToolContext, ToolPipeline, ToolRegistry  # noqa: E402
from clawlog.tools.driver import RecordingSink, StoreSink, run_tool_call  # noqa: E402
from clawlog.tools.ratelimit import RateLimiter  # noqa: E402
from clawlog.tools.web import WebFetchTool, WebPolicy  # noqa: E402

BATCH = 10
PAGE_BYTES = 100_000
# fmt: off
WORDS = (
    "actor", "log", "event", "stream", "agent", "model", "tool", "fetch", "page", "content",
    "safety", "markdown", "table", "list", "value", "reply", "store", "append", "read",
    "projection", "system", "session", "the", "a", "of", "and", "to", "in", "is",
)
# fmt: on


def article(size: int = PAGE_BYTES, seed: int = 18) -> bytes:
    """An HTML article of about ``size`` bytes with the chrome real pages have."""
    rnd = random.Random(seed)

    def sentence(n: int) -> str:
        return " ".join(rnd.choice(WORDS) for _ in range(n)).capitalize() + "."

    nav = "".join(f'<li><a href="/s/{i}">Section {i}</a></li>' for i in range(40))
    side = "".join(f'<li><a href="/r/{i}">Related post {i}</a></li>' for i in range(25))
    parts: list[str] = []
    i = 0
    while sum(map(len, parts)) < size - 5_000:
        i += 1
        parts.append(
            f"<h2>Part {i}</h2><p>{sentence(40)} <a href='/doc/{i}'>link {i}</a> "
            f"{sentence(30)}</p><p><strong>{sentence(8)}</strong> {sentence(50)}</p>"
        )
        if i % 5 == 0:
            parts.append("<ul>" + "".join(f"<li>{sentence(10)}</li>" for _ in range(5)) + "</ul>")
        if i % 7 == 0:
            rows = "".join(f"<tr><td>{sentence(3)}</td><td>{i * 7}</td></tr>" for _ in range(5))
            parts.append(f"<table><tr><th>name</th><th>value</th></tr>{rows}</table>")
        if i % 9 == 0:
            parts.append(f"<pre><code>def part_{i}():\n    return {i}\n</code></pre>")
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Bench article</title>"
        "<style>body{font-family:serif}</style><script>var analytics = 1;</script></head>"
        f"<body><header><h1>Site</h1></header><nav><ul>{nav}</ul></nav><main><article>"
        f"<h1>The article</h1>{''.join(parts)}</article></main><aside><ul>{side}</ul></aside>"
        "<footer>(c) 2026 the site</footer></body></html>"
    )
    return page.encode()


class PageServer:
    """Serves one page at every path, on 127.0.0.1, from a thread."""

    def __init__(self, body: bytes) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/article"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def bare_batch(url: str) -> list[float]:
    samples = []
    for _ in range(BATCH):
        started = time.perf_counter()
        text = httpx.get(url).text
        samples.append(time.perf_counter() - started)
        assert len(text) > 90_000
    return samples


class Ours:
    def __init__(self, url: str, store: object | None) -> None:
        self.url = url
        unlimited = RateLimiter(RateLimitConfig(session=(), user_tool=()))
        tool = WebFetchTool(WebPolicy(allow_loopback=True))
        self.pipeline = ToolPipeline(ToolRegistry([tool]), rate_limiter=unlimited)
        self.ctx = ToolContext(agent="bench", session_key="web")
        self.sink = (
            StoreSink(store, session_stream("bench", "web"))  # type: ignore[arg-type]
            if store is not None
            else RecordingSink()
        )
        self.calls = 0

    async def batch(self) -> list[float]:
        samples = []
        for _ in range(BATCH):
            self.calls += 1
            # A new user turn per fetch: the same call repeated would trip loop detection.
            self.pipeline.reset_loops(self.ctx)
            started = time.perf_counter()
            result = await run_tool_call(
                self.pipeline,
                self.ctx,
                "web_fetch",
                {"url": self.url},
                self.sink,
                call_id=f"f{self.calls}",
            )
            samples.append(time.perf_counter() - started)
            assert not result.is_error, result.for_llm[:300]
            if isinstance(self.sink, RecordingSink):
                self.sink.events.clear()
        return samples


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1000, p99 * 1000


async def main(quick: bool) -> None:
    batches = 10 if quick else 30
    body = article()
    server = PageServer(body)
    bare: list[float] = []
    durable: list[float] = []
    memory: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = await open_store(Path(tmp) / "bench.db")
            ours, in_memory = Ours(server.url, store), Ours(server.url, None)
            bare_batch(server.url)  # warm-up, every side
            await ours.batch()
            await in_memory.batch()
            for _ in range(batches):
                bare += bare_batch(server.url)
                durable += await ours.batch()
                memory += await in_memory.batch()
            await store.close()
    finally:
        server.close()
    print(f"page: {len(body):,} bytes of HTML, {len(durable)} fetches per side")
    print(f"{'what':<58} {'p50 ms':>8} {'p99 ms':>8}")
    rows = [
        ("httpx.get(url).text (bare)", bare),
        ("web_fetch through the pipeline + durable events (SQLite)", durable),
        ("web_fetch through the pipeline, events in memory", memory),
    ]
    for name, samples in rows:
        p50, p99 = summary(samples)
        print(f"{name:<58} {p50:>8.2f} {p99:>8.2f}")
    bare_p50, ours_p50, memory_p50 = summary(bare)[0], summary(durable)[0], summary(memory)[0]
    print(
        f"RATIOS web_fetch_overhead={ours_p50 / bare_p50:.2f} "
        f"web_fetch_memory_overhead={memory_p50 / bare_p50:.2f} "
        f"web_fetch_p50_ms={ours_p50:.1f} httpx_get_p50_ms={bare_p50:.1f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 fetches per side")
    asyncio.run(main(parser.parse_args().quick))

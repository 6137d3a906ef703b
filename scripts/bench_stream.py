"""Streamed first-token latency through the session actor (issue 19), against the raw SSE
client reading the same local server, in the same run.

    python3 scripts/bench_stream.py            # 200 turns per side
    python3 scripts/bench_stream.py --quick    # 40 turns per side (well under a minute)

The server (its own process, so it takes no GIL from the measured one) speaks the OpenAI
chat-completions wire format on 127.0.0.1 with keep-alive: the response head and the first
chunk go out in one write as soon as the request is read, the other chunks (more text, the
usage block, ``[DONE]``) 2 ms later, as a model writing its next tokens.

- raw: ``OpenAIChatModel.stream(request)`` alone on the benchmark's loop, from the call to
  its first ``TextDelta``. The request is the one the session sent (its system prompt and
  tools, read back from the server), with the turn's user message.
- session: ``System.stream(...)`` on a SQLite log, from the call to the first
  ``TurnDelta``: the ask to the agent, the session's turn start and ``ModelRequested``
  appended (one append, durable before the request goes out), the budget and
  compaction checks, the same client's ``stream`` on the I/O hub, and the delta's way from
  the hub's loop to the application's. Each turn is then read to its end (reply recorded);
  the conversation is cleared between turns so every request is the same size. Two logs,
  each its own System: the default ``synchronous=FULL`` (an fsync per append) and
  ``synchronous=NORMAL`` (WAL: durable across a crash of the process, not of the machine).

The three sides take turns (the order rotates each round); medians. Ends with ``RATIOS
stream_first_token_overhead_ms=X stream_first_token_overhead_normal_ms=Y`` (session median
- raw median, FULL and NORMAL; goal <= 2 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from clawlog.actors import System  # noqa: E402
from clawlog.actors.agents import AgentConfig  # noqa: E402
from clawlog.actors.providers import (  # noqa: E402
    ChatMessage,
    ModelRequest,
    OpenAIChatModel,
    TextDelta,
    ToolSpec,
)

MODEL = "gpt-4o-mini"
#: The server's pause between the first chunk and the rest (the model's next tokens).
REST_AFTER_S = 0.002
WARM_UP = 5
RAW = "raw: OpenAIChatModel.stream alone"
FULL = "session: System.stream, SQLite synchronous=FULL"
NORMAL = "session: System.stream, SQLite synchronous=NORMAL"


# --- the server (run as ``--serve``, in its own process) ---------------------------------


def _event(data: Any) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _completion(content: str | None, finish: str | None = None, usage: Any = None) -> bytes:
    choices = [] if content is None else [{"index": 0, "delta": {"content": content}}]
    if choices and finish:
        choices[0]["finish_reason"] = finish
    return _event({"id": "c-1", "model": MODEL, "choices": choices, "usage": usage})


FIRST = _chunk(_completion("Hello"))
REST = b"".join(
    [
        _chunk(_completion(", streamed")),
        _chunk(_completion(" world.", finish="stop")),
        _chunk(_completion(None, usage={"prompt_tokens": 900, "completion_tokens": 4})),
        _chunk(_event("[DONE]")),
        b"0\r\n\r\n",
    ]
)
HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
)


async def _serve() -> None:
    last_body = [b"{}"]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                length = next(
                    (int(h.split(":", 1)[1]) for h in lines if h.lower().startswith("content-l")),
                    0,
                )
                body = await reader.readexactly(length) if length else b""
                if path.endswith("/last"):  # the previous request's body, for the raw side
                    answer = last_body[0]
                    writer.write(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                        b"content-length: %d\r\n\r\n%s" % (len(answer), answer)
                    )
                    await writer.drain()
                    continue
                last_body[0] = body
                writer.write(HEAD + FIRST)  # the first token: at once
                await writer.drain()
                await asyncio.sleep(REST_AFTER_S)
                writer.write(REST)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        # Ends when the benchmark closes our stdin (or dies).
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


# --- the benchmark -----------------------------------------------------------------------


def raw_request(body: dict[str, Any], text: str) -> ModelRequest:
    """The request the session sent (read back from the server), with ``text`` as its
    user message."""
    messages = body["messages"]
    assert messages[0]["role"] == "system", "the session's request starts with its prompt"
    tools = [
        ToolSpec(
            name=t["function"]["name"],
            description=t["function"].get("description", ""),
            parameters=t["function"].get("parameters", {}),
        )
        for t in body.get("tools", [])
    ]
    return ModelRequest(
        model=MODEL,
        system=messages[0]["content"],
        messages=[ChatMessage(role="user", content=text)],
        tools=tools,
        max_tokens=body.get("max_tokens") or body.get("max_completion_tokens") or 4096,
    )


async def session_turn(system: System, text: str) -> float:
    """Seconds from ``System.stream`` to its first delta (then reads the turn to its end)."""
    started = time.perf_counter()
    async with system.stream("bench", "chat", text) as turn:
        first = await anext(turn)
        elapsed = time.perf_counter() - started
        async for _ in turn:
            pass
    assert first.text == "Hello" and turn.reply == "Hello, streamed world.", turn.reply
    await system.clear("bench", "chat")  # the next request is the same size
    return elapsed


async def raw_turn(model: OpenAIChatModel, request: ModelRequest) -> float:
    """Seconds from ``stream(request)`` to its first delta (then reads to the end)."""
    started = time.perf_counter()
    items = model.stream(request)
    first = await anext(items)
    elapsed = time.perf_counter() - started
    rest = [item async for item in items]
    last = rest[-1] if rest else None
    assert isinstance(first, TextDelta) and first.text == "Hello"
    assert last is not None and not isinstance(last, TextDelta)
    assert last.text == "Hello, streamed world."
    return elapsed


async def run(url: str, tmp: Path, turns: int) -> dict[str, list[float]]:
    """``turns`` first-token latencies per side; the order of the sides rotates each round."""
    raw_model = OpenAIChatModel(model=MODEL, api_key="bench", base_url=url)
    measured: dict[str, list[float]] = {RAW: [], FULL: [], NORMAL: []}
    async with contextlib.AsyncExitStack() as stack:
        systems: dict[str, System] = {}
        for label, synchronous in ((FULL, "FULL"), (NORMAL, "NORMAL")):
            log = tmp / f"{synchronous.lower()}.db"
            system = await stack.enter_async_context(System.open(log, synchronous=synchronous))
            model = OpenAIChatModel(model=MODEL, api_key="bench", base_url=url)
            stack.push_async_callback(system.runtime.hub.run_async, model.aclose())
            await system.register_agent(AgentConfig(key="bench"), model)
            for _ in range(WARM_UP):  # imports, connections, statement caches
                await session_turn(system, "warm up")
            systems[label] = system
        async with httpx.AsyncClient() as plain:
            body = (await plain.get(url + "/last")).json()
        request = raw_request(body, "What is new?")
        for _ in range(WARM_UP):
            await raw_turn(raw_model, request)
        labels = list(measured)
        for round_ in range(turns):
            shift = round_ % len(labels)
            for label in labels[shift:] + labels[:shift]:
                if label == RAW:
                    measured[label].append(await raw_turn(raw_model, request))
                else:
                    measured[label].append(await session_turn(systems[label], "What is new?"))
    await raw_model.aclose()
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="40 turns per side")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve())
        return
    turns = 40 if args.quick else 200
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        with tempfile.TemporaryDirectory() as tmp:
            measured = asyncio.run(run(f"http://127.0.0.1:{port}", Path(tmp), turns))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)
    print(f"{'first token (ms)':<50} {'turns':>5} {'p50':>8} {'p90':>8} {'- raw p50':>10}")
    raw_p50 = statistics.median(measured[RAW]) * 1e3
    for label, values in measured.items():
        ordered = sorted(values)
        p50 = statistics.median(ordered) * 1e3
        p90 = ordered[int(len(ordered) * 0.9)] * 1e3
        print(f"{label:<50} {len(values):>5} {p50:>8.3f} {p90:>8.3f} {p50 - raw_p50:>10.3f}")

    def overhead(label: str) -> float:
        return statistics.median(measured[label]) * 1e3 - raw_p50

    print(
        f"RATIOS stream_first_token_overhead_ms={overhead(FULL):.3f} "
        f"stream_first_token_overhead_normal_ms={overhead(NORMAL):.3f}"
    )


if __name__ == "__main__":
    main()

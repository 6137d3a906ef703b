"""The output buffer of a run: bounded memory, offsets that survive dropped output, and the
head-and-tail clipping of results."""

from __future__ import annotations

import asyncio
import threading

from clawlog.tools.exec.output import OutputBuffer, clip


def test_clip_keeps_head_and_tail_within_the_cap() -> None:
    text = "H" * 60_000 + "M" * 100_000 + "T" * 40_000
    clipped, cut = clip(text, 100_000)
    assert cut and len(clipped) <= 100_000
    assert clipped.startswith("H" * 1000) and clipped.endswith("T" * 20_000)
    assert "characters of output omitted" in clipped
    assert clip("short", 100) == ("short", False)


def test_memory_is_bounded_and_offsets_say_what_was_dropped() -> None:
    buffer = OutputBuffer(memory_chars=1000)
    for index in range(30):
        buffer.feed(f"{index:03d}".encode() * 33 + b"\n")  # 100 characters each
    assert buffer.total == 3000
    text, end = buffer.since(0)
    assert end == 3000 and text.startswith("000000")
    assert "characters of output not kept" in text and text.endswith("029\n")
    later, end_again = buffer.since(2950)
    assert later == (("029" * 33) + "\n")[50:]
    assert end_again == 3000 and buffer.since(3000) == ("", 3000)


def test_utf8_split_across_chunks_is_decoded_whole() -> None:
    buffer = OutputBuffer()
    data = "héllo wörld".encode()
    buffer.feed(data[:2])
    buffer.feed(data[2:])
    buffer.close()
    assert buffer.text() == "héllo wörld" and buffer.closed


async def test_readers_wake_on_output_from_another_thread() -> None:
    buffer = OutputBuffer()
    buffer.bind(asyncio.get_running_loop())
    waiting = asyncio.ensure_future(buffer.wait_for(0))
    feeder = threading.Thread(target=buffer.feed, args=(b"hi",))
    feeder.start()
    await waiting
    feeder.join()
    assert buffer.text() == "hi"

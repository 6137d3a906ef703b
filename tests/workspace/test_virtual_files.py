"""Context files and memory documents (seed 001 §3): routed to event-sourced stores, with
open / predefined routing, fallback, BOOTSTRAP.md deletion, and stores rebuilt from the
log."""

from __future__ import annotations

import os

import pytest

from clawlog.events import EventStore
from clawlog.events.domain.agent import AgentRegistered
from clawlog.events.domain.workspace import (
    ContextFileDeleted,
    ContextFileWritten,
    MemoryDocumentWritten,
)
from clawlog.tools.errors import FileNotFound, PathDenied, VirtualStoreUnavailable
from clawlog.tools.workspace import ContextStore, MemoryStore

from .support import Bench, StoreRecorder


async def _register(bench: Bench, recorder: StoreRecorder, kind: str, **files: str) -> None:
    event = AgentRegistered(key="main", config={"kind": kind, "context_files": files})
    await recorder("agent/main", [event])
    assert bench.env.context is not None
    bench.env.context.apply(event)


async def test_a_user_file_is_an_event_on_the_agent_stream_not_a_file(
    bench: Bench, recorder: StoreRecorder
) -> None:
    await bench("write_file", path="USER.md", content="Name: Ada\n")
    assert not (bench.root / "USER.md").exists()
    events = await recorder.stream("agent/main")
    assert events == [
        ContextFileWritten(agent="main", name="USER.md", content="Name: Ada\n", user="telegram:42")
    ]
    assert (await bench("read_file", path="USER.md")).for_llm == "     1\tName: Ada"
    # another user has no USER.md of their own
    with pytest.raises(FileNotFound):
        await bench.as_user("telegram:7")("read_file", path="USER.md")


async def test_predefined_agents_keep_their_identity_at_the_agent_level(
    bench: Bench, recorder: StoreRecorder
) -> None:
    await _register(
        bench, recorder, "predefined", **{"SOUL.md": "Be kind.", "TOOLS.md": "Use grep."}
    )
    assert (await bench("read", path="SOUL.md")).for_llm == "     1\tBe kind."
    with pytest.raises(PathDenied, match="protected identity file of agent 'main'"):
        await bench("write_file", path="SOUL.md", content="Be cruel.")
    with pytest.raises(PathDenied):
        await bench("edit_file", path="SOUL.md", old_string="kind", new_string="cruel")
    # TOOLS.md is agent-level and not an identity file: writable, for everyone
    await bench("write_file", path="TOOLS.md", content="Use rg.")
    assert (await bench.as_user("telegram:7")("read", path="TOOLS.md")).for_llm == "     1\tUse rg."


async def test_open_agents_keep_every_file_per_user_with_the_agent_file_as_fallback(
    bench: Bench, recorder: StoreRecorder
) -> None:
    await _register(bench, recorder, "open", **{"SOUL.md": "Template soul."})
    other = bench.as_user("telegram:7")
    assert (await other("read_file", path="SOUL.md")).for_llm == "     1\tTemplate soul."
    await bench("write_file", path="SOUL.md", content="My own soul.")
    assert (await bench("read_file", path="SOUL.md")).for_llm == "     1\tMy own soul."
    assert (await other("read_file", path="SOUL.md")).for_llm == "     1\tTemplate soul."
    written = (await recorder.stream("agent/main"))[-1]
    assert isinstance(written, ContextFileWritten) and written.user == "telegram:42"


async def test_writing_bootstrap_empty_deletes_it(bench: Bench, recorder: StoreRecorder) -> None:
    await _register(bench, recorder, "predefined", **{"BOOTSTRAP.md": "Ask the user's name."})
    assert "Ask the user's name." in (await bench("read_file", path="BOOTSTRAP.md")).for_llm
    result = await bench("write_file", path="BOOTSTRAP.md", content="  \n")
    assert result.for_llm == "Deleted BOOTSTRAP.md (written empty)."
    with pytest.raises(FileNotFound):
        await bench("read_file", path="BOOTSTRAP.md")
    assert (await recorder.stream("agent/main"))[-1] == ContextFileDeleted(
        agent="main", name="BOOTSTRAP.md"
    )


async def test_the_stores_are_folds_of_the_log(
    bench: Bench, recorder: StoreRecorder, store: EventStore
) -> None:
    await _register(bench, recorder, "open", **{"AGENTS.md": "template", "BOOTSTRAP.md": "hi"})
    await bench("write_file", path="AGENTS.md", content="mine")
    await bench("write_file", path="BOOTSTRAP.md", content="")
    await bench(
        "write_file", path="MEMORY.md", content="# Facts\nThe deploy key rotates monthly.\n"
    )
    await bench("edit_file", path="MEMORY.md", old_string="monthly", new_string="weekly")
    replayed = [r.event for r in await store.read_stream("agent/main")]
    context, memory = ContextStore(events=replayed), MemoryStore(events=replayed)
    live_context, live_memory = bench.env.context, bench.env.memory
    assert live_context is not None and live_memory is not None
    for user in ("telegram:42", "telegram:7", ""):
        for name in ("AGENTS.md", "BOOTSTRAP.md", "SOUL.md"):
            assert context.read("main", user, name) == live_context.read("main", user, name)
    assert context.read("main", "telegram:42", "AGENTS.md") == "mine"
    assert context.read("main", "telegram:42", "BOOTSTRAP.md") is None  # done for this user
    assert context.read("main", "telegram:7", "BOOTSTRAP.md") == "hi"  # not for this one
    assert memory.documents("main", "telegram:42") == live_memory.documents("main", "telegram:42")
    assert memory.search("main", "telegram:42", "deploy key")[0].snippet.count("weekly") == 1


async def test_memory_documents_route_to_the_memory_store(
    bench: Bench, recorder: StoreRecorder
) -> None:
    await bench(
        "write_file", path="memory/projects/apollo.md", content="# Apollo\nLaunch on Friday.\n"
    )
    await bench("write", path="memory.md", content="lowercase memory works too\n")
    assert not (bench.root / "memory").exists() and os.listdir(bench.root) == []
    kinds = [type(e) for e in await recorder.stream("agent/main")]
    assert kinds == [MemoryDocumentWritten, MemoryDocumentWritten]
    listing = (await bench("list_files")).for_llm
    assert "memory/projects/apollo.md  (memory document)" in listing
    assert (
        await bench("list_files", path="memory")
    ).for_llm == "memory/projects/apollo.md  (memory document)"
    assert (
        "memory.md:1: lowercase memory works too"
        in (await bench("grep", pattern="lowercase")).for_llm
    )


async def test_memory_search_ranks_by_bm25_and_memory_get_reads_lines(bench: Bench) -> None:
    await bench("write_file", path="memory/food.md", content="# Food\nThe user likes green tea.\n")
    await bench(
        "write_file",
        path="memory/travel.md",
        content="# Travel\nTea plantations in Sri Lanka; tea tasting; tea museum.\n",
    )
    await bench("write_file", path="memory/work.md", content="# Work\nStandup at nine.\n")
    await bench("write_file", path="memory/data.json", content='{"tea": 1}')  # not indexed
    result = await bench("memory_search", query="tea tasting")
    paths = [r["path"] for r in result.details["results"]]
    assert paths == ["memory/travel.md", "memory/food.md"]
    scores = [r["score"] for r in result.details["results"]]
    assert scores[0] > scores[1] > 0
    got = await bench("memory_get", path="memory/travel.md", **{"from": 2, "lines": 1})
    assert got.for_llm == "Tea plantations in Sri Lanka; tea tasting; tea museum."
    assert (await bench("memory_search", query="quantum")).for_llm == "No memory matches 'quantum'."


async def test_a_users_own_memory_shadows_the_global_one(
    bench: Bench, recorder: StoreRecorder
) -> None:
    assert bench.env.memory is not None
    await bench.env.memory.write("main", "", "MEMORY.md", "Global: office in Berlin.\n")
    ada, bob = bench, bench.as_user("telegram:7")
    await ada("write_file", path="MEMORY.md", content="Ada works from Lisbon.\n")
    assert (await ada("read_file", path="MEMORY.md")).for_llm == "     1\tAda works from Lisbon."
    assert (await bob("read_file", path="MEMORY.md")).for_llm == "     1\tGlobal: office in Berlin."
    assert [
        h["path"]
        for h in (await ada("memory_search", query="office Berlin Lisbon")).details["results"]
    ] == ["MEMORY.md"]
    assert "Lisbon" in (await ada("memory_search", query="Berlin Lisbon")).for_llm
    assert "Berlin" in (await bob("memory_search", query="Berlin Lisbon")).for_llm


async def test_without_a_recorder_virtual_files_are_read_only(root: object) -> None:
    context = ContextStore(
        events=[AgentRegistered(key="main", config={"context_files": {"SOUL.md": "s"}})]
    )
    assert context.read("main", "u", "SOUL.md") == "s"
    with pytest.raises(VirtualStoreUnavailable):
        await context.write(context.target("main", "u", "USER.md"), "x")


async def test_memory_tools_need_a_memory_store(disk: Bench) -> None:
    assert "memory_search" not in disk.tools
    from clawlog.tools.workspace.memory_tools import MemorySearchTool

    with pytest.raises(VirtualStoreUnavailable, match="memory search is not enabled"):
        await MemorySearchTool(None).execute(disk.ctx, {"query": "x"})


async def test_secrets_are_scrubbed_before_they_are_recorded(recorder: StoreRecorder) -> None:
    memory = MemoryStore(recorder, scrub=lambda text: text.replace("sk-live-123", "[REDACTED]"))
    await memory.write("main", "u", "MEMORY.md", "key sk-live-123")
    recorded = (await recorder.stream("agent/main"))[0]
    assert isinstance(recorded, MemoryDocumentWritten) and recorded.content == "key [REDACTED]"


async def test_a_virtual_file_is_capped_to_fit_one_event(
    bench: Bench, recorder: StoreRecorder
) -> None:
    from clawlog.tools.errors import FileTooLarge
    from clawlog.tools.workspace.config import MAX_VIRTUAL_FILE_BYTES

    await bench("write_file", path="memory/big.md", content="a" * MAX_VIRTUAL_FILE_BYTES)
    with pytest.raises(FileTooLarge, match=f"at most {MAX_VIRTUAL_FILE_BYTES} bytes"):
        await bench("write_file", path="MEMORY.md", content="a" * (MAX_VIRTUAL_FILE_BYTES + 1))
    assert len(await recorder.stream("agent/main")) == 1

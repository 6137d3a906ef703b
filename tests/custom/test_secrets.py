"""Env values of custom tools: sealed with AES-256-GCM in the log, decrypted only into the
child's environment, scrubbed from everything else; a missing, malformed or wrong key is
a clear error naming the tool, never a traceback."""

from __future__ import annotations

import base64
import hashlib
import logging
import os
from pathlib import Path

import msgspec
import pytest

from clawlog import AgentConfig, System
from clawlog.actors.providers import ScriptedModel, call, reply
from clawlog.events.domain.custom_tool import CustomToolDefined, SealedEnvValue
from clawlog.tools.custom import SECRET_KEY_ENV, SecretBox, generate_secret_key
from clawlog.tools.errors import SecretKeyError

SECRET = "hunter2-the-deploy-token-91c4"


def test_a_sealed_value_opens_only_for_its_tool_and_variable() -> None:
    box = SecretBox(os.urandom(32))
    sealed = box.seal("", "deploy", "TOKEN", SECRET)
    assert SECRET.encode() not in sealed.sealed and len(sealed.sealed) == 12 + len(SECRET) + 16
    assert box.open("", "deploy", sealed, box.key_id) == SECRET
    for agent, tool, variable in (
        ("main", "deploy", "TOKEN"),
        ("", "other", "TOKEN"),
        ("", "deploy", "X"),
    ):
        moved = SealedEnvValue(name=variable, sealed=sealed.sealed)
        with pytest.raises(SecretKeyError) as caught:
            box.open(agent, tool, moved, box.key_id)
        assert caught.value.reason == "wrong" and repr(tool) in str(caught.value)


def test_another_key_is_named_by_its_fingerprint_never_by_its_bytes() -> None:
    key, other = os.urandom(32), os.urandom(32)
    sealed = SecretBox(key).seal("", "deploy", "TOKEN", SECRET)
    box = SecretBox(other)
    with pytest.raises(SecretKeyError) as caught:
        box.open("", "deploy", sealed, SecretBox(key).key_id)
    message = str(caught.value)
    assert caught.value.reason == "wrong"
    assert "custom tool 'deploy'" in message and "another key" in message
    assert base64.b64encode(key).decode() not in message and key.hex() not in message
    assert repr(box) == f"<SecretBox key_id={box.key_id}>"


def test_the_key_comes_from_the_environment_in_either_base64_alphabet() -> None:
    raw = bytes(range(250, 256)) * 5 + b"\xfb\xff"  # bytes whose base64 differs by alphabet
    standard, urlsafe = base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()
    assert standard != urlsafe
    ids = {
        SecretBox.from_environment({SECRET_KEY_ENV: text}).key_id for text in (standard, urlsafe)
    }  # type: ignore[union-attr]
    assert len(ids) == 1
    assert SecretBox.from_environment({}) is None
    assert SecretBox.from_environment({SECRET_KEY_ENV: "  "}) is None
    for bad in ("not base64!", base64.b64encode(b"short").decode()):
        with pytest.raises(SecretKeyError) as caught:
            SecretBox.from_environment({SECRET_KEY_ENV: bad})
        assert caught.value.reason == "malformed" and "base64 of 32 random bytes" in str(
            caught.value
        )


async def test_env_without_a_key_is_refused_and_nothing_is_recorded(
    tmp_path: Path, no_secret_key: None
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        with pytest.raises(SecretKeyError) as caught:
            await system.define_tool("deploy", command="true", env={"TOKEN": SECRET})
        assert caught.value.reason == "missing"
        assert "'deploy'" in str(caught.value) and SECRET_KEY_ENV in str(caught.value)
        assert await system.store.read_stream("tools/custom") == []
        assert system.custom_tools() == []


async def test_a_malformed_key_is_refused_when_env_is_defined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_KEY_ENV, "tooshort")
    async with System.open(tmp_path / "log.db") as system:
        await system.define_tool("plain", command="true")  # no env: no key needed
        with pytest.raises(SecretKeyError) as caught:
            await system.define_tool("deploy", command="true", env={"TOKEN": SECRET})
        assert caught.value.reason == "malformed"
        assert [e.name for e in system.custom_tools()] == ["plain"]


def _log_bytes(folder: Path) -> bytes:
    """Every byte SQLite wrote: the log and its -wal/-shm files."""
    return b"".join(p.read_bytes() for p in sorted(folder.glob("log.db*")))


async def test_env_values_reach_the_child_and_nothing_else(tmp_path: Path, secret_key: str) -> None:
    digest = hashlib.md5(SECRET.encode()).hexdigest()  # sha256 would be scrubbed as long hex
    model = ScriptedModel(
        [
            call("secret_hash", call_id="c1"),
            call("secret_echo", call_id="c2", prefix="token:"),
            reply("done"),
        ]
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.define_tool(
            "secret_hash",
            command='printf %s "$DEPLOY_TOKEN" | md5sum',
            env={"DEPLOY_TOKEN": SECRET},
        )
        entry = await system.define_tool(
            "secret_echo",
            command='echo {{.prefix}}"$DEPLOY_TOKEN"; env',
            parameters={"type": "object", "properties": {"prefix": {"type": "string"}}},
            env={"DEPLOY_TOKEN": SECRET},
        )
        assert (
            entry.env == ["DEPLOY_TOKEN"]
            and SECRET not in msgspec.json.encode(entry.to_dict()).decode()
        )
        await system.register_agent(AgentConfig(key="main"), model)
        assert await system.send("main", "u", "go") == "done"
        events = await system.store.read_all(1, 10_000)
    results = {
        getattr(e.event, "call_id", ""): e.event for e in events if e.type == "tool.call_completed"
    }
    assert digest in results["c1"].for_llm  # type: ignore[attr-defined]
    echoed = results["c2"].for_llm  # type: ignore[attr-defined]
    assert "token:[REDACTED]" in echoed and "DEPLOY_TOKEN=[REDACTED]" in echoed
    for recorded in events:
        assert SECRET not in msgspec.json.encode(msgspec.to_builtins(recorded.event)).decode()
    definitions = [e.event for e in events if isinstance(e.event, CustomToolDefined)]
    assert definitions and all(d.env and d.key_id for d in definitions)
    for request in model.requests:
        assert SECRET not in msgspec.json.encode(msgspec.to_builtins(request)).decode()
    raw = _log_bytes(tmp_path)
    assert SECRET.encode() not in raw and b"DEPLOY_TOKEN" in raw


async def _call_after_restart(tmp_path: Path) -> str:
    model = ScriptedModel([call("deploy", call_id="c1"), reply("done")])
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        assert await system.send("main", "u", "go") == "done"
        failed = [
            e.event
            for e in await system.store.read_stream("session/main/u")
            if e.type == "tool.call_failed"
        ]
    assert len(failed) == 1
    return failed[0].message  # type: ignore[attr-defined,no-any-return]


async def test_a_restart_with_another_key_fails_the_calls_naming_the_tool(
    tmp_path: Path,
    secret_key: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    marker = tmp_path / "ran"
    async with System.open(tmp_path / "log.db") as system:
        await system.define_tool("deploy", command=f"touch {marker}", env={"TOKEN": SECRET})
    monkeypatch.setenv(SECRET_KEY_ENV, generate_secret_key())
    caplog.set_level(logging.WARNING, logger="clawlog")
    message = await _call_after_restart(tmp_path)
    assert "custom tool 'deploy' was not run" in message and "another key" in message
    assert not marker.exists()
    warnings = [r for r in caplog.records if r.name.startswith("clawlog.tools.custom")]
    assert warnings and "deploy" in warnings[0].getMessage()
    assert all(r.exc_info is None for r in caplog.records)


async def test_a_restart_without_the_key_fails_the_calls_naming_the_tool(
    tmp_path: Path, secret_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.define_tool("deploy", command="true", env={"TOKEN": SECRET})
    monkeypatch.delenv(SECRET_KEY_ENV)
    message = await _call_after_restart(tmp_path)
    assert "custom tool 'deploy' was not run" in message
    assert f"{SECRET_KEY_ENV} is not set" in message

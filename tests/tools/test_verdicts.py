"""Every decided call records its verdict (deciding step, rule, digest of the effective
policy) in the events it already had; the digest names a configuration stably."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clawlog.events import open_store
from clawlog.events.domain.tool import ToolCallRefused, ToolCallStarted
from clawlog.tools import (
    ApprovalConfig,
    FunctionTool,
    PolicyConfig,
    ProviderToolPolicy,
    ToolContext,
    ToolPipeline,
    ToolPolicy,
    ToolRegistry,
)
from clawlog.tools.driver import RecordingSink, run_tool_call
from clawlog.tools.policy import PolicyEngine, policy_digest

from .support import CountingTool, ShellTool
from .what_if_log import CALLS, record_log

#: The pipeline's events per call before verdicts: recording them adds none.
CALL_EVENT_TYPES = {
    "tool.call_requested",
    "tool.call_refused",
    "tool.approval_requested",
    "tool.approval_decided",
    "tool.call_started",
    "tool.call_completed",
    "tool.call_failed",
}


@pytest.fixture(scope="module")
def recorded_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("verdicts") / "log.db"
    asyncio.run(record_log(path))
    return path


async def test_every_decided_call_of_a_system_run_records_its_verdict(recorded_log: Path) -> None:
    async with await open_store(recorded_log) as store:
        events = await store.read_all(1, 10_000, stream_prefix="session/")
    endings = {
        e.stream.rsplit("/", 1)[1]: e.event
        for e in events
        if isinstance(e.event, ToolCallRefused | ToolCallStarted)
    }
    assert set(endings) == set(CALLS)
    digests = {ending.policy_digest for ending in endings.values()}
    assert len(digests) == 1 and len(digests.pop()) == 32  # one configuration decided all
    verdicts = {
        session: (type(e).__name__, e.step, e.rule, getattr(e, "approved_by", None))
        for session, e in endings.items()
    }
    assert verdicts == {
        "s-echo": ("ToolCallStarted", "policy", "no policy step removed it", ""),
        "s-time": (
            "ToolCallRefused",
            "policy",
            "agent_deny: agents.main.deny has 'time'",
            None,
        ),
        "s-ls": ("ToolCallStarted", "policy", "no policy step removed it", ""),
        "s-rm": ("ToolCallRefused", "approval", "deny pattern 'rm -rf'", None),
        "s-ok": ("ToolCallStarted", "approval", "allow-once by ops", "ops"),
        "s-no": ("ToolCallRefused", "approval", "denied by ops", None),
        "s-bad": ("ToolCallRefused", "validation", "schema: type at #/target", None),
        "s-none": ("ToolCallRefused", "resolve", "unknown tool", None),
    }
    tool_types = {e.type for e in events if e.type.startswith("tool.")}
    assert tool_types <= CALL_EVENT_TYPES  # the verdict rides on events the call had


async def _noop(ctx: ToolContext, args: dict[str, Any]) -> str:
    return "done"


FORM = FunctionTool(
    "form",
    _noop,
    parameters={
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "integer"}},
            "a/b": {"type": "object", "properties": {"x~y": {"enum": [1]}}},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
)


@pytest.mark.parametrize(
    ("tool", "arguments", "step", "rule"),
    [
        ("nosuch", {}, "resolve", "unknown tool"),
        ("form", "not json", "validation", "arguments: not a JSON object"),
        ("form", "[1, 2]", "validation", "arguments: not a JSON object"),
        ("form", {}, "validation", "schema: required at #"),
        ("form", {"name": 7}, "validation", "schema: type at #/name"),
        ("form", {"name": "n", "tags": [1, "x"]}, "validation", "schema: type at #/tags/1"),
        ("form", {"name": "n", "a/b": {"x~y": 2}}, "validation", "schema: enum at #/a~1b/x~0y"),
        ("form", {"name": "n", "other": 1}, "validation", "schema: additionalProperties at #"),
    ],
)
async def test_a_refusal_before_the_policy_or_at_validation_names_its_rule(
    tool: str, arguments: dict[str, Any] | str, step: str, rule: str
) -> None:
    """Resolve and validation refusals record a rule as every other step does: the
    unknown tool, the arguments that are no JSON object, the schema keyword that failed
    and where (a JSON pointer into the arguments, in its URI fragment form)."""
    pipeline = ToolPipeline(ToolRegistry([FORM]))
    sink = RecordingSink()
    ctx = ToolContext(agent="main", session_key="s")
    await run_tool_call(pipeline, ctx, tool, arguments, sink, call_id="c1")
    [refused] = [e for e in sink.events if isinstance(e, ToolCallRefused)]
    assert (refused.step, refused.rule) == (step, rule)
    assert refused.policy_digest == pipeline.policy_digest("main")


async def test_the_recorded_digest_is_the_agents_effective_policy(recorded_log: Path) -> None:
    async with await open_store(recorded_log) as store:
        [started] = await store.read_all(1, 1, types=["tool.call_started"])
    expected = policy_digest(
        PolicyConfig(agents={"main": ToolPolicy(profile="full", deny=["time"])}),
        ApprovalConfig(),
        agent="main",
    )
    assert started.event.policy_digest == expected  # type: ignore[union-attr]


async def test_an_allowlisted_call_records_the_allowlist_entry() -> None:
    shell = ShellTool()
    pipeline = ToolPipeline(
        ToolRegistry([shell]), approval_config=ApprovalConfig(security="allowlist", ask="off")
    )
    ctx = ToolContext(agent="main", session_key="s")
    for event in pipeline.allowlist_change("main", "exec", "git status*"):
        pipeline.apply(event)
    sink = RecordingSink()
    await run_tool_call(pipeline, ctx, "exec", {"command": "git status"}, sink, call_id="c1")
    [started] = [e for e in sink.events if isinstance(e, ToolCallStarted)]
    assert (started.step, started.rule) == ("approval", "allowlist 'git status*'")
    assert started.policy_digest == pipeline.policy_digest("main")


async def test_a_new_policy_on_the_pipeline_gets_a_new_digest() -> None:
    pipeline = ToolPipeline(ToolRegistry([CountingTool()]))
    before = pipeline.policy_digest("main")
    pipeline.policy = PolicyEngine(PolicyConfig(tools=ToolPolicy(deny=["counter"])))
    sink = RecordingSink()
    ctx = ToolContext(agent="main", session_key="s")
    await run_tool_call(pipeline, ctx, "counter", {}, sink, call_id="c1")
    [refused] = [e for e in sink.events if isinstance(e, ToolCallRefused)]
    assert refused.policy_digest == pipeline.policy_digest("main") != before


# -- the digest ---------------------------------------------------------------------------
STRICT = PolicyConfig(
    tools=ToolPolicy(profile="coding", deny=["exec", "group:web"]),
    agents={"lead": ToolPolicy(allow=["echo"]), "other": ToolPolicy(deny=["time"])},
    users={"telegram:1": ["echo"]},
)


def test_the_same_configuration_has_the_same_digest_in_another_process() -> None:
    code = (
        "from clawlog.tools import PolicyConfig, ToolPolicy, ApprovalConfig\n"
        "from clawlog.tools.policy import policy_digest\n"
        "c = PolicyConfig(tools=ToolPolicy(profile='coding', deny=['exec', 'group:web']),"
        " agents={'lead': ToolPolicy(allow=['echo']), 'other': ToolPolicy(deny=['time'])},"
        " users={'telegram:1': ['echo']})\n"
        "print(policy_digest(c, ApprovalConfig(ask='off'), agent='lead'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    here = policy_digest(STRICT, ApprovalConfig(ask="off"), agent="lead")
    assert done.stdout.strip() == here


def test_defaults_spelled_out_or_left_out_give_the_same_digest() -> None:
    spelled = PolicyConfig(
        tools=ToolPolicy(also_allow=[], deny=[], by_provider={}),
        subagent_deny=list(PolicyConfig().subagent_deny),
    )
    assert policy_digest(spelled, ApprovalConfig()) == policy_digest(
        PolicyConfig(), ApprovalConfig(security="full", ask="on-miss")
    )


@pytest.mark.parametrize(
    "changed",
    [
        PolicyConfig(tools=ToolPolicy(profile="coding", deny=["exec"])),
        PolicyConfig(tools=ToolPolicy(profile="minimal", deny=["exec", "group:web"])),
        PolicyConfig(
            tools=ToolPolicy(
                profile="coding",
                deny=["exec", "group:web"],
                by_provider={"openai": ProviderToolPolicy(deny=["http"])},
            )
        ),
        PolicyConfig(tools=STRICT.tools, agents={"lead": ToolPolicy(allow=["echo", "time"])}),
        PolicyConfig(tools=STRICT.tools, agents=STRICT.agents, owner_only=[]),
    ],
)
def test_a_change_that_decides_differently_changes_the_digest(changed: PolicyConfig) -> None:
    assert policy_digest(changed, agent="lead") != policy_digest(STRICT, agent="lead")


def test_an_agents_digest_ignores_the_other_agents_sections() -> None:
    others_changed = PolicyConfig(
        tools=STRICT.tools, agents={**STRICT.agents, "other": ToolPolicy()}, users=STRICT.users
    )
    assert policy_digest(others_changed, agent="lead") == policy_digest(STRICT, agent="lead")
    assert policy_digest(others_changed) != policy_digest(STRICT)  # the whole config


def test_the_approvals_config_is_part_of_the_digest() -> None:
    assert policy_digest(STRICT, ApprovalConfig()) != policy_digest(
        STRICT, ApprovalConfig(security="allowlist")
    )
    assert policy_digest(STRICT, ApprovalConfig()) != policy_digest(STRICT)

"""``clawlog tools``: the custom tools a log defines, for people and with --json, env names
and never values; ``--agent`` shows what one agent gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clawlog import System
from tests.cli.support import clawlog

from .support import string_schema

SECRET = "value-that-must-never-print-5f2e"


@pytest.fixture
async def log(tmp_path: Path, secret_key: str) -> Path:
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        await system.define_tool(
            "dns_lookup",
            command="dig +short {{.record_type}} {{.domain}}",
            description="Look up DNS records",
            parameters=string_schema("domain", "record_type", required=("domain",)),
            env={"DNS_TOKEN": SECRET, "DNS_REGION": "eu-west-1"},
            timeout_s=10,
        )
        await system.define_tool("ops_only", command="uptime", agent="ops", enabled=False)
        await system.define_tool("gone", command="true")
        await system.remove_tool("gone")
    return path


async def test_the_listing_for_people_is_one_line_per_tool(log: Path) -> None:
    done = clawlog("tools", "--db", str(log))
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout
    header, *rows = done.stdout.splitlines()
    assert header.split("\t") == [
        "tool",
        "scope",
        "group",
        "enabled",
        "command",
        "parameters",
        "env",
        "timeout",
        "defined at",
        "since",
    ]
    cells = [row.split("\t") for row in rows]
    assert [c[:4] for c in cells] == [
        ["dns_lookup", "global", "custom", "yes"],
        ["ops_only", "agent:ops", "custom", "no"],
    ]
    dns = cells[0]
    assert dns[4] == "dig +short {{.record_type}} {{.domain}}"
    assert dns[5] == "domain: string*, record_type: string"
    assert dns[6] == "DNS_REGION, DNS_TOKEN" and dns[7] == "10 s" and int(dns[8]) > 0


async def test_json_lists_the_definitions_with_env_names_only(log: Path) -> None:
    done = clawlog("tools", "--db", str(log), "--json")
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout
    tools = json.loads(done.stdout)
    assert [(t["name"], t["scope"], t["enabled"]) for t in tools] == [
        ("dns_lookup", "global", True),
        ("ops_only", "agent:ops", False),
    ]
    dns = tools[0]
    assert dns["env"] == ["DNS_REGION", "DNS_TOKEN"] and dns["group"] == "custom"
    assert dns["parameters"]["required"] == ["domain"] and dns["timeout_s"] == 10.0
    assert dns["description"] == "Look up DNS records" and dns["position"] < tools[1]["position"]
    assert "definition" not in dns


async def test_agent_shows_the_global_tools_and_its_own(log: Path) -> None:
    ops = json.loads(clawlog("tools", "--db", str(log), "--json", "--agent", "ops").stdout)
    assert [t["name"] for t in ops] == ["dns_lookup", "ops_only"]
    other = json.loads(clawlog("tools", "--db", str(log), "--json", "--agent", "main").stdout)
    assert [t["name"] for t in other] == ["dns_lookup"]


async def test_a_log_without_custom_tools_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    async with System.open(path):
        pass
    assert json.loads(clawlog("tools", "--db", str(path), "--json").stdout) == []
    done = clawlog("tools", "--db", str(path))
    assert done.returncode == 0 and done.stdout.splitlines()[0].startswith("tool\tscope")


async def test_since_and_limit_choose_among_the_definitions(log: Path) -> None:
    every = json.loads(clawlog("tools", "--db", str(log), "--json").stdout)
    later = every[1]["position"]
    since = clawlog("tools", "--db", str(log), "--json", "--since", str(later))
    assert [t["name"] for t in json.loads(since.stdout)] == ["ops_only"]
    first = clawlog("tools", "--db", str(log), "--json", "--limit", "1")
    assert [t["name"] for t in json.loads(first.stdout)] == ["dns_lookup"]
    future = clawlog("tools", "--db", str(log), "--json", "--since", "2100-01-01")
    assert json.loads(future.stdout) == []

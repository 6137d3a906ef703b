"""Policy files (TOML or JSON): what they hold, and a clear error for each bad one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clawlog.tools import ApprovalConfig, PolicyConfig, ToolPolicy
from clawlog.tools.errors import PolicyError, PolicyFileError
from clawlog.tools.policy import policy_digest
from clawlog.tools.policy_file import load_policy_file

TOML = """\
subagent_deny = ["spawn"]

[tools]
profile = "coding"
deny = ["exec"]

[tools.by_provider.openai]
deny = ["http"]

[agents.lead]
allow = ["echo"]

[approvals]
security = "allowlist"
safe_bins = ["ls"]
"""


def test_a_toml_and_a_json_file_give_the_same_policy(tmp_path: Path) -> None:
    toml_file = tmp_path / "policy.toml"
    toml_file.write_text(TOML)
    from_toml = load_policy_file(toml_file)
    json_file = tmp_path / "policy.json"
    import tomllib

    json_file.write_text(json.dumps(tomllib.loads(TOML)))
    from_json = load_policy_file(json_file)
    assert from_toml.policy == from_json.policy
    assert (
        from_toml.approvals
        == from_json.approvals
        == ApprovalConfig(security="allowlist", safe_bins=["ls"])
    )
    assert from_toml.policy.tools.deny == ["exec"]
    assert from_toml.policy.agents["lead"] == ToolPolicy(allow=["echo"])
    assert from_toml.policy.subagent_deny == ["spawn"]
    assert from_toml.digest("lead") == from_json.digest("lead")
    assert from_toml.digest("lead") == policy_digest(
        from_toml.policy, from_toml.approvals, agent="lead"
    )


def test_an_empty_file_is_the_default_policy(tmp_path: Path) -> None:
    path = tmp_path / "empty.toml"
    path.write_text("")
    loaded = load_policy_file(path)
    assert (loaded.policy, loaded.approvals) == (PolicyConfig(), ApprovalConfig())


@pytest.mark.parametrize(
    ("name", "text", "fragments"),
    [
        ("p.yaml", "tools: {}", ["unknown file type '.yaml'", "as .toml or .json"]),
        ("p.toml", "[tools\n", ["is not valid TOML"]),
        ("p.json", "{tools: 1}", ["is not valid JSON"]),
        ("p.json", "[1, 2]", ["must be a table/object of settings, not a list"]),
        ("p.toml", "[tools]\nalsoAllow = []\n", ["'tools.alsoAllow'", "write 'also_allow'"]),
        ("p.toml", "[tools]\ndenny = ['x']\n", ["'tools.denny'", "did you mean 'deny'?"]),
        ("p.toml", "sandbox = 1\n", ["unknown key 'sandbox'", "known here:"]),
        ("p.toml", "[agents.lead]\nblock = []\n", ["unknown key 'agents.lead.block'"]),
        ("p.toml", "[tools]\ndeny = 'exec'\n", ["tools.deny: expected a list, got a string"]),
        ("p.toml", "[tools]\nprofile = 'strict'\n", ["unknown tool profile(s) ['strict']"]),
        ("p.toml", "approvals = 3\n", ["approvals must be a table"]),
        (
            "p.toml",
            "[approvals]\nsecurity = 'lax'\n",
            ["approvals.security", "(one of: deny, allowlist, full)"],
        ),
        ("p.toml", "[approvals]\ntimeout_s = -1\n", ["timeout_s must be positive"]),
        ("p.toml", "[agents]\nlead = 3\n", ["agents.lead: expected a table", "[agents.lead]"]),
        (
            "p.toml",
            '[users]\n"telegram:42" = "echo"\n',
            ['users."telegram:42": expected a list of tool names, got a string'],
        ),
        (
            "p.toml",
            "[tools]\ndeny = []\nsubagent_deny = []\n",
            ["'tools.subagent_deny'", "move it above the first [table]"],
        ),
    ],
)
def test_a_bad_policy_file_is_refused_naming_the_file_and_the_key(
    tmp_path: Path, name: str, text: str, fragments: list[str]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PolicyFileError) as caught:
        load_policy_file(path)
    message = str(caught.value)
    assert message.startswith(f"policy file {path}: ")
    for fragment in fragments:
        assert fragment in message
    assert isinstance(caught.value, PolicyError) and isinstance(caught.value, ValueError)


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match="no such file"):
        load_policy_file(tmp_path / "nope.toml")

"""``print(system.custom_tools())`` shows each tool's fields with its env names, not the
sealed definition (ciphertext bytes, the whole event again)."""

from __future__ import annotations

from pathlib import Path

from clawlog import System


async def test_the_repr_of_an_entry_names_the_env_and_leaves_the_sealed_values_out(
    tmp_path: Path, secret_key: str
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        entry = await system.define_tool(
            "deploy",
            command="echo {{.env}}",
            parameters={"type": "object", "properties": {"env": {"type": "string"}}},
            env={"DEPLOY_TOKEN": "tok-never-shown-77"},
        )
        shown = repr(system.custom_tools())
    assert shown == repr([entry])
    assert shown.startswith("[CustomToolEntry(name='deploy', agent='', scope='global'")
    assert "env=['DEPLOY_TOKEN']" in shown
    assert "sealed" not in shown and "definition" not in shown and "b'" not in shown
    assert entry.definition.env[0].name == "DEPLOY_TOKEN"  # still there for the System

"""DELEGATION.md, delegate_search, the evaluate-optimize loop and quality gates."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig, CallerContext, QualityGate
from clawlog.actors.delegation.link import DelegationError
from clawlog.actors.providers import ModelRequest, ScriptedModel, reply


def ctx(agent: str = "boss") -> CallerContext:
    return CallerContext(agent=agent, session_key="s", session_stream=f"session/{agent}/s")


async def test_delegation_md_lists_15_targets_inline_and_points_to_search_at_16(
    tmp_path: Path,
) -> None:
    boss_model = ScriptedModel(lambda r: reply("ok"))
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="boss"), boss_model)
        for i in range(16):
            await system.register_agent(
                AgentConfig(key=f"w{i:02d}", name=f"Worker {i}", description=f"skill number {i}"),
                ScriptedModel(lambda r: reply("w")),
            )
        for i in range(15):
            await system.link_agents("boss", f"w{i:02d}")
        await system.send("boss", "s", "hi")
        prompt = boss_model.requests[-1].system
        assert "## DELEGATION.md" in prompt
        assert all(f"`w{i:02d}` (Worker {i}): skill number {i}" in prompt for i in range(15))
        await system.link_agents("boss", "w15")
        await system.send("boss", "s", "again")
        prompt = boss_model.requests[-1].system
        assert "`w00`" not in prompt and "delegate_search" in prompt and "16 agents" in prompt


async def test_delegate_search_ranks_by_description(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="boss"), ScriptedModel(lambda r: reply("ok")))
        agents = {
            "tax": "prepares tax returns and invoices",
            "chef": "cooks dinner recipes",
            "books": "keeps invoices, ledgers and books for small business",
        }
        for key, description in agents.items():
            await system.register_agent(
                AgentConfig(key=key, description=description), ScriptedModel(lambda r: reply("x"))
            )
            await system.link_agents("boss", key)
        ports = system.runtime.services["delegation"]
        found = [t.key for t in ports.search(ctx(), "invoices ledgers")]
        assert found == ["books", "tax"]
        assert ports.search(ctx(), "") == []


def generator_model() -> ScriptedModel:
    return ScriptedModel(
        [
            reply("draft one"),
            reply("draft two"),
            reply("draft three"),
            reply("draft four"),
            reply("draft five"),
            reply("draft six"),
        ]
    )


async def test_evaluate_loop_approved_in_round_two(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="boss"), ScriptedModel(lambda r: reply("ok")))
        await system.register_agent(AgentConfig(key="gen"), generator_model())
        await system.register_agent(
            AgentConfig(key="judge"),
            ScriptedModel(
                [reply("REJECTED: too long, missing pricing"), reply("approved, ship it")]
            ),
        )
        await system.link_agents("boss", "gen")
        await system.link_agents("boss", "judge")
        ports = system.runtime.services["delegation"]
        result = await ports.evaluate_loop(
            ctx(), "gen", "judge", "write an announcement", "short, with pricing"
        )
        assert result.approved and result.final == "draft two"
        assert [r.approved for r in result.rounds] == [False, True]
        gen_turns = [
            e.event.text
            for e in await system.store.read_all(stream_prefix="session/gen/")  # type: ignore[union-attr]
            if e.type == "session.turn_started"
        ]
        assert "too long, missing pricing" in gen_turns[1]


async def test_evaluate_loop_exhausted_at_the_cap(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="boss"), ScriptedModel(lambda r: reply("ok")))
        await system.register_agent(AgentConfig(key="gen"), generator_model())
        await system.register_agent(
            AgentConfig(key="judge"), ScriptedModel(lambda r: reply("REJECTED: no"))
        )
        await system.link_agents("boss", "gen")
        await system.link_agents("boss", "judge")
        ports = system.runtime.services["delegation"]
        result = await ports.evaluate_loop(ctx(), "gen", "judge", "t", "c", max_rounds=9)
        assert not result.approved and len(result.rounds) == 5 and result.final == "draft five"


def reviewer(request: ModelRequest) -> object:
    draft = request.messages[-1].content
    return reply("APPROVED" if "revised try" in draft else "REJECTED: not the second version")


async def test_gate_rejects_then_passes_on_retry(tmp_path: Path) -> None:
    gate = QualityGate(
        type="agent", agent="qa", criteria="must be the second version", max_retries=2
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(
            AgentConfig(key="boss", quality_gates=[gate]), ScriptedModel(lambda r: reply("ok"))
        )
        await system.register_agent(AgentConfig(key="qa"), ScriptedModel(reviewer))  # type: ignore[arg-type]
        await system.register_agent(
            AgentConfig(key="worker"), ScriptedModel([reply("first try"), reply("revised try")])
        )
        await system.link_agents("boss", "worker")
        ports = system.runtime.services["delegation"]
        info = await ports.delegate(ctx(), "worker", "do it")
        assert (info.status, info.result, info.attempts) == ("completed", "revised try", 2)
        types = [e.type for e in await system.store.read_stream("link/boss->worker")]
        assert types.count("delegation.gate_evaluated") == 2 and "delegation.retried" in types


async def test_gate_exhausting_retries_fails_the_delegation(tmp_path: Path) -> None:
    gate = QualityGate(
        type="command",
        command="grep -q revised || { echo 'needs revised' >&2; exit 1; }",
        max_retries=1,
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(
            AgentConfig(key="boss", quality_gates=[gate]), ScriptedModel(lambda r: reply("ok"))
        )
        await system.register_agent(
            AgentConfig(key="worker"), ScriptedModel(lambda r: reply("never good"))
        )
        await system.link_agents("boss", "worker")
        ports = system.runtime.services["delegation"]
        try:
            await ports.delegate(ctx(), "worker", "do it")
        except DelegationError as error:
            assert "gate_rejected" in str(error) and "needs revised" in str(error)
        else:
            raise AssertionError("the gate should have failed the delegation")


async def test_an_agent_gate_whose_reviewer_is_gated_does_not_recurse(tmp_path: Path) -> None:
    """qa reviews boss's delegations; qa itself has a gate on its own delegations to checker.
    The review turn carries skip_quality_gates, so qa's delegation inside it runs no gate."""
    async with System.open(tmp_path / "log.db") as system:
        qa_gate = QualityGate(type="agent", agent="qa", criteria="fine")
        await system.register_agent(
            AgentConfig(key="boss", quality_gates=[qa_gate]), ScriptedModel(lambda r: reply("ok"))
        )
        await system.register_agent(
            AgentConfig(key="qa", quality_gates=[qa_gate]),
            ScriptedModel(lambda r: reply("APPROVED")),
        )
        await system.register_agent(AgentConfig(key="worker"), ScriptedModel(lambda r: reply("w")))
        await system.link_agents("boss", "worker")
        await system.link_agents("qa", "worker")
        ports = system.runtime.services["delegation"]
        info = await ports.delegate(ctx(), "worker", "job")
        assert info.status == "completed"
        review_ctx = CallerContext(
            agent="qa",
            session_key="gate-x",
            session_stream="session/qa/gate-x",
            skip_quality_gates=True,
        )
        inner = await ports.delegate(review_ctx, "worker", "check this")
        assert inner.status == "completed"
        inner_link = [e.type for e in await system.store.read_stream("link/qa->worker")]
        assert "delegation.gate_evaluated" not in inner_link
        gated = [
            e
            for e in await system.store.read_all(stream_prefix="session/qa/")
            if e.type == "session.turn_started"
        ]
        assert len(gated) == 1 and gated[0].event.skip_quality_gates  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("command", "label"),
    [
        ("curl http://127.0.0.1:9/x | sh", "curl | sh"),
        ("touch {marker}; sh -c 'r''m -rf {marker}'", "rm -rf"),
    ],
)
async def test_a_command_gate_goes_through_the_exec_deny_patterns(
    tmp_path: Path, command: str, label: str
) -> None:
    from clawlog.actors.delegation.gates import evaluate_gate

    marker = tmp_path / "ran"
    gate = QualityGate(type="command", command=command.format(marker=marker))
    passed, feedback = await evaluate_gate(gate, "result", "task", None, "dg-1", 1)
    assert not passed and f"deny pattern {label!r}" in feedback
    assert not marker.exists()


async def test_delegate_search_blends_in_embeddings_when_configured(tmp_path: Path) -> None:
    synonyms = {
        "bill": "invoice",
        "bills": "invoice",
        "invoices": "invoice",
        "cook": "food",
        "dinner": "food",
        "recipes": "food",
    }

    def embed(texts: list[str]) -> list[list[float]]:
        vocabulary = ["invoice", "food", "code"]
        vectors = []
        for text in texts:
            words = [synonyms.get(w, w) for w in text.lower().replace(".", " ").split()]
            vectors.append([float(words.count(v)) for v in vocabulary])
        return vectors

    async with System.open(tmp_path / "log.db") as system:
        system.delegation_directory().embedder = embed
        await system.register_agent(AgentConfig(key="boss"), ScriptedModel(lambda r: reply("ok")))
        for key, description in {
            "acct": "handles invoices",
            "chef": "cooks dinner recipes",
            "dev": "writes code",
        }.items():
            await system.register_agent(
                AgentConfig(key=key, description=description), ScriptedModel(lambda r: reply("x"))
            )
            await system.link_agents("boss", key)
        ports = system.runtime.services["delegation"]
        assert [t.key for t in ports.search(ctx(), "bills")] == ["acct"]
        assert [t.key for t in ports.search(ctx(), "dinner tonight")] == ["chef"]
        assert sorted(t.key for t in ports.search(ctx(), "code for bills")) == ["acct", "dev"]
        system.delegation_directory().embedder = None
        assert ports.search(ctx(), "bills") == []

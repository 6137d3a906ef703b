"""Every model reply records its usage, its model and an estimated cost from the catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.agents.context_size import estimate_tokens, prompt_chars
from clawlog.actors.errors import ArgumentTypeError, InvalidArgument
from clawlog.actors.providers import ModelReply, ScriptedModel, Usage
from clawlog.actors.providers.catalog import (
    DEFAULT_CONTEXT_WINDOW,
    PRICES_AS_OF,
    ModelCatalog,
    ModelSpec,
)
from clawlog.events.domain.session import ModelReplied


async def replies(system: System, stream: str) -> list[ModelReplied]:
    events = await system.store.read_stream(stream)
    return [e.event for e in events if isinstance(e.event, ModelReplied)]


async def test_reported_usage_model_and_cost_are_recorded(tmp_path: Path) -> None:
    usage = Usage(
        input_tokens=1000,
        output_tokens=200,
        cached_input_tokens=400,
        reasoning_tokens=50,
    )
    model = ScriptedModel(
        [ModelReply(text="hi", stop_reason="stop", usage=usage, model="gpt-4o-2024-08-06")],
        name="gpt-4o",
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        assert await system.send("main", "u", "hello") == "hi"
        [recorded] = await replies(system, "session/main/u")
    assert recorded.usage == usage and not recorded.usage.estimated
    assert recorded.model == "gpt-4o-2024-08-06"  # as the provider named it
    # gpt-4o: $2.50 input, $1.25 cached input, $10 output per million tokens.
    assert recorded.cost_usd == pytest.approx((600 * 2.50 + 400 * 1.25 + 200 * 10.00) / 1e6)


async def test_a_reply_without_usage_is_estimated_locally(tmp_path: Path) -> None:
    model = ScriptedModel([ModelReply(text="twelve chars", stop_reason="stop")], name="gpt-4o")
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        await system.send("main", "u", "hello")
        [recorded] = await replies(system, "session/main/u")
    assert recorded.usage.estimated
    request = model.requests[0]  # the session's first: no reply calibrated its measure yet
    chars = prompt_chars(request.system, request.tools, request.messages)
    assert recorded.usage.input_tokens == estimate_tokens(chars, 0) > 0
    assert recorded.usage.output_tokens == estimate_tokens(len("twelve chars"), 0) == 3
    assert recorded.model == "gpt-4o"  # the reply named none: the requested one
    assert recorded.cost_usd is not None and recorded.cost_usd > 0


async def test_a_model_without_a_price_records_no_cost(tmp_path: Path) -> None:
    usage = Usage(input_tokens=10, output_tokens=5)
    model = ScriptedModel([ModelReply(text="ok", usage=usage)], name="my-local-llm")
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        await system.send("main", "u", "hello")
        [recorded] = await replies(system, "session/main/u")
    assert recorded.model == "my-local-llm" and recorded.cost_usd is None


async def test_the_application_prices_its_own_models(tmp_path: Path) -> None:
    spec = ModelSpec(
        name="my-local-llm",
        context_window=32_000,
        max_output_tokens=4_000,
        input_usd_per_mtok=1.0,
        output_usd_per_mtok=3.0,
    )
    catalog = ModelCatalog.default().with_models(spec)
    usage = Usage(input_tokens=2_000_000, output_tokens=1_000_000)
    model = ScriptedModel([ModelReply(text="ok", usage=usage)], name="my-local-llm")
    async with System.open(tmp_path / "log.db", model_catalog=catalog) as system:
        await system.register_agent(AgentConfig(key="main"), model)
        await system.send("main", "u", "hello")
        [recorded] = await replies(system, "session/main/u")
    assert recorded.cost_usd == pytest.approx(2.0 + 3.0)


def test_catalog_lookup_finds_dated_snapshots_aliases_and_routed_names() -> None:
    catalog = ModelCatalog.default()
    assert PRICES_AS_OF  # the defaults say when their prices were taken
    found = {
        name: spec.name if (spec := catalog.lookup(name)) else None
        for name in (
            "gpt-4o-2024-08-06",
            "gpt-4o-mini-2024-07-18",
            "claude-sonnet-4-5-20250929",
            "claude-sonnet-4-20250514",
            "chatgpt-4o-latest",
            "openai/gpt-4.1-mini",
            "o3-mini",
            "gpt-4o1",  # not a family boundary
            "llama3",
            # Priced far from their family prefix: listed on their own.
            "o1-mini-2024-09-12",
            "o3-pro-2025-06-10",
            "GPT-4o",  # another case
        )
    }
    assert found == {
        "gpt-4o-2024-08-06": "gpt-4o",
        "gpt-4o-mini-2024-07-18": "gpt-4o-mini",
        "claude-sonnet-4-5-20250929": "claude-sonnet-4-5",
        "claude-sonnet-4-20250514": "claude-sonnet-4",
        "chatgpt-4o-latest": "gpt-4o",
        "openai/gpt-4.1-mini": "gpt-4.1-mini",
        "o3-mini": "o3-mini",
        "gpt-4o1": None,
        "llama3": None,
        "o1-mini-2024-09-12": "o1-mini",
        "o3-pro-2025-06-10": "o3-pro",
        "GPT-4o": "gpt-4o",
    }
    assert catalog.context_window("claude-sonnet-4-20250514") == 200_000
    assert catalog.context_window("llama3") == DEFAULT_CONTEXT_WINDOW


def test_anthropic_cache_writes_and_reads_have_their_own_prices() -> None:
    spec = ModelCatalog.default().lookup("claude-sonnet-4-5")
    assert spec is not None
    usage = Usage(
        input_tokens=10_000, cached_input_tokens=6_000, cache_write_tokens=3_000, output_tokens=100
    )
    expected = (1_000 * 3.00 + 6_000 * 0.30 + 3_000 * 3.75 + 100 * 15.00) / 1e6
    assert spec.cost_usd(usage) == pytest.approx(expected)


def test_an_overridden_model_replaces_the_default() -> None:
    cheaper = ModelSpec(
        name="gpt-4o",
        context_window=128_000,
        max_output_tokens=16_384,
        input_usd_per_mtok=1.0,
        output_usd_per_mtok=1.0,
    )
    catalog = ModelCatalog.default().with_models(cheaper)
    assert catalog.cost_usd("gpt-4o-2024-08-06", Usage(input_tokens=10**6)) == 1.0
    assert ModelCatalog.default().cost_usd("gpt-4o", Usage(input_tokens=10**6)) == 2.5


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"context_window": 0}, "context_window"),
        ({"max_output_tokens": -1}, "max_output_tokens"),
        ({"input_usd_per_mtok": -0.5}, "input_usd_per_mtok"),
        ({"output_usd_per_mtok": float("nan")}, "output_usd_per_mtok"),
        ({"name": " "}, "name"),
        ({"context_window": "8000"}, r"context_window: must be a whole number of tokens \(int\)"),
        ({"max_output_tokens": 1.5}, r"max_output_tokens: must be a whole number"),
        ({"max_output_tokens": 2000}, r"max_output_tokens: is 2000, more than the context window"),
        ({"input_usd_per_mtok": "2.5"}, r"input_usd_per_mtok: must be a price in US dollars"),
    ],
)
def test_a_bad_model_spec_is_refused_naming_the_field(
    fields: dict[str, object], named: str
) -> None:
    base: dict[str, object] = {"name": "m", "context_window": 1000, "max_output_tokens": 100}
    with pytest.raises(InvalidArgument, match=named):
        ModelSpec(**(base | fields))  # type: ignore[arg-type]


def test_an_alias_to_an_unknown_model_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="not hold"):
        ModelCatalog([], aliases={"fast": "gpt-9"})
    with pytest.raises(ArgumentTypeError, match="aliases: must be a mapping"):
        ModelCatalog.default().with_models(aliases="gpt-4o")  # type: ignore[arg-type]


async def test_open_refuses_a_catalog_or_budgets_of_the_wrong_type(tmp_path: Path) -> None:
    with pytest.raises(ArgumentTypeError, match="model_catalog"):
        System.open(tmp_path / "log.db", model_catalog={"gpt-4o": 1})  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="budgets"):
        System.open(tmp_path / "log.db", budgets=100)  # type: ignore[arg-type]
    assert not (tmp_path / "log.db").exists()  # refused before anything opened

"""What clawlog knows about models: context windows, output limits and prices.

The session reads a model's ``context_window`` (compaction) and prices (the estimated cost
recorded on every ``session.model_replied``). The defaults cover common OpenAI and
Anthropic models with list prices in US dollars per million tokens as published on
:data:`PRICES_AS_OF`: they are ESTIMATES (providers change prices, discount batches, and
bill some features apart), never an invoice. The application passes its own catalog to
``System.open(model_catalog=...)``, built from the defaults with models added or
overridden (``ModelCatalog.default().with_models(ModelSpec(...))``) or from scratch.

Lookup by name: an exact name, then an alias, then the longest catalog name that is a
prefix of the asked name up to a ``-``, ``@``, ``:`` or ``.`` boundary, so dated
snapshots (``gpt-4o-2024-08-06``, ``claude-sonnet-4-20250514``) find their family. A
``provider/`` prefix (``openai/gpt-4o``, as routers name models) is tried without it too,
and a name not found as given is tried in lower case (``GPT-4o``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import msgspec

from clawlog.events.domain.session import Usage

from ..errors import ArgumentTypeError, InvalidArgument

__all__ = ["DEFAULT_CONTEXT_WINDOW", "PRICES_AS_OF", "ModelCatalog", "ModelSpec"]

#: The date the default prices and limits were taken from the providers' price pages.
PRICES_AS_OF = "2025-11-01"
#: The context window assumed for a model the catalog does not know.
DEFAULT_CONTEXT_WINDOW = 128_000

_BOUNDARIES = "-@:."
_TOKENS_PER_PRICE_UNIT = 1_000_000


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One model's limits and prices (US dollars per million tokens; None: unknown)."""

    name: str
    #: Tokens the model reads at most (prompt and reply together, as the provider counts).
    context_window: int
    #: Tokens the model writes at most in one reply.
    max_output_tokens: int
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    #: Price of prompt tokens read from the provider's prompt cache (None: the input price).
    cached_input_usd_per_mtok: float | None = None
    #: Price of prompt tokens written to the cache (Anthropic; None: the input price).
    cache_write_usd_per_mtok: float | None = None

    def __post_init__(self) -> None:
        # msgspec does not check the types of a Struct built in code: "8000" or 1.5 tokens
        # would otherwise fail later, in a session's arithmetic.
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidArgument(
                "ModelSpec.name", f"must be the model's name (a non-empty str), got {self.name!r}"
            )
        for field in ("context_window", "max_output_tokens"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgumentTypeError(
                    f"ModelSpec.{field}",
                    f"must be a whole number of tokens (int), got {value!r} (model {self.name!r})",
                )
            if value <= 0:
                raise InvalidArgument(
                    f"ModelSpec.{field}",
                    f"must be a positive number of tokens, got {value} (model {self.name!r})",
                )
        if self.max_output_tokens > self.context_window:
            raise InvalidArgument(
                "ModelSpec.max_output_tokens",
                f"is {self.max_output_tokens}, more than the context window"
                f" ({self.context_window}) of model {self.name!r}: the reply is part of the"
                " window; check the two figures",
            )
        for field in (
            "input_usd_per_mtok",
            "output_usd_per_mtok",
            "cached_input_usd_per_mtok",
            "cache_write_usd_per_mtok",
        ):
            price = getattr(self, field)
            if price is not None and (
                isinstance(price, bool) or not isinstance(price, int | float)
            ):
                raise ArgumentTypeError(
                    f"ModelSpec.{field}",
                    f"must be a price in US dollars per million tokens (a float) or None,"
                    f" got {price!r} (model {self.name!r})",
                )
            if price is not None and (not math.isfinite(price) or price < 0):
                raise InvalidArgument(
                    f"ModelSpec.{field}",
                    f"must be a finite price >= 0 (US dollars per million tokens) or None,"
                    f" got {price} (model {self.name!r})",
                )

    @property
    def priced(self) -> bool:
        """True when both the input and output prices are known."""
        return self.input_usd_per_mtok is not None and self.output_usd_per_mtok is not None

    def cost_usd(self, usage: Usage) -> float | None:
        """The estimated cost of one call's ``usage``; None when the model has no price.

        ``usage.input_tokens`` counts the whole prompt; its cached and cache-written parts
        are billed at their own prices when the catalog has them.
        """
        if self.input_usd_per_mtok is None or self.output_usd_per_mtok is None:
            return None
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        written = min(usage.cache_write_tokens, usage.input_tokens - cached)
        plain = usage.input_tokens - cached - written
        cached_price = _or(self.cached_input_usd_per_mtok, self.input_usd_per_mtok)
        write_price = _or(self.cache_write_usd_per_mtok, self.input_usd_per_mtok)
        micro = (
            plain * self.input_usd_per_mtok
            + cached * cached_price
            + written * write_price
            + usage.output_tokens * self.output_usd_per_mtok
        )
        return micro / _TOKENS_PER_PRICE_UNIT

    def max_cost_usd(self, input_tokens: int, output_tokens: int) -> float | None:
        """The most a call of this size can cost (every input token at the full price)."""
        return self.cost_usd(Usage(input_tokens=input_tokens, output_tokens=output_tokens))


def _or(price: float | None, fallback: float) -> float:
    return fallback if price is None else price


class ModelCatalog:
    """Model specs by name, with aliases and prefix matching; immutable (share freely)."""

    __slots__ = ("_aliases", "_specs")

    def __init__(
        self, specs: Iterable[ModelSpec] = (), *, aliases: Mapping[str, str] | None = None
    ) -> None:
        if isinstance(specs, ModelSpec):
            raise ArgumentTypeError(
                "specs", "takes a list of ModelSpec values: write ModelCatalog([spec])"
            )
        by_name: dict[str, ModelSpec] = {}
        for spec in specs:
            if not isinstance(spec, ModelSpec):
                raise InvalidArgument(
                    "specs",
                    f"ModelCatalog takes ModelSpec values, got {type(spec).__name__}:"
                    " build each model with ModelSpec(name=..., context_window=..., ...)",
                )
            by_name[spec.name] = spec
        alias_map = dict(_checked_aliases(aliases))
        for alias, target in alias_map.items():
            if target not in by_name:
                raise InvalidArgument(
                    "aliases",
                    f"alias {alias!r} names {target!r}, which the catalog does not hold:"
                    " add a ModelSpec for it or fix the alias",
                )
        self._specs: Mapping[str, ModelSpec] = MappingProxyType(by_name)
        self._aliases: Mapping[str, str] = MappingProxyType(alias_map)

    @classmethod
    def default(cls) -> ModelCatalog:
        """Common OpenAI and Anthropic models, prices as of :data:`PRICES_AS_OF`."""
        return _DEFAULT

    @property
    def specs(self) -> Mapping[str, ModelSpec]:
        return self._specs

    @property
    def aliases(self) -> Mapping[str, str]:
        return self._aliases

    def with_models(
        self, *specs: ModelSpec, aliases: Mapping[str, str] | None = None
    ) -> ModelCatalog:
        """A new catalog with ``specs`` added (replacing same-named ones) and ``aliases``."""
        return ModelCatalog(
            [*self._specs.values(), *specs],
            aliases={**self._aliases, **_checked_aliases(aliases)},
        )

    def lookup(self, model: str) -> ModelSpec | None:
        """The spec for ``model`` (exact, alias, then longest prefix; then the same
        without a ``provider/`` prefix, then in lower case), or None."""
        for name in dict.fromkeys((model, model.lower())):
            spec = self._lookup(name)
            if spec is None and "/" in name:
                spec = self._lookup(name.rsplit("/", 1)[1])
            if spec is not None:
                return spec
        return None

    def _lookup(self, model: str) -> ModelSpec | None:
        if model in self._specs:
            return self._specs[model]
        if model in self._aliases:
            return self._specs[self._aliases[model]]
        best: str | None = None
        for name in (*self._specs, *self._aliases):
            if _is_family_prefix(name, model) and (best is None or len(name) > len(best)):
                best = name
        if best is None:
            return None
        return self._specs[self._aliases.get(best, best)]

    def context_window(self, model: str) -> int:
        """The model's context window, or :data:`DEFAULT_CONTEXT_WINDOW` when unknown."""
        spec = self.lookup(model)
        return DEFAULT_CONTEXT_WINDOW if spec is None else spec.context_window

    def cost_usd(self, model: str, usage: Usage) -> float | None:
        """The estimated cost of ``usage`` on ``model``; None when it has no price."""
        spec = self.lookup(model)
        return None if spec is None else spec.cost_usd(usage)

    def __repr__(self) -> str:
        return f"ModelCatalog({len(self._specs)} models, {len(self._aliases)} aliases)"


def _checked_aliases(aliases: object) -> Mapping[str, str]:
    if aliases is None:
        return {}
    if not isinstance(aliases, Mapping):
        raise ArgumentTypeError(
            "aliases",
            f"must be a mapping of alias to model name, got {type(aliases).__name__}"
            " (write aliases={'my-alias': 'gpt-4o'})",
        )
    return aliases


def _is_family_prefix(name: str, model: str) -> bool:
    return len(model) > len(name) and model.startswith(name) and model[len(name)] in _BOUNDARIES


def _spec(
    name: str,
    window: int,
    max_out: int,
    price_in: float,
    price_out: float,
    cached: float | None,
    cache_write: float | None = None,
) -> ModelSpec:
    return ModelSpec(
        name=name,
        context_window=window,
        max_output_tokens=max_out,
        input_usd_per_mtok=price_in,
        output_usd_per_mtok=price_out,
        cached_input_usd_per_mtok=cached,
        cache_write_usd_per_mtok=cache_write,
    )


_DEFAULT = ModelCatalog(
    [
        # OpenAI (cached input is OpenAI's automatic prompt caching; no write surcharge).
        _spec("gpt-4o", 128_000, 16_384, 2.50, 10.00, 1.25),
        # Models whose family prefix would find a model priced far apart (o1-mini under o1,
        # o3-pro under o3...) are listed on their own: a budget must not undercount them.
        _spec("gpt-4o-2024-05-13", 128_000, 4_096, 5.00, 15.00, None),
        _spec("gpt-4o-mini", 128_000, 16_384, 0.15, 0.60, 0.075),
        _spec("gpt-4.1", 1_047_576, 32_768, 2.00, 8.00, 0.50),
        _spec("gpt-4.1-mini", 1_047_576, 32_768, 0.40, 1.60, 0.10),
        _spec("gpt-4.1-nano", 1_047_576, 32_768, 0.10, 0.40, 0.025),
        _spec("gpt-5", 400_000, 128_000, 1.25, 10.00, 0.125),
        _spec("gpt-5-mini", 400_000, 128_000, 0.25, 2.00, 0.025),
        _spec("gpt-5-nano", 400_000, 128_000, 0.05, 0.40, 0.005),
        _spec("gpt-5-pro", 400_000, 272_000, 15.00, 120.00, None),
        _spec("o1", 200_000, 100_000, 15.00, 60.00, 7.50),
        _spec("o1-mini", 128_000, 65_536, 1.10, 4.40, 0.55),
        _spec("o1-pro", 200_000, 100_000, 150.00, 600.00, None),
        _spec("o3", 200_000, 100_000, 2.00, 8.00, 0.50),
        _spec("o3-pro", 200_000, 100_000, 20.00, 80.00, None),
        _spec("o3-deep-research", 200_000, 100_000, 10.00, 40.00, 2.50),
        _spec("o3-mini", 200_000, 100_000, 1.10, 4.40, 0.55),
        _spec("o4-mini", 200_000, 100_000, 1.10, 4.40, 0.275),
        # Anthropic (cache reads 0.1x input, 5-minute cache writes 1.25x input).
        _spec("claude-opus-4-5", 200_000, 64_000, 5.00, 25.00, 0.50, 6.25),
        _spec("claude-opus-4-1", 200_000, 32_000, 15.00, 75.00, 1.50, 18.75),
        _spec("claude-opus-4", 200_000, 32_000, 15.00, 75.00, 1.50, 18.75),
        _spec("claude-sonnet-4-5", 200_000, 64_000, 3.00, 15.00, 0.30, 3.75),
        _spec("claude-sonnet-4", 200_000, 64_000, 3.00, 15.00, 0.30, 3.75),
        _spec("claude-3-7-sonnet", 200_000, 64_000, 3.00, 15.00, 0.30, 3.75),
        _spec("claude-3-5-sonnet", 200_000, 8_192, 3.00, 15.00, 0.30, 3.75),
        _spec("claude-haiku-4-5", 200_000, 64_000, 1.00, 5.00, 0.10, 1.25),
        _spec("claude-3-5-haiku", 200_000, 8_192, 0.80, 4.00, 0.08, 1.00),
        _spec("claude-3-haiku", 200_000, 4_096, 0.25, 1.25, 0.03, 0.30),
    ],
    aliases={"chatgpt-4o-latest": "gpt-4o"},
)

"""``--model-catalog FILE``: the application's model catalog for a command that runs
sessions again (``replay --rerun``), read from a JSON file.

The file holds the models the application adds to (or overrides in) the default catalog,
in the fields of :class:`~clawlog.actors.providers.catalog.ModelSpec`, and optional
aliases::

    {"models": [{"name": "my-llm", "context_window": 32000, "max_output_tokens": 4000,
                 "input_usd_per_mtok": 0.5, "output_usd_per_mtok": 1.5}],
     "aliases": {"mine": "my-llm"}}

A bare list of models is read as ``{"models": [...]}``. Imported only by the commands
that load the runtime.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from clawlog.actors.errors import InvalidArgument
from clawlog.actors.providers.catalog import ModelCatalog, ModelSpec

from .errors import CliError

__all__ = ["load_model_catalog"]


class _CatalogFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    models: list[ModelSpec] = msgspec.field(default_factory=list)
    aliases: dict[str, str] = msgspec.field(default_factory=dict)


_EXAMPLE = (
    '{"models": [{"name": "my-llm", "context_window": 32000, "max_output_tokens": 4000, '
    '"input_usd_per_mtok": 0.5, "output_usd_per_mtok": 1.5}]}'
)


def load_model_catalog(path: str) -> ModelCatalog:
    """The default catalog with the file's models and aliases added (CliError, naming
    the file and what is wrong, when it cannot be read)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"--model-catalog {path}: cannot read it ({exc.strerror})") from None
    try:
        raw = msgspec.json.decode(data)
        if isinstance(raw, list):
            raw = {"models": raw}
        parsed = msgspec.convert(raw, _CatalogFile)
        return ModelCatalog.default().with_models(*parsed.models, aliases=parsed.aliases)
    except (msgspec.ValidationError, msgspec.DecodeError, InvalidArgument) as exc:
        raise CliError(f"--model-catalog {path}: {exc}; write JSON such as {_EXAMPLE}") from None

"""A summarizer that reports usage (as a provider would), and an application catalog
pricing a cheap agent model and a pricey summarizer, for the tests of summaries' usage,
cost and budgets."""

from __future__ import annotations

import threading

from clawlog.actors.agents.summarizer import SUMMARIZER_INSTRUCTIONS
from clawlog.actors.providers import (
    ModelCatalog,
    ModelReply,
    ModelRequest,
    ModelSpec,
    ScriptedModel,
    Usage,
)

#: The application's catalog: its agent's model ("researcher", unknown to the default
#: catalog) costs next to nothing; its summarizer ("pricey") a fortune.
CATALOG = ModelCatalog.default().with_models(
    ModelSpec(
        name="researcher",
        context_window=1_000_000,
        max_output_tokens=8_000,
        input_usd_per_mtok=0.01,
        output_usd_per_mtok=0.01,
    ),
    ModelSpec(
        name="pricey",
        context_window=1_000_000,
        max_output_tokens=8_000,
        input_usd_per_mtok=1_000_000.0,
        output_usd_per_mtok=1_000_000.0,
    ),
)
#: What each summary call reports: input tokens grow with the call's number.
SUMMARY_OUTPUT_TOKENS = 40


class UsageSummarizer(ScriptedModel):
    """Numbers its summaries; call ``n`` reports ``1000 * n`` input tokens."""

    def __init__(self, name: str = "summarizer") -> None:
        super().__init__(self._summarize, name=name)
        self._count = 0
        self._lock = threading.Lock()

    def _summarize(self, request: ModelRequest) -> ModelReply:
        assert request.system.startswith(SUMMARIZER_INSTRUCTIONS[:40])
        with self._lock:
            self._count += 1
            number = self._count
        usage = Usage(input_tokens=1000 * number, output_tokens=SUMMARY_OUTPUT_TOKENS)
        return ModelReply(text=f"Summary {number}: pages were read.", usage=usage)

"""Where a tool call is refused: the ``tool.call_refused`` event and the error result the
model reads, for every step of the pipeline that can refuse (resolve, policy, validation,
rate limit, loop detection, approval). The steps themselves decide in :mod:`.pipeline`
(with :mod:`.policy`, :mod:`.approvals`, :mod:`.ratelimit`, :mod:`.loops`); this module
only records their refusal the same way for all of them.
"""

from __future__ import annotations

from clawlog.events import Event
from clawlog.events.domain.tool import RefusalStep, ToolCallRefused
from clawlog.events.logging import get_logger

from .context import ToolContext
from .decisions import Refused
from .result import ErrorKind, ToolResult

__all__ = ["Refuser"]

_log = get_logger(__name__)


class Refuser:
    """Builds the Refused decision of one call: the events so far plus the refusal."""

    __slots__ = ("call_id", "ctx", "first", "name", "policy_digest")

    def __init__(
        self, ctx: ToolContext, call_id: str, name: str, first: Event, policy_digest: str = ""
    ) -> None:
        self.ctx, self.call_id, self.name, self.first = ctx, call_id, name, first
        #: The effective policy that decides (``tools.policy_digest``), for the verdict.
        self.policy_digest = policy_digest

    def __call__(
        self,
        step: RefusalStep,
        kind: ErrorKind,
        reason: str,
        for_llm: str,
        *,
        rule: str = "",
        retry_after: float | None = None,
    ) -> Refused:
        _log.info(
            "tool call refused",
            tool=self.name,
            call_id=self.call_id,
            step=step,
            agent=self.ctx.agent,
            session_key=self.ctx.session_key,
            rule=rule,
            reason=reason,
        )
        refused = ToolCallRefused(
            call_id=self.call_id,
            tool=self.name,
            step=step,
            reason=reason,
            for_llm=for_llm,
            error_kind=kind,
            agent=self.ctx.agent,
            session_key=self.ctx.session_key,
            retry_after=retry_after,
            rule=rule,
            policy_digest=self.policy_digest,
        )
        result = ToolResult.error(kind, for_llm, step=step)
        return Refused(events=[self.first, refused], result=result, step=step)

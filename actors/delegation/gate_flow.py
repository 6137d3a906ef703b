"""Quality gates in a link's flow: evaluate a result, then deliver, retry or fail."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from clawlog.events.domain.delegation import (
    DelegationCompleted,
    DelegationFailed,
    DelegationRetried,
    GateEvaluated,
)

from ..messages import Piped
from .gates import evaluate_gate, gate_name
from .messages import DelegationInfo

if TYPE_CHECKING:
    from .link import DelegationLink

__all__ = ["GateFlow"]


class GateFlow:
    """Mixed into :class:`actors.delegation.link.DelegationLink`."""

    async def _evaluate(
        self: DelegationLink, gates: list[Any], info: DelegationInfo, result: str
    ) -> Any:
        verdicts = []
        for gate in gates:
            passed, feedback = await evaluate_gate(
                gate, result, info.task, self.runtime, info.delegation_id, info.attempts
            )
            verdicts.append((gate, passed, feedback))
        return info.attempts, verdicts

    def _on_gate(self: DelegationLink, message: Piped) -> None:
        info = self.state.delegations.get(message.key)
        if info is None or info.status != "running":
            return
        if message.error is not None:
            self._finish(
                info,
                DelegationFailed(
                    delegation_id=info.delegation_id,
                    reason="gate_rejected",
                    message=str(message.error),
                    at=time.time(),
                ),
            )
            return
        attempt, verdicts = message.value
        if attempt != info.attempts:
            return
        self.emit(
            [
                GateEvaluated(
                    delegation_id=info.delegation_id,
                    gate=gate_name(g),
                    passed=p,
                    feedback=f,
                    attempt=attempt,
                )
                for g, p, f in verdicts
            ]
        )
        blocking = [(g, f) for g, p, f in verdicts if not p and g.block_on_failure]
        if not blocking:
            self._finish(
                info,
                DelegationCompleted(
                    delegation_id=info.delegation_id, result=info.result, at=time.time()
                ),
            )
            return
        gate, feedback = blocking[0]
        if info.attempts > gate.max_retries:
            self._finish(
                info,
                DelegationFailed(
                    delegation_id=info.delegation_id,
                    reason="gate_rejected",
                    message=f"{gate_name(gate)} rejected the result after {info.attempts} "
                    f"attempt(s): {feedback}",
                    at=time.time(),
                ),
            )
            return
        self.emit(
            [
                DelegationRetried(
                    delegation_id=info.delegation_id, attempt=info.attempts + 1, feedback=feedback
                )
            ]
        )
        revision = (
            f"Your previous result was rejected by a quality check. Feedback: "
            f"{feedback}\n\nRevise it. The task was: {info.task}"
        )
        self._run_target(self.state.delegations[info.delegation_id], revision, info.attempts)

    def _gates(self: DelegationLink, info: DelegationInfo) -> list[Any]:
        if info.skip_hooks:
            return []
        config = self.runtime.services.get("agent_configs", {}).get(info.source)
        return [
            g for g in (config.quality_gates if config else []) if g.event == "delegation.completed"
        ]

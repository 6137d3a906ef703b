"""Quality gates (seed 001 §11): evaluate a delegation's result before it is delivered.

``agent`` gates ask a reviewer agent and parse ``APPROVED`` / ``REJECTED: feedback``
(case-insensitive prefix). The reviewer's turn carries ``skip_quality_gates``, so
delegations it makes run no gates (the recursion guard). ``command`` gates run a shell
command with the result on stdin: exit 0 passes, stderr is the feedback.

The link runs :func:`evaluate_gates` on a result and applies what :func:`gate_decision`
makes of the verdicts: deliver, fail, or retry with the feedback (:func:`revision_prompt`).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from clawlog.events.domain.delegation import (
    DelegationCompleted,
    DelegationFailed,
    DelegationRetried,
)
from clawlog.events.streams import agent_stream
from clawlog.events.telemetry import context_carrier
from clawlog.tools.deny import match_deny_pattern

from ..agents.config import QualityGate
from ..agents.messages import SendMessage
from .messages import DelegationInfo

__all__ = [
    "Verdict",
    "evaluate_gate",
    "evaluate_gates",
    "gate_decision",
    "gate_name",
    "gates_for",
    "parse_verdict",
    "revision_prompt",
]

_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "HOME", "TZ")

#: One gate's verdict on a result: the gate, whether it passed, its feedback.
Verdict = tuple[QualityGate, bool, str]


def gate_name(gate: QualityGate) -> str:
    return f"{gate.type}:{gate.agent or gate.command[:40]}"


def gates_for(info: DelegationInfo, agent_configs: dict[str, Any]) -> list[QualityGate]:
    """The gates the source agent puts on its delegations' results (none when skipped)."""
    if info.skip_quality_gates:
        return []
    config = agent_configs.get(info.source)
    return [
        g for g in (config.quality_gates if config else []) if g.event == "delegation.completed"
    ]


async def evaluate_gates(
    gates: list[QualityGate], info: DelegationInfo, result: str, runtime: Any
) -> tuple[int, list[Verdict]]:
    """Every gate's verdict on ``result``, in order, with the attempt they judged."""
    verdicts = []
    for gate in gates:
        passed, feedback = await evaluate_gate(
            gate, result, info.task, runtime, info.delegation_id, info.attempts
        )
        verdicts.append((gate, passed, feedback))
    return info.attempts, verdicts


def gate_decision(
    info: DelegationInfo, verdicts: list[Verdict], at: float
) -> DelegationCompleted | DelegationFailed | DelegationRetried:
    """What the verdicts decide: deliver the result when no blocking gate failed; else
    retry with the first blocking gate's feedback, or fail once its retries are spent."""
    blocking = [(g, f) for g, p, f in verdicts if not p and g.block_on_failure]
    if not blocking:
        return DelegationCompleted(delegation_id=info.delegation_id, result=info.result, at=at)
    gate, feedback = blocking[0]
    if info.attempts > gate.max_retries:
        return DelegationFailed(
            delegation_id=info.delegation_id,
            reason="gate_rejected",
            message=f"{gate_name(gate)} rejected the result after {info.attempts} "
            f"attempt(s): {feedback}",
            at=at,
        )
    return DelegationRetried(
        delegation_id=info.delegation_id, attempt=info.attempts + 1, feedback=feedback
    )


def revision_prompt(task: str, feedback: str) -> str:
    """The target's next turn after a gate rejected its result."""
    return (
        f"Your previous result was rejected by a quality check. Feedback: "
        f"{feedback}\n\nRevise it. The task was: {task}"
    )


def parse_verdict(text: str) -> tuple[bool, str]:
    """``APPROVED...`` passes; ``REJECTED: why`` fails with why; anything else fails."""
    stripped = text.strip()
    upper = stripped.upper()
    if upper.startswith("APPROVED"):
        return True, ""
    if upper.startswith("REJECTED"):
        return False, stripped[len("REJECTED") :].lstrip(" :-\n") or "rejected without feedback"
    return False, f"the reviewer answered neither APPROVED nor REJECTED: {stripped[:500]}"


async def evaluate_gate(
    gate: QualityGate, result: str, task: str, runtime: Any, delegation_id: str, attempt: int
) -> tuple[bool, str]:
    try:
        async with asyncio.timeout(gate.timeout_s):
            if gate.type == "agent":
                return await _agent_gate(gate, result, task, runtime, delegation_id, attempt)
            return await _command_gate(gate, result)
    except TimeoutError:
        return False, f"the {gate.type} gate did not answer within {gate.timeout_s} s"
    except Exception as exc:
        return False, f"the {gate.type} gate failed: {type(exc).__name__}: {exc}"


async def _agent_gate(
    gate: QualityGate, result: str, task: str, runtime: Any, delegation_id: str, attempt: int
) -> tuple[bool, str]:
    reviewer = runtime.lookup(agent_stream(gate.agent))
    if reviewer is None or not reviewer.is_alive():
        return False, f"reviewer agent {gate.agent!r} is not registered"
    criteria = gate.criteria or "correct and complete"
    prompt = (
        f"Review this result of the task below. Criteria: {criteria}."
        f"\nAnswer 'APPROVED' or 'REJECTED: <feedback>'.\n\nTask: {task}\n\nResult:\n{result}"
    )
    message = SendMessage(
        session_key=f"gate-{delegation_id}-{attempt}",
        text=prompt,
        sender="gate",
        skip_quality_gates=True,
        trace_context=context_carrier(),  # the reviewer's turn: the delegation span's child
    )
    answer = await reviewer.ask(message, gate.timeout_s)
    return parse_verdict(str(answer))


async def _command_gate(gate: QualityGate, result: str) -> tuple[bool, str]:
    denied = match_deny_pattern(gate.command)
    if denied is not None:  # the exec security layer applies to gate commands too
        return False, (
            f"the gate command matches the deny pattern {denied.label!r} "
            f"({denied.group}) and is never run"
        )
    env = {k: v for k, v in os.environ.items() if k in _SAFE_ENV}
    process = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        gate.command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        _, stderr = await process.communicate(result.encode())
    except asyncio.CancelledError:
        process.kill()
        await process.wait()
        raise
    if process.returncode == 0:
        return True, ""
    feedback = stderr.decode(errors="replace").strip() or f"exit status {process.returncode}"
    return False, feedback[:4000]

"""Quality gates (seed 001 §11): evaluate a delegation's result before it is delivered.

``agent`` gates ask a reviewer agent and parse ``APPROVED`` / ``REJECTED: feedback``
(case-insensitive prefix). The reviewer's turn carries ``skip_hooks``, so delegations it
makes run no gates (the recursion guard). ``command`` gates run a shell command with the
result on stdin: exit 0 passes, stderr is the feedback.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from clawlog.tools.deny import match_deny_pattern

from ..agents.config import QualityGate
from ..agents.messages import SendMessage

__all__ = ["evaluate_gate", "gate_name", "parse_verdict"]

_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "HOME", "TZ")


def gate_name(gate: QualityGate) -> str:
    return f"{gate.type}:{gate.agent or gate.command[:40]}"


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
    reviewer = runtime.lookup(f"agent/{gate.agent}")
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
        skip_hooks=True,
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

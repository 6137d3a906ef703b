"""The scripted models of the demo: deterministic functions of the conversation."""

from __future__ import annotations

import re

from clawlog.actors.providers import ModelReply, ModelRequest, call, calls, reply

__all__ = ["billing_brain", "lead_brain", "teammate_brain"]

_TASKS = [
    ("write the changelog", 3),
    ("run the test suite", 2),
    ("tag the v1.0 release", 1),
]


def _tool_texts(request: ModelRequest) -> list[str]:
    turn_start = max(i for i, m in enumerate(request.messages) if m.role == "user")
    return [m.content for m in request.messages[turn_start:] if m.role == "tool"]


def lead_brain(request: ModelRequest) -> ModelReply:
    last_user = next(m.content for m in reversed(request.messages) if m.role == "user")
    if last_user.startswith("[parent]"):  # the lead's subagent
        return reply("Changelog summary: 3 features, 2 fixes, no breaking changes.")
    if last_user.startswith("[teammate:"):
        return reply("Noted: " + last_user.split("] ", 1)[-1])
    if "billing" in last_user:
        if not _tool_texts(request):
            return call("handoff", agent="billing", reason="the user has a billing question")
        return reply("I have handed you to our billing agent; they will answer from now on.")
    results = _tool_texts(request)
    if not results:
        return calls(
            [
                ("team_tasks", {"action": "create", "subject": subject, "priority": prio})
                for subject, prio in _TASKS
            ]
        )
    if len(results) == len(_TASKS):
        return calls(
            [
                (
                    "subagent",
                    {"action": "run", "task": "summarize the changelog", "label": "summary"},
                ),
                ("exec", {"command": "rm -rf / --no-preserve-root"}),
            ]
        )
    return reply("Release plan posted: 3 tasks on the board for dev and qa. " + results[-2])


def teammate_brain(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "user":
        found = re.search(r"task (t\d+-\w+)", last.content)
        return call("team_tasks", action="claim", task_id=found.group(1)) if found else reply("ok")
    claimed = re.search(r"you claimed (t\d+-\w+)", last.content)
    if claimed:
        task_id = claimed.group(1)
        return call("team_tasks", action="complete", task_id=task_id, result=f"{task_id}: done")
    return reply("finished" if "completed" in last.content else "a teammate took that one")


def billing_brain(request: ModelRequest) -> ModelReply:
    last = request.messages[-1].content
    if last.startswith("[handoff"):
        return reply("Billing here: I have the conversation.")
    return reply(f"Billing: your invoice question ({last[:60]}) is answered: it is paid.")

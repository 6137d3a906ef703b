"""The subagent half of AgentSupervisor: limits, spawning, results, announcements."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

import msgspec

from clawlog.events.domain.agent import (
    SubagentAnnounced,
    SubagentArchived,
    SubagentFinished,
    SubagentRefused,
    SubagentSpawned,
    SubagentSteered,
)

from .._bridge import AskEnvelope
from ..actor import DEFERRED
from ..errors import Rejected
from .messages import CancelTurn, SendMessage
from .subagents import (
    AnnounceDue,
    ArchiveDue,
    CancelSubagents,
    ListSubagents,
    SpawnSubagent,
    SteerSubagent,
    Subagent,
    SubagentDone,
    _DoneReply,
    new_task_id,
    now,
)

if TYPE_CHECKING:
    from .supervisor import AgentSupervisor

__all__ = ["SubagentSupervision"]

_SLOTS = "subagents"


class SubagentSupervision:
    """Mixed into AgentSupervisor: handles the subagent messages."""

    def _init_subagents(self: AgentSupervisor) -> None:
        #: Sync spawns waiting for their task's end, and finished async tasks to announce.
        self._waiters: dict[str, Any] = {}
        self._to_announce: dict[str, list[str]] = defaultdict(list)

    def handle_subagent(self: AgentSupervisor, message: Any) -> Any:
        match message:
            case SpawnSubagent():
                return self._spawn_subagent(message)
            case SubagentDone():
                self._subagent_done(message)
            case AnnounceDue(parent_session=parent):
                self._announce(parent)
            case ListSubagents():
                tasks = [self.state.tasks.tasks[t] for t in self.state.tasks.order]
                return [
                    msgspec.structs.replace(t)
                    for t in tasks
                    if (message.parent_session in (None, t.parent_session))
                    and (message.include_archived or not t.archived)
                ]
            case CancelSubagents():
                return self._cancel_subagents(message.parent_session, message.target)
            case SteerSubagent():
                return self._steer(message)
            case ArchiveDue(task_id=task_id):
                info = self.state.tasks.tasks.get(task_id)
                if info is not None and not info.archived:
                    self.emit([SubagentArchived(task_id=task_id)])
            case _:
                return NotImplemented
        return None

    def _spawn_subagent(self: AgentSupervisor, request: SpawnSubagent) -> Any:
        limits = self.config.subagents
        depth = request.depth + 1
        running = [
            t
            for t in self.state.tasks.tasks.values()
            if t.parent_session == request.parent_session and t.status == "running"
        ]
        reason = None
        if depth > limits.max_spawn_depth:
            reason = (
                f"spawn depth limit reached: this agent is at depth {request.depth} and "
                f"subagents may nest at most {limits.max_spawn_depth} deep. Do the task "
                "yourself."
            )
        elif len(running) >= limits.max_children_per_agent:
            reason = (
                f"too many subagents for this session ({len(running)}/"
                f"{limits.max_children_per_agent} running). Wait for one to finish or "
                "cancel one."
            )
        elif self.runtime.take_slot(_SLOTS, limits.max_concurrent) is None:
            reason = (
                f"too many subagents running in the system ({limits.max_concurrent}/"
                f"{limits.max_concurrent}). Try again later or do the task yourself."
            )
        if reason is not None:
            self.emit(
                [
                    SubagentRefused(
                        parent_session=request.parent_session,
                        reason=reason,
                        task=request.task[:500],
                    )
                ]
            )
            raise Rejected(reason)
        task_id = new_task_id()
        self.emit(
            [
                SubagentSpawned(
                    task_id=task_id,
                    parent_session=request.parent_session,
                    task=request.task,
                    label=request.label,
                    depth=depth,
                    mode=request.mode,
                    at=now(),
                    parent_key=request.parent_key,
                )
            ],
            correlation_id=request.correlation_id,
        )
        config = msgspec.structs.replace(self.config, max_iterations=limits.max_iterations)
        child = self.spawn(
            Subagent,
            f"subagent/{task_id}",
            config=config,
            model=self.model,
            gateway=self.gateway,
            prompt=self.prompt,
            session_key=task_id,
            parent_session=request.parent_session,
            depth=depth,
        )
        start = SendMessage(
            session_key=task_id,
            text=request.task,
            sender="parent",
            correlation_id=request.correlation_id,
        )
        child.ref.tell(AskEnvelope(start, _DoneReply(self.handle_ref, task_id)))
        info = self.state.tasks.tasks[task_id]
        if request.mode == "sync":
            self._waiters[task_id] = self.defer_reply()
            return DEFERRED
        return msgspec.structs.replace(info)

    def _subagent_done(self: AgentSupervisor, done: SubagentDone, *, announce: bool = True) -> None:
        info = self.state.tasks.tasks.get(done.task_id)
        if info is None or info.status != "running":
            return
        self.emit(
            [
                SubagentFinished(
                    task_id=done.task_id,
                    status=done.status,
                    result=done.result,
                    error=done.error,
                    at=now(),
                )
            ]
        )
        self.runtime.give_slot(_SLOTS)
        waiter = self._waiters.pop(done.task_id, None)
        if waiter is not None:
            waiter.set(msgspec.structs.replace(self.state.tasks.tasks[done.task_id]))
        elif info.mode == "async" and announce:
            pending = self._to_announce[info.parent_session]
            pending.append(done.task_id)
            if len(pending) == 1:
                self._tell_later(
                    self.config.subagents.announce_debounce_s,
                    AnnounceDue(parent_session=info.parent_session),
                )
        self._tell_later(
            self.config.subagents.archive_after_minutes * 60, ArchiveDue(task_id=done.task_id)
        )

    def _announce(self: AgentSupervisor, parent_session: str) -> None:
        task_ids = self._to_announce.pop(parent_session, [])
        if not task_ids:
            return
        tasks = [self.state.tasks.tasks[t] for t in task_ids]
        lines = [f"[subagent results: {len(tasks)} task(s) finished]"]
        for t in tasks:
            body = t.result if t.status == "completed" else f"{t.status}: {t.error}"
            lines.append(f"- {t.label or t.task_id} ({t.task_id}, {t.status}): {body}")
        self.emit([SubagentAnnounced(parent_session=parent_session, task_ids=task_ids)])
        parent_key = tasks[0].parent_key
        nested = parent_session.startswith("subagent/")  # its answer goes to its parent
        message = SendMessage(
            session_key=parent_key,
            text="\n".join(lines),
            sender="subagent",
            outbox_kind="" if nested else "subagent",
        )
        if nested:
            handle = self.children.get(parent_session)
            if handle is not None and handle.is_alive():
                handle.ref.tell(AskEnvelope(message, _Ignore()))
        elif parent_key:
            self._route(message, _Ignore())

    def _cancel_subagents(self: AgentSupervisor, parent_session: str, target: str) -> list[str]:
        running = [
            t
            for t in (self.state.tasks.tasks[i] for i in self.state.tasks.order)
            if t.parent_session == parent_session and t.status == "running"
        ]
        if target == "all":
            chosen = running
        elif target == "last":
            chosen = running[-1:]
        else:
            chosen = [t for t in running if t.task_id == target]
            if not chosen:
                raise Rejected(f"no running subagent {target!r} in this session")
        for info in chosen:
            handle = self.children.get(f"subagent/{info.task_id}")
            if handle is not None and handle.is_alive():
                handle.ask_blocking(CancelTurn(session_key=info.task_id, by="parent"))
            # Record it now (the child's own notice arrives later and is ignored), so the
            # canceller reads its own write.
            self._subagent_done(
                SubagentDone(
                    task_id=info.task_id, status="cancelled", error="cancelled by the parent"
                ),
                announce=False,
            )
        return [t.task_id for t in chosen]

    def _steer(self: AgentSupervisor, request: SteerSubagent) -> Any:
        info = self.state.tasks.tasks.get(request.task_id)
        if info is None or info.parent_session != request.parent_session:
            raise Rejected(f"no subagent {request.task_id!r} in this session")
        if info.status == "running":
            self._cancel_subagents(request.parent_session, request.task_id)
            self._subagent_done(
                SubagentDone(task_id=request.task_id, status="cancelled", error="steered")
            )
        replacement = self._spawn_subagent(
            SpawnSubagent(
                parent_session=request.parent_session,
                parent_key=request.parent_key,
                depth=info.depth - 1,
                task=request.message,
                label=info.label,
                mode="async",
            )
        )
        self.emit(
            [
                SubagentSteered(
                    task_id=request.task_id,
                    new_task_id=replacement.task_id,
                    message=request.message[:500],
                )
            ]
        )
        return replacement

    def _fail_interrupted_subagents(self: AgentSupervisor) -> None:
        for info in list(self.state.tasks.tasks.values()):
            if info.status == "running":
                self.emit(
                    [
                        SubagentFinished(
                            task_id=info.task_id,
                            status="failed",
                            error="interrupted by a restart",
                            at=now(),
                        )
                    ]
                )

    def _tell_later(self: AgentSupervisor, delay: float, message: Any) -> None:
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, message)


class _Ignore:
    def set(self, value: Any) -> None:
        return None

    def set_error(self, error: BaseException) -> None:
        return None

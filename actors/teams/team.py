"""The Team actor (seed 001 §8): one per team, the single writer of ``team/{id}``.

Claims are atomic because one actor decides them in order: of N concurrent claimers,
exactly one wins and the others are told who has it. Completing a task unblocks its
dependents; posting a task activates the teammates who can take it; a teammate's result
reaches the lead's session as a message from ``teammate:{agent}``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from clawlog.events import Event
from clawlog.events.domain.team import (
    TeamCreated,
    TeammateActivated,
    TeamMember,
    TeamMessageSent,
    TeamMessagesRead,
    TeamRequestRefused,
    TeamTaskClaimed,
    TeamTaskCompleted,
    TeamTaskCreated,
    TeamTaskUnblocked,
    TeamTaskUpdated,
)

from ..actor import EventSourcedActor
from ..errors import Rejected
from ..messages import Message
from .board import BoardState, MailItem, TaskItem, TaskSearch, apply_board_event, find_cycle
from .messages import (
    Broadcast,
    ClaimTask,
    CompleteTask,
    CreateTask,
    GetBoard,
    ListTasks,
    ReadMessages,
    SearchTasks,
    SendTeamMessage,
    TaskFilter,
    TaskOrder,
    TeamView,
    UpdateTask,
)

__all__ = ["Team", "team_session_key"]

_MAX_TEXT = 20_000


def team_session_key(team_id: str) -> str:
    """The session in which a teammate works for this team."""
    return f"team-{team_id}"


class Team(EventSourcedActor[BoardState]):
    kind = "team"
    snapshot_every = 500

    def __init__(
        self,
        *args: Any,
        team_id: str,
        name: str,
        lead: str,
        members: list[TeamMember],
        **kwargs: Any,
    ) -> None:
        self._search = TaskSearch()
        super().__init__(*args, **kwargs)
        self._created = TeamCreated(team_id=team_id, name=name, lead=lead, members=members)

    def initial_state(self) -> BoardState:
        old = getattr(self, "_search", None)
        if old is not None:
            old.close()
        self._search = TaskSearch()
        return BoardState()

    def apply(self, state: BoardState, event: Event) -> BoardState:
        apply_board_event(state, event)
        if isinstance(event, TeamTaskCreated):
            self._search.add(state.tasks[event.task_id])
        return state

    def on_recovered(self, restarted: bool) -> None:
        # The search index is not part of snapshots: rebuild it from the folded tasks.
        self._search.close()
        self._search = TaskSearch()
        for task in self.state.tasks.values():
            self._search.add(task)
        if not self.state.team_id:
            self.emit([self._created])

    def on_stop(self) -> None:
        super().on_stop()
        self._search.close()

    def handle(self, message: Message) -> Any:
        by = getattr(message, "by", None)
        if by is not None and not self.state.is_member(by):
            self._refuse(
                by, type(message).__name__, f"{by!r} is not a member of team {self.state.name!r}"
            )
        match message:
            case CreateTask():
                return self._create(message)
            case UpdateTask():
                return self._update(message)
            case ListTasks():
                return self._list(message.filter, message.order)
            case ClaimTask():
                return self._claim(message.by, message.task_id)
            case CompleteTask():
                return self._complete(message.by, message.task_id, message.result)
            case SearchTasks():
                ids = self._search.search(message.query, message.limit)
                return [self.state.tasks[i] for i in ids]
            case SendTeamMessage():
                if not self.state.is_member(message.to):
                    self._refuse(
                        message.by,
                        "send",
                        f"{message.to!r} is not a member of this "
                        f"team; members: {', '.join(self.state.member_keys())}",
                    )
                return self._send(message.by, message.to, message.text)
            case Broadcast():
                return self._send(message.by, "*", message.text)
            case ReadMessages():
                return self._read(message.by)
            case GetBoard():
                return self._view()
        return super().handle(message)

    # -- task board ---------------------------------------------------------------------
    def _create(self, request: CreateTask) -> TaskItem:
        if not request.subject.strip():
            self._refuse(request.by, "create", "a task needs a subject")
        if len(request.subject) + len(request.description) > _MAX_TEXT:
            self._refuse(
                request.by, "create", f"subject and description exceed {_MAX_TEXT} characters"
            )
        unknown = [b for b in request.blocked_by if b not in self.state.tasks]
        if unknown:
            self._refuse(
                request.by, "create", f"unknown task id(s) in blocked_by: {', '.join(unknown)}"
            )
        if request.assignee and not self.state.is_member(request.assignee):
            self._refuse(request.by, "create", f"assignee {request.assignee!r} is not a member")
        task_id = f"t{len(self.state.tasks) + 1}-{uuid.uuid4().hex[:6]}"
        cycle = find_cycle(self.state.tasks, task_id, list(request.blocked_by))
        if cycle is not None:
            self._refuse(
                request.by, "create", f"blocked_by would create a cycle: {' -> '.join(cycle)}"
            )
        self.emit(
            [
                TeamTaskCreated(
                    task_id=task_id,
                    subject=request.subject,
                    description=request.description,
                    priority=request.priority,
                    blocked_by=list(dict.fromkeys(request.blocked_by)),
                    created_by=request.by,
                    assignee=request.assignee,
                    origin_session=request.origin_session,
                    at=time.time(),
                )
            ],
            correlation_id=request.correlation_id,
        )
        task = self.state.tasks[task_id]
        if task.status == "pending":
            self._activate_for(task)
        return task

    def _update(self, request: UpdateTask) -> TaskItem:
        task = self._task(request.by, "update", request.task_id)
        if task.status in ("claimed", "completed"):
            self._refuse(
                request.by,
                "update",
                f"task {task.task_id} is {task.status}; only unclaimed tasks can change",
            )
        if request.blocked_by is not None:
            unknown = [b for b in request.blocked_by if b not in self.state.tasks]
            if unknown:
                self._refuse(
                    request.by, "update", f"unknown task id(s) in blocked_by: {', '.join(unknown)}"
                )
            others = {k: v for k, v in self.state.tasks.items() if k != task.task_id}
            cycle = find_cycle(others, task.task_id, list(request.blocked_by))
            if cycle is not None:
                self._refuse(
                    request.by, "update", "blocked_by would create a cycle: " + " -> ".join(cycle)
                )
        self.emit(
            [
                TeamTaskUpdated(
                    task_id=task.task_id,
                    by=request.by,
                    priority=request.priority,
                    description=request.description,
                    blocked_by=list(dict.fromkeys(request.blocked_by))
                    if request.blocked_by is not None
                    else None,
                )
            ]
        )
        return task

    def _claim(self, by: str, task_id: str) -> TaskItem:
        task = self._task(by, "claim", task_id)
        if task.status == "claimed":
            self._refuse(by, "claim", f"task {task_id} is already claimed by {task.claimed_by}")
        if task.status == "completed":
            self._refuse(by, "claim", f"task {task_id} is already completed by {task.claimed_by}")
        if task.status == "blocked":
            self._refuse(
                by,
                "claim",
                f"task {task_id} is blocked by unfinished task(s): "
                f"{', '.join(self.state.open_blockers(task))}",
            )
        if task.assignee and task.assignee != by:
            self._refuse(by, "claim", f"task {task_id} is assigned to {task.assignee}")
        self.emit([TeamTaskClaimed(task_id=task_id, by=by, at=time.time())])
        return task

    def _complete(self, by: str, task_id: str, result: str) -> TaskItem:
        task = self._task(by, "complete", task_id)
        if task.status != "claimed":
            self._refuse(
                by, "complete", f"task {task_id} is {task.status}; claim it before completing it"
            )
        if task.claimed_by != by:
            self._refuse(by, "complete", f"task {task_id} is claimed by {task.claimed_by}, not you")
        events: list[Event] = [
            TeamTaskCompleted(task_id=task_id, by=by, result=result[:_MAX_TEXT], at=time.time())
        ]
        self.emit(events)
        unblocked = [
            t
            for t in self.state.tasks.values()
            if t.status == "blocked" and not self.state.open_blockers(t)
        ]
        if unblocked:
            self.emit([TeamTaskUnblocked(task_id=t.task_id) for t in unblocked])
            for dependent in unblocked:
                self._activate_for(dependent)
        self._report_to_creator(task, by, result)
        return task

    def _list(self, filter_: TaskFilter, order: TaskOrder) -> list[TaskItem]:
        if filter_ not in ("active", "completed", "all") or order not in ("priority", "newest"):
            raise Rejected("filter must be active, completed or all; order priority or newest")
        tasks = [
            t
            for t in self.state.tasks.values()
            if filter_ == "all" or (t.status == "completed") == (filter_ == "completed")
        ]
        if order == "priority":
            return sorted(tasks, key=lambda t: (-t.priority, t.seq))
        return sorted(tasks, key=lambda t: -t.seq)

    # -- mailbox ------------------------------------------------------------------------
    def _send(self, by: str, to: str, text: str) -> MailItem:
        if not text.strip() or len(text) > _MAX_TEXT:
            self._refuse(by, "send", f"a message needs 1-{_MAX_TEXT} characters")
        message_id = f"m{len(self.state.mail) + 1}"
        self.emit(
            [TeamMessageSent(message_id=message_id, sender=by, to=to, text=text, at=time.time())]
        )
        return self.state.mail[-1]

    def _read(self, agent: str) -> list[MailItem]:
        unread = [
            m
            for m in self.state.mail
            if m.to in (agent, "*") and m.sender != agent and agent not in m.read_by
        ]
        if unread:
            self.emit([TeamMessagesRead(agent=agent, message_ids=[m.message_id for m in unread])])
        return unread

    # -- helpers ------------------------------------------------------------------------
    def _task(self, by: str, action: str, task_id: str) -> TaskItem:
        task = self.state.tasks.get(task_id)
        if task is None:
            known = ", ".join(list(self.state.tasks)[-10:]) or "none yet"
            self._refuse(by, action, f"unknown task id {task_id!r} (known: {known})")
        assert task is not None
        return task

    def _refuse(self, by: str, action: str, reason: str) -> None:
        self.emit([TeamRequestRefused(by=by, action=action, reason=reason)])
        raise Rejected(reason)

    def _activate_for(self, task: TaskItem) -> None:
        ports = self.runtime.services.get("agents")
        targets = (
            [task.assignee]
            if task.assignee
            else [
                m for m in self.state.member_keys() if m not in (self.state.lead, task.created_by)
            ]
        )
        for agent in targets:
            self.emit([TeammateActivated(agent=agent, reason="task posted", task_id=task.task_id)])
            text = (
                f"[Team message from {task.created_by}]: task {task.task_id} "
                f'"{task.subject}" is on the board of team {self.state.name}. Claim it with '
                "team_tasks (action=claim), do it, then complete it with your result."
            )
            self._tell(
                ports,
                agent,
                team_session_key(self.state.team_id),
                text,
                f"team:{self.state.team_id}",
            )

    def _report_to_creator(self, task: TaskItem, by: str, result: str) -> None:
        ports = self.runtime.services.get("agents")
        origin = task.origin_session
        if ports is None or not origin.startswith("session/") or by == task.created_by:
            return
        _, agent, session_key = origin.split("/", 2)
        text = f'task {task.task_id} "{task.subject}" completed: {result}'
        self._tell(ports, agent, session_key, text, f"teammate:{by}", outbox_kind="teammate")

    def _tell(
        self,
        ports: Any,
        agent: str,
        session_key: str,
        text: str,
        sender: str,
        outbox_kind: str = "",
    ) -> None:
        try:
            ports.tell_agent(agent, session_key, text, sender, outbox_kind=outbox_kind)
        except Exception as exc:  # an unregistered agent must not crash the board
            self.log.warning("could not reach team member", agent=agent, error=str(exc))

    def _view(self) -> TeamView:
        state = self.state
        members = [(state.lead, "lead")] + [
            (m.agent, m.role) for m in state.members if m.agent != state.lead
        ]
        return TeamView(
            team_id=state.team_id,
            name=state.name,
            lead=state.lead,
            members=members,
            tasks=self._list("all", "newest")[::-1],
        )

"""The package shows a sorted public API and keeps to its side of the layering."""

from __future__ import annotations

import subprocess
import sys

from clawlog import projections
from clawlog.projections import errors
from tests.projections.support import ROOT


def test_all_is_sorted_and_every_name_resolves() -> None:
    names = list(projections.__all__)
    # isort style (ruff RUF022): CONSTANTS, then Classes, then functions, each alphabetical.
    assert names == sorted(
        names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)
    )
    assert all(hasattr(projections, name) for name in names)


def test_every_error_derives_from_the_one_root() -> None:
    raised = [getattr(errors, name) for name in errors.__all__]
    assert all(issubclass(cls, errors.ProjectionError) for cls in raised)
    assert {cls.__name__ for cls in raised} <= set(projections.__all__)


def test_projections_import_events_only_never_actors_or_tools() -> None:
    code = (
        "import sys, clawlog.projections, clawlog.projections.testing, clawlog.projections.timeline\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[:2] in (['clawlog', 'actors'], ['clawlog', 'tools']))\n"
        "print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == ""


#: What a views file stores about each projection: its checkpoint key (``name``), the
#: version that decides a rebuild, and its tables. Renaming a class or a module must leave
#: these alone, or a views file built before would be rebuilt or left unread.
PERSISTED = {
    "SessionHistory": ("session_history", 5, ("session_history",)),
    "ToolAudit": ("tool_audit", 4, ("tool_audit", "tool_audit_reasons")),
    "StreamCatalog": ("stream_catalog", 1, ("stream_catalog",)),
    "ActorLifecycle": ("actor_lifecycle", 1, ("actor_lifecycle", "actor_incidents")),
    "TaskBoards": ("task_boards", 3, ("task_boards", "teams")),
    "HandoffRoutes": ("handoff_routes", 2, ("handoff_routes",)),
    "Delegations": ("delegations", 3, ("delegations",)),
    "SubagentTasks": ("subagent_tasks", 2, ("subagent_tasks",)),
    "McpHealth": (
        "mcp_health",
        1,
        ("mcp_health", "mcp_tools", "mcp_grants", "mcp_access_requests"),
    ),
    "ModelUsage": ("usage", 2, ("usage_calls", "usage_sessions")),
    "Timers": ("timers", 1, ("timers",)),
}

#: The projection each reader waits on: the same checkpoint keys.
READS = {
    "ActorLifecycleReader": "actor_lifecycle",
    "DelegationReader": "delegations",
    "HandoffRouteReader": "handoff_routes",
    "McpHealthReader": "mcp_health",
    "ModelUsageReader": "usage",
    "SessionHistoryReader": "session_history",
    "StreamCatalogReader": "stream_catalog",
    "SubagentTaskReader": "subagent_tasks",
    "TaskBoardReader": "task_boards",
    "TimerReader": "timers",
    "ToolAuditReader": "tool_audit",
}


def test_projection_names_versions_and_tables_are_pinned() -> None:
    stored = {
        p.__name__: (p.name, p.version, tuple(p.table_names)) for p in projections.ALL_PROJECTIONS
    }
    assert stored == PERSISTED


def test_each_reader_waits_on_its_pinned_projection() -> None:
    readers = {name: getattr(projections, name).projection for name in READS}
    assert readers == READS

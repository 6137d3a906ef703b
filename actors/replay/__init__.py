"""Re-run a recorded session with its model replies and tool results served from the log.

The timeline and the generic state-as-of fold live in :mod:`projections.timeline`; this
package knows the actors' folds (:func:`stream_state_as_of`), drives the agent loop again
(:func:`rerun`), compares it step by step with the recording and reports the first
divergence.

    report = await rerun(store, "lead", "demo-user", config=deny_tools("exec"))
    if not report.matched:
        print(report.divergence.kind, report.divergence.position)
"""

from .compare import Divergence, DivergenceKind
from .engine import ConfigChange, RerunReport, deny_tools, rerun
from .folds import stream_state_as_of
from .recording import RecordedTurn, read_session
from .telemetry_export import ExportIds, export_session, turn_trace_id

__all__ = [
    "ConfigChange",
    "Divergence",
    "DivergenceKind",
    "ExportIds",
    "RecordedTurn",
    "RerunReport",
    "deny_tools",
    "export_session",
    "read_session",
    "rerun",
    "stream_state_as_of",
    "turn_trace_id",
]

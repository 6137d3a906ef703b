"""Re-run a recorded session with its model replies and tool results served from the log.

The timeline and the generic state-as-of fold live in :mod:`projections.replay`; this
package knows the actors' folds (:func:`stream_state_as_of`), drives the agent loop again
(:func:`rerun`), compares it step by step with the recording and reports the first
divergence.

    report = await rerun(store, "lead", "demo-user", config=deny_tools("exec"))
    if not report.matched:
        print(report.divergence.kind, report.divergence.position)
"""

from ..errors import NothingRecorded, ReplayError, ReplyNotRecorded
from .compare import Divergence, DivergenceKind, compare_turn
from .engine import KNOWN_TOOLS, ConfigChange, RerunReport, deny_tools, rerun
from .folds import STATE_FOLDS, StateFold, fold_for, stream_state_as_of
from .recording import (
    LogReader,
    RecordedCall,
    RecordedIteration,
    RecordedTurn,
    config_before,
    parse_turns,
    read_session,
)
from .serving import REPLAY_APPROVER, ContextNote, RecordedTool, ReplayGateway, ReplayModel

__all__ = [
    "KNOWN_TOOLS",
    "REPLAY_APPROVER",
    "STATE_FOLDS",
    "ConfigChange",
    "ContextNote",
    "Divergence",
    "DivergenceKind",
    "LogReader",
    "NothingRecorded",
    "RecordedCall",
    "RecordedIteration",
    "RecordedTool",
    "RecordedTurn",
    "ReplayError",
    "ReplayGateway",
    "ReplayModel",
    "ReplyNotRecorded",
    "RerunReport",
    "StateFold",
    "compare_turn",
    "config_before",
    "deny_tools",
    "fold_for",
    "parse_turns",
    "read_session",
    "rerun",
    "stream_state_as_of",
]

"""``clawlog lineage ID`` and ``clawlog delegations --unreturned``: read from the log.

``lineage`` prints one request's chain (a delegation, a subagent task or a handoff): the
turn and tool call that asked, the target's turns, the outcome and where it was
delivered, or "not delivered". ``--unreturned`` lists every delegation and subagent
result that is recorded but never reached its caller. Both read the log itself
(:mod:`clawlog.projections.read_models.lineage`), not a read model.
"""

from __future__ import annotations

import sys

import msgspec

from clawlog.events import EventStore
from clawlog.projections.read_models.lineage import (
    Lineage,
    LineagePoint,
    read_lineage,
    read_unreturned,
)

from .errors import CliError
from .listing import Format, Listing
from .points import Window
from .render import emit_json

__all__ = ["lineage", "unreturned_listing"]

_UNRETURNED_COLUMNS = [
    "requested",
    "kind",
    "id",
    "mode",
    "source",
    "caller session",
    "target",
    "outcome",
    "outcome pos",
    "result",
]


async def lineage(store: EventStore, id: str, *, as_json: bool) -> int:
    """Print the chains ``id`` names (see :func:`read_lineage`); an unknown id is an error."""
    chains = await read_lineage(store, id)
    if not chains:
        raise CliError(
            f"no delegation, subagent task or handoff in the log has the id, tool call or "
            f"turn {id!r}; `clawlog delegations` and `clawlog tail --type "
            "delegation.requested --type subagent.spawned` list their ids"
        )
    if as_json:
        emit_json([msgspec.to_builtins(chain) for chain in chains])
        return 0
    for number, chain in enumerate(chains):
        if number:
            sys.stdout.write("\n")
        sys.stdout.write("".join(f"{line}\n" for line in describe(chain)))
    return 0


def describe(chain: Lineage) -> list[str]:
    """A chain in a few lines: asked, requested, worked, outcome, delivered."""
    mode = f" ({chain.mode})" if chain.mode else ""
    lines = [f"{chain.kind} {chain.id}{mode} {chain.source} -> {chain.target}: {chain.task}"]
    asked = f"{chain.source}  {chain.source_session}  turn {chain.turn_id or '?'}"
    if chain.call_id:
        asked += f"  call {chain.call_id}"
    if chain.asked_call is not None:
        asked += f"  @{chain.asked_call.position}"
    if chain.asked_turn is not None:
        cause = f", caused by {chain.caused_by}" if chain.caused_by else ""
        asked += f" (turn started @{chain.asked_turn.position}{cause})"
    lines.append(f"  asked      {asked}")
    lines.append(f"  requested  {chain.request.stream}  @{chain.request.position}")
    for point in chain.worked:
        lines.append(f"  worked     {chain.target}  {_point(point)}")
    if not chain.worked and chain.kind != "handoff":
        lines.append("  worked     no turn of the target in the log")
    outcome = chain.outcome
    if outcome is None:
        lines.append("  outcome    none yet (running)")
        return lines
    why = f" ({outcome.reason})" if outcome.reason and outcome.reason != outcome.status else ""
    result = f": {_one_line(outcome.result)}" if outcome.result else ""
    lines.append(f"  outcome    {outcome.status}{why}  @{outcome.position}{result}")
    if chain.delivery is not None:
        failed = f"  (that turn failed: {chain.delivery_failed})" if chain.delivery_failed else ""
        lines.append(f"  delivered  {_point(chain.delivery)}{failed}")
    elif chain.delivered:
        lines.append("  delivered  (the log does not name where)")
    else:
        lines.append("  delivered  not delivered")
    return lines


async def unreturned_listing(store: EventStore, *, form: Format, window: Window) -> None:
    """``delegations --unreturned``: one row per result that never reached its caller."""
    if window.skip_corrupt:
        raise CliError(
            "--unreturned reads the log itself and cannot step over corrupt events; "
            "`clawlog doctor` names them"
        )
    if window.since is not None and window.since.position is None:
        raise CliError("--unreturned takes --since as a log position (of the request), not a time")
    after = window.after
    with Listing("unreturned results", _UNRETURNED_COLUMNS, form) as listing:
        for chain in await read_unreturned(store):
            if chain.request.position <= after:
                continue
            if window.limit and listing.rows >= window.limit:
                break
            outcome = chain.outcome
            listing.add(
                [
                    chain.request.position,
                    chain.kind,
                    chain.id,
                    chain.mode,
                    chain.source,
                    chain.source_session,
                    chain.target,
                    outcome.status if outcome else None,
                    outcome.position if outcome else None,
                    _one_line(outcome.result) if outcome else None,
                ],
                msgspec.to_builtins(chain),
            )


def _point(point: LineagePoint) -> str:
    turn = f"  turn {point.turn_id}" if point.turn_id else ""
    call = f"  call {point.call_id}" if point.call_id else ""
    return f"{point.stream}{turn}{call}  @{point.position}"


def _one_line(text: str) -> str:
    return " ".join(text.split())

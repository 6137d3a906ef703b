"""``clawlog audit --what-if POLICY_FILE``: every recorded call decided again under
another policy (:mod:`clawlog.tools.what_if`), and the calls whose outcome would change.

The log is read a page at a time and each change is printed as it is found
(``listing.py``); ``--since`` and ``--until`` (a position, an ISO time or @EPOCH:
``points.py``) choose the calls by their request, ``--agent`` and ``--tool`` by who
asked for what. The totals come last: in the JSON document after the changes
(``{"policy", "agent", "digest" | "global_digest", "changes": [...], "totals": {...}}``),
under the table on a terminal, and on stderr off one (the tab-separated rows stay rows
only). ``--limit`` caps the rows listed; the totals still count every call. Exit status 0
whatever changes.

**Which digest.** A recorded verdict carries the digest of the policy as it applied to
its agent (:func:`clawlog.tools.policy_digest` with that agent: the global sections and
the agent's own). With ``--agent KEY`` the header names that digest (``"digest"``),
comparable with the verdicts of KEY's calls; without it, the digest over every agent's
section (``"global_digest"``), which names the file but matches no recorded verdict.
"""

from __future__ import annotations

import sys
from typing import Any

from clawlog.events import EventStore
from clawlog.tools.errors import PolicyFileError
from clawlog.tools.policy_file import PolicyFile, load_policy_file
from clawlog.tools.what_if import CallChange, PolicyWhatIf, WhatIfTotals

from .errors import CliError
from .listing import Format, Listing
from .points import EVERY_ROW, LogPoint, Window, first_position_at
from .render import console, report_skipped

__all__ = ["what_if"]

_COLUMNS = ["pos", "call", "tool", "agent", "stream", "change", "was", "now"]
#: How each change reads in the ``change`` column.
_CHANGE_WORDS = {
    "newly_refused": "allowed -> refused",
    "newly_allowed": "refused -> allowed",
    "newly_asks": "-> asks a person",
}


async def what_if(
    store: EventStore,
    policy_path: str,
    *,
    agent: str | None,
    tool: str | None,
    form: Format,
    window: Window = EVERY_ROW,
    until: LogPoint | None = None,
) -> None:
    """``until``: only calls requested before it (a position or a time, exclusive); the
    window's ``since``: from it on."""
    try:
        policy = load_policy_file(policy_path)
    except PolicyFileError as exc:
        raise CliError(str(exc)) from exc
    since_time = window.since_time
    start = window.after + 1
    if since_time is not None:
        start = await first_position_at(store, since_time, skip_corrupt=window.skip_corrupt)
    run = PolicyWhatIf(
        policy,
        agent=agent,
        tool=tool,
        since_time=since_time,
        until_time=until.time if until is not None else None,
        until=until.position if until is not None else None,
    )
    head, label = _digest_head(policy, policy_path, agent)
    with Listing(
        f"what if {policy_path} decided ({label})",
        _COLUMNS,
        form,
        json_head=head,
        json_key="changes",
        empty="no recorded call would change",
    ) as listing:
        async for change in run.changes(store, start=start, skip_corrupt=window.skip_corrupt):
            if not window.limit or listing.rows < window.limit:
                listing.add(_row(change), change)
        listing.json_tail = {"totals": run.totals}
    _report_totals(run.totals, form)
    if run.pages is not None:
        report_skipped(run.pages.skipped, run.pages.damaged)


def _digest_head(policy: PolicyFile, path: str, agent: str | None) -> tuple[dict[str, Any], str]:
    """The JSON document's head and the table's title words: the digest recorded verdicts
    of ``agent`` carry, or, for no agent, the global one (named so: it matches none)."""
    if agent is not None:
        digest = policy.digest(agent)
        return {"policy": path, "agent": agent, "digest": digest}, (
            f"digest {digest} for agent {agent}"
        )
    digest = policy.digest()
    return {"policy": path, "agent": None, "global_digest": digest}, (
        f"global digest {digest}, over every agent; a recorded verdict carries its "
        "agent's digest (--agent KEY)"
    )


def _row(c: CallChange) -> list[Any]:
    return [
        c.position,
        c.call_id,
        c.tool,
        c.agent,
        c.stream,
        _CHANGE_WORDS[c.change],
        f"{c.was} at {c.was_step or '?'}: {c.was_rule}" if c.was_rule else c.was,
        f"{c.now} at {c.now_step}: {c.now_rule}",
    ]


def _report_totals(totals: WhatIfTotals, form: Format) -> None:
    if form == "json":
        return
    line = (
        f"{totals.examined} call(s) examined: {totals.unchanged} unchanged, "
        f"{totals.newly_refused} newly refused, {totals.newly_allowed} newly allowed, "
        f"{totals.newly_asks} would ask a person, {totals.not_redecidable} not re-decidable"
    )
    whys = "; ".join(f"{count} {why}" for why, count in totals.not_redecidable_why.items())
    if whys:
        line += f" ({whys})"
    if form == "table":
        console().print(line, markup=False, soft_wrap=True)
    else:
        sys.stdout.flush()
        sys.stderr.write(f"clawlog: {line}\n")

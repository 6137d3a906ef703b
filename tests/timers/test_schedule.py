"""When schedules run: cron expressions in a time zone across DST changes, intervals, once."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clawlog.actors import InvalidSchedule
from clawlog.actors.automation.schedule import check_schedule, next_due
from clawlog.events.domain.routine import Schedule

NEW_YORK = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")


def runs(schedule: Schedule, start: datetime, n: int, zone: ZoneInfo) -> list[str]:
    when, out = start.timestamp(), []
    for _ in range(n):
        found = next_due(schedule, when)
        assert found is not None and found > when
        when = found
        out.append(datetime.fromtimestamp(when, zone).isoformat())
    return out


def cron(expr: str, tz: str) -> Schedule:
    return check_schedule(Schedule(kind="cron", expr=expr, tz=tz))


def test_a_daily_run_in_the_skipped_hour_runs_just_after_the_change() -> None:
    # 2026-03-08: New York's clocks go from 02:00 EST to 03:00 EDT.
    assert runs(
        cron("30 2 * * *", "America/New_York"),
        datetime(2026, 3, 6, 12, tzinfo=NEW_YORK),
        3,
        NEW_YORK,
    ) == [
        "2026-03-07T02:30:00-05:00",
        "2026-03-08T03:30:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]


def test_an_hourly_run_does_not_run_twice_when_the_skipped_hour_maps_onto_the_next() -> None:
    assert runs(
        cron("0 * * * *", "America/New_York"),
        datetime(2026, 3, 8, 0, 30, tzinfo=NEW_YORK),
        3,
        NEW_YORK,
    ) == [
        "2026-03-08T01:00:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T04:00:00-04:00",
    ]


def test_a_daily_run_in_the_repeated_hour_runs_once() -> None:
    # 2026-11-01: New York's 01:00-02:00 happens twice (EDT, then EST).
    assert runs(
        cron("30 1 * * *", "America/New_York"),
        datetime(2026, 10, 31, 12, tzinfo=NEW_YORK),
        3,
        NEW_YORK,
    ) == [
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
        "2026-11-03T01:30:00-05:00",
    ]


def test_a_frequent_run_does_not_repeat_the_repeated_hour() -> None:
    assert runs(
        cron("*/30 * * * *", "America/New_York"),
        datetime(2026, 11, 1, 0, 40, tzinfo=NEW_YORK),
        4,
        NEW_YORK,
    ) == [
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T02:00:00-05:00",
        "2026-11-01T02:30:00-05:00",
    ]


def test_berlin_changes_at_its_own_dates() -> None:
    spring = runs(
        cron("30 2 * * *", "Europe/Berlin"), datetime(2026, 3, 28, 12, tzinfo=BERLIN), 2, BERLIN
    )
    autumn = runs(
        cron("30 2 * * *", "Europe/Berlin"), datetime(2026, 10, 24, 12, tzinfo=BERLIN), 2, BERLIN
    )
    assert spring == ["2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"]
    assert autumn == ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]


@settings(max_examples=200, deadline=None)
@given(
    start=st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2030, 1, 1)),
    hour=st.integers(0, 23),
    minute=st.integers(0, 59),
    tz=st.sampled_from(["America/New_York", "Europe/Berlin", "Australia/Sydney", "UTC"]),
)
def test_a_daily_expression_runs_once_a_day_through_every_change(
    start: datetime, hour: int, minute: int, tz: str
) -> None:
    schedule = cron(f"{minute} {hour} * * *", tz)
    zone = ZoneInfo(tz)
    when = start.replace(tzinfo=UTC).timestamp()
    days: list[str] = []
    for _ in range(5):
        due = next_due(schedule, when)
        assert due is not None and due > when
        assert 22 * 3600 <= due - when <= 26 * 3600 or not days  # a day, give or take DST
        local = datetime.fromtimestamp(due, zone)
        days.append(local.date().isoformat())
        when = due
    assert len(set(days)) == 5  # one run per calendar day


def test_intervals_keep_their_grid_and_a_one_time_schedule_runs_once() -> None:
    every = Schedule(kind="every", every_s=600, anchor=1_000_000.0)
    assert next_due(every, 999_000.0) == 1_000_000.0
    assert next_due(every, 1_000_000.0) == 1_000_600.0
    assert next_due(every, 1_003_001.0) == 1_003_600.0  # late: the next point of the grid
    once = Schedule(kind="at", at=2_000_000.0)
    assert next_due(once, 1_999_999.0) == 2_000_000.0
    assert next_due(once, 2_000_000.0) is None


@pytest.mark.parametrize(
    ("schedule", "minimum", "match"),
    [
        (
            Schedule(kind="cron", expr="*/5 * * * *"),
            600,
            "5 min apart; the minimum interval is 10 min",
        ),
        (Schedule(kind="every", every_s=30), 60, "shorter than the minimum"),
        (Schedule(kind="cron", expr="0 9 * * 1-5", tz="Nowhere/City"), 0, "unknown time zone"),
        (Schedule(kind="at", at=0), 0, "one-time schedule needs"),
    ],
)
def test_a_schedule_that_cannot_run_says_what_to_change(
    schedule: Schedule, minimum: float, match: str
) -> None:
    with pytest.raises(InvalidSchedule, match=match):
        check_schedule(schedule, min_interval_s=minimum)

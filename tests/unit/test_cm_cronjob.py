"""CronJob schedules: the most recent missed time, time zones, and Job names."""

from __future__ import annotations

import datetime as dt

import pytest
from kubernetes.client import V1CronJob

from controller_manager.controllers.cronjob import MAX_MISSED, Schedule, job_name
from machinery.client.objects import decode

T0 = dt.datetime(2024, 3, 1, 10, 0, 30, tzinfo=dt.UTC)


def cronjob(schedule: str, time_zone: str | None = None) -> V1CronJob:
    spec = {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}
    if time_zone:
        spec["timeZone"] = time_zone
    return decode(V1CronJob, {"metadata": {"name": "hello", "namespace": "ns"}, "spec": spec})


@pytest.mark.parametrize(("schedule", "since", "now", "latest", "missed"), [
    pytest.param("*/5 * * * *", T0, T0 + dt.timedelta(minutes=12), dt.datetime(2024, 3, 1, 10, 10, tzinfo=dt.UTC), 2,
                 id="two-missed-latest-wins"),
    pytest.param("@hourly", T0, T0 + dt.timedelta(minutes=30), None, 0, id="none-due"),
    pytest.param("* * * * *", T0, T0 + dt.timedelta(days=1), dt.datetime(2024, 3, 2, 10, 0, tzinfo=dt.UTC),
                 MAX_MISSED + 1, id="too-many"),
])
def test_most_recent_scheduled_time(schedule: str, since: dt.datetime, now: dt.datetime,
                                    latest: dt.datetime | None, missed: int) -> None:
    assert Schedule(cronjob(schedule)).most_recent(since, now) == (latest, missed)


def test_the_time_zone_decides_when_a_daily_schedule_fires() -> None:
    schedule = Schedule(cronjob("0 9 * * *", "Asia/Tokyo"))
    assert schedule.next_after(T0) == dt.datetime(2024, 3, 2, 0, 0, tzinfo=dt.UTC)
    assert Schedule(cronjob("CRON_TZ=Asia/Tokyo 0 9 * * *")).next_after(T0) == schedule.next_after(T0)


@pytest.mark.parametrize("bad", ["* * *", "61 * * * *", "@sometimes"])
def test_a_bad_schedule_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        Schedule(cronjob(bad))
    with pytest.raises(ValueError, match="unknown time zone"):
        Schedule(cronjob("* * * * *", "Mars/Olympus"))


def test_job_names_are_the_scheduled_minute() -> None:
    assert job_name("hello", dt.datetime(2024, 3, 1, 10, 5, tzinfo=dt.UTC)) == "hello-28488125"

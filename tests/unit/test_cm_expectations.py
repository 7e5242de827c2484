"""Expectations: a controller acts only once its own creations and deletions came back through the watch."""

from __future__ import annotations

from controller_manager.expectations import EXPECTATIONS_TIMEOUT, Expectations
from machinery.client.clock import FakeClock


def test_a_controller_without_expectations_may_act() -> None:
    assert Expectations(clock=FakeClock()).satisfied("ns/web")


def test_creations_must_all_be_observed() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_creations("ns/web", 2)
    assert not expectations.satisfied("ns/web")
    expectations.creation_observed("ns/web")
    assert not expectations.satisfied("ns/web")
    expectations.creation_observed("ns/web")
    assert expectations.satisfied("ns/web")
    expectations.creation_observed("ns/web")
    assert expectations.satisfied("ns/web"), "an extra observation (a lost response) does not block"


def test_each_deletion_counts_once_however_often_it_is_seen() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_deletions("ns/web", ["ns/a", "ns/b"])
    expectations.deletion_observed("ns/web", "ns/a")
    expectations.deletion_observed("ns/web", "ns/a")
    expectations.deletion_observed("ns/web", "ns/other")
    assert not expectations.satisfied("ns/web")
    expectations.deletion_observed("ns/web", "ns/b")
    assert expectations.satisfied("ns/web")


def test_expectations_expire_so_a_lost_event_cannot_wedge_the_controller() -> None:
    clock = FakeClock()
    expectations = Expectations(clock=clock)
    expectations.expect_creations("ns/web", 1)
    clock.advance(EXPECTATIONS_TIMEOUT)
    assert not expectations.satisfied("ns/web")
    clock.advance(0.001)
    assert expectations.satisfied("ns/web")


def test_deleting_a_controller_forgets_its_expectations() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_deletions("ns/web", ["ns/a"])
    expectations.delete("ns/web")
    assert expectations.satisfied("ns/web")
    expectations.deletion_observed("ns/web", "ns/a")
    assert expectations.satisfied("ns/web")

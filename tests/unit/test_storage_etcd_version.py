"""Which etcd versions order a watch's progress answers behind its events (kube-apiserver's table)."""

from __future__ import annotations

import pytest

from apiserver.storage.etcd import parse_version, reliable_progress_requests


@pytest.mark.parametrize(("text", "parsed"), [("3.5.1", (3, 5, 1)), ("3.5.13", (3, 5, 13)),
                                              ("3.6.0-rc.1", (3, 6, 0)), ("3.4", (3, 4, 0))])
def test_versions_parse(text: str, parsed: tuple[int, int, int]) -> None:
    assert parse_version(text) == parsed


@pytest.mark.parametrize(("version", "reliable"), [
    ((3, 5, 1), False), ((3, 5, 12), False), ((3, 5, 13), True), ((3, 5, 21), True),
    ((3, 4, 30), False), ((3, 4, 31), True), ((3, 3, 27), False), ((3, 6, 0), True), ((4, 0, 0), True),
])
def test_progress_requests_are_trusted_from_the_fixed_releases_on(version: tuple[int, int, int],
                                                                  reliable: bool) -> None:
    assert reliable_progress_requests(version) is reliable

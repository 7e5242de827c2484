"""Kubernetes' name and label syntax rules (machinery/api/names.py), worded as Kubernetes words them."""

from __future__ import annotations

import pytest

from machinery.api import names


@pytest.mark.parametrize(("key", "problems"), [
    ("app", []),
    ("example.com/app", []),
    ("/app", ["prefix part must be non-empty"]),
    ("a/b/c", [("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
                "and '/' (e.g. 'example.com/MyName')")]),
    ("x" * 64, ["name part must be no more than 63 characters"]),
])
def test_qualified_names(key: str, problems: list[str]) -> None:
    assert names.is_qualified_name(key) == problems


@pytest.mark.parametrize(("value", "count"), [("", 0), ("web-1", 0), ("-web", 1), ("v" * 64, 1), ("a b", 1)])
def test_label_values(value: str, count: int) -> None:
    assert len(names.is_valid_label_value(value)) == count


def test_remembered_verdicts_are_fresh_lists_every_time() -> None:
    """The verdicts are cached; a caller that extends the list it got must not change the next caller's."""
    first = names.is_qualified_name("/app")
    first.append("the caller's own problem")
    assert names.is_qualified_name("/app") == ["prefix part must be non-empty"]
    value = names.is_valid_label_value("-web")
    value.clear()
    assert len(names.is_valid_label_value("-web")) == 1

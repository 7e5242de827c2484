"""Field errors render exactly as apimachinery's field.Error and NewInvalid do."""

from __future__ import annotations

import pytest

from apiserver.validation.field import ErrorType, FieldError, Path, go_quote, invalid_message, render_value


@pytest.mark.parametrize(("error", "body"), [
    pytest.param(FieldError.required("spec.containers"), "Required value", id="required"),
    pytest.param(FieldError.required("metadata.name", "name or generateName is required"),
                 "Required value: name or generateName is required", id="required-detail"),
    pytest.param(FieldError.invalid("spec.x", "Bad", "must be lower case"),
                 'Invalid value: "Bad": must be lower case', id="invalid-string"),
    pytest.param(FieldError.invalid("spec.x", 70000, "must be between 1 and 65535, inclusive"),
                 "Invalid value: 70000: must be between 1 and 65535, inclusive", id="invalid-int"),
    pytest.param(FieldError.invalid("spec.x", True, "d"), "Invalid value: true: d", id="invalid-bool"),
    pytest.param(FieldError.invalid("spec.x", None, "d"), "Invalid value: null: d", id="invalid-null"),
    pytest.param(FieldError.invalid("spec.x", {"b": "2", "a": "1"}, "d"),
                 'Invalid value: {"a":"1","b":"2"}: d', id="invalid-map-sorted-json"),
    pytest.param(FieldError.invalid("spec.x", ["a", "b"], "d"), 'Invalid value: ["a","b"]: d',
                 id="invalid-list"),
    pytest.param(FieldError.invalid("spec.x", {"k": "<&>"}, "d"),
                 'Invalid value: {"k":"\\u003c\\u0026\\u003e"}: d', id="invalid-json-html-escaped"),
    pytest.param(FieldError.invalid("spec.x", "", "d"), 'Invalid value: "": d', id="invalid-empty-string"),
    pytest.param(FieldError.invalid("spec.x", "v", ""), 'Invalid value: "v"', id="invalid-no-detail"),
    pytest.param(FieldError.type_invalid("spec.x", "1", "must be an integer"),
                 'Invalid value: "1": must be an integer', id="type-invalid"),
    pytest.param(FieldError.not_supported("spec.restartPolicy", "Sometimes",
                                          ["Always", "OnFailure", "Never"]),
                 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
                 id="not-supported"),
    pytest.param(FieldError.not_supported("spec.x", "y", []), 'Unsupported value: "y"',
                 id="not-supported-no-list"),
    pytest.param(FieldError.duplicate("spec.containers[1].name", "x"), 'Duplicate value: "x"',
                 id="duplicate"),
    pytest.param(FieldError.duplicate("spec.taints[1]", {"key": "a"}, "taints must be unique"),
                 'Duplicate value: {"key":"a"}: taints must be unique', id="duplicate-detail"),
    pytest.param(FieldError.not_found("spec.x", "data"), 'Not found: "data"', id="not-found"),
    pytest.param(FieldError.forbidden("spec", "may not be changed"), "Forbidden: may not be changed",
                 id="forbidden"),
    pytest.param(FieldError.too_long("metadata.annotations", 262144),
                 "Too long: may not be more than 262144 bytes", id="too-long"),
    pytest.param(FieldError.internal("spec", "boom"), "Internal error: boom", id="internal"),
])
def test_error_body(error: FieldError, body: str) -> None:
    assert error.error_body() == body
    assert str(error) == f"{error.field}: {body}"


def test_cause_is_a_status_cause() -> None:
    error = FieldError.invalid(Path("metadata", "name"), "Bad", "lower case please")
    assert error.cause() == {"reason": "FieldValueInvalid",
                             "message": 'Invalid value: "Bad": lower case please',
                             "field": "metadata.name"}
    assert error.type is ErrorType.INVALID


@pytest.mark.parametrize(("text", "quoted"), [
    pytest.param("plain", '"plain"', id="plain"),
    pytest.param('say "hi"\\', '"say \\"hi\\"\\\\"', id="quote-and-backslash"),
    pytest.param("a\nb\tc\r", '"a\\nb\\tc\\r"', id="control-escapes"),
    pytest.param("\x00\x1b\x7f", '"\\x00\\x1b\\x7f"', id="hex-escapes"),
    pytest.param("caf\u00e9 \u65e5\u672c", '"caf\u00e9 \u65e5\u672c"', id="printable-unicode-kept"),
    pytest.param("\u00a0\u200b", '"\\u00a0\\u200b"', id="non-printable-unicode"),
    pytest.param("\U000e0001", '"\\U000e0001"', id="astral-non-printable"),
    pytest.param("\U0001f600", '"\U0001f600"', id="emoji-kept"),
])
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


@pytest.mark.parametrize(("value", "rendered"), [
    pytest.param(1.5, "1.5", id="fraction"),
    pytest.param(2.0, "2", id="whole"),
    pytest.param(100000.0, "100000", id="below-exponent-threshold"),
    pytest.param(1e6, "1e+06", id="million"),
    pytest.param(1234567.0, "1.234567e+06", id="mantissa"),
    pytest.param(0.0001, "0.0001", id="small"),
    pytest.param(0.00001, "1e-05", id="tiny"),
    pytest.param(-2.5, "-2.5", id="negative"),
    pytest.param(0.0, "0", id="zero"),
    pytest.param(float("inf"), "+Inf", id="infinity"),
])
def test_floats_render_as_go_prints_them(value: float, rendered: str) -> None:
    assert render_value(value) == rendered


@pytest.mark.parametrize(("path", "text"), [
    pytest.param(Path("spec").child("containers").index(0).child("name"), "spec.containers[0].name",
                 id="child-index"),
    pytest.param(Path("metadata", "labels").key("app"), "metadata.labels[app]", id="key"),
    pytest.param(Path("spec").child("template", "spec"), "spec.template.spec", id="several-children"),
    pytest.param(Path("status", "capacity", "cpu"), "status.capacity.cpu", id="several-names"),
    pytest.param(Path("spec").index(0).index(1), "spec[0][1]", id="nested-index"),
    pytest.param(Path(""), "", id="empty-root"),
])
def test_path_renders_like_kubernetes(path: Path, text: str) -> None:
    assert str(path) == text


def test_paths_are_values() -> None:
    base = Path("spec")
    assert base.child("a") == Path("spec", "a")
    assert base.child("a") != base.child("b")
    assert {base.child("a"), Path("spec", "a")} == {Path("spec", "a")}
    assert str(base) == "spec"  # children never change their parent


def test_steps_are_remembered_within_bounds() -> None:
    """The same step from the same path is the same (immutable) object; user-sized steps are not kept."""
    base = Path("spec")
    assert base.child("template") is base.child("template")
    assert base.child("containers").index(3) is base.child("containers").index(3)
    assert str(base.child("containers").index(3).child("name")) == "spec.containers[3].name"
    assert base.index(1000) is not base.index(1000) and str(base.index(1000)) == "spec[1000]"
    assert base.key("app") is not base.key("app")
    many = Path("object")
    fields = [many.child(f"field{i}") for i in range(200)]
    assert [str(f) for f in fields] == [f"object.field{i}" for i in range(200)]
    assert many.child("field199") is not fields[199]  # beyond the steps one path keeps
    assert many.child("field0") is fields[0]


@pytest.mark.parametrize(("errors", "message"), [
    pytest.param([], 'Pod "bad" is invalid', id="no-errors"),
    pytest.param([FieldError.required("spec.containers")],
                 'Pod "bad" is invalid: spec.containers: Required value',
                 id="one"),
    pytest.param([FieldError.required("spec.containers"), FieldError.required("metadata.namespace")],
                 'Pod "bad" is invalid: [spec.containers: Required value, metadata.namespace: Required value]',
                 id="several-bracketed"),
    pytest.param([FieldError.required("spec.a"), FieldError.required("spec.a"),
                  FieldError.required("spec.b")],
                 'Pod "bad" is invalid: [spec.a: Required value, spec.b: Required value]', id="duplicates-once"),
    pytest.param([FieldError.required("spec.a"), FieldError.required("spec.a")],
                 'Pod "bad" is invalid: spec.a: Required value', id="only-duplicates-unbracketed"),
])
def test_invalid_message(errors: list[FieldError], message: str) -> None:
    assert invalid_message("Pod", "bad", errors) == message


def test_invalid_message_quotes_the_name_and_keeps_the_group() -> None:
    message = invalid_message("Lease.coordination.k8s.io", 'a"b', [FieldError.required("spec")])
    assert message == 'Lease.coordination.k8s.io "a\\"b" is invalid: spec: Required value'

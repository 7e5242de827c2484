"""Label selectors: grammar, canonical form, matching and messages, checked against Kubernetes' own tables."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.client import V1LabelSelector, V1LabelSelectorRequirement

from machinery.api import labels
from machinery.api.labels import (
    Operator,
    Requirement,
    Selector,
    SelectorError,
    format_selector,
    selector_from_set,
)

KEY_NAME_ERROR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_ERROR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
OPERATORS = "in, notin, =, ==, !=, gt, lt"


@pytest.mark.parametrize(("text", "canonical"), [
    pytest.param("x=a,y=b,z=c", "x=a,y=b,z=c", id="equals"),
    pytest.param("", "", id="empty"),
    pytest.param("x!=a,y=b", "x!=a,y=b", id="not-equals"),
    pytest.param("x=", "x=", id="empty-value"),
    pytest.param("x= ", "x=", id="empty-value-trailing-space"),
    pytest.param("x=,z= ", "x=,z=", id="two-empty-values"),
    pytest.param("!x", "!x", id="does-not-exist"),
    pytest.param("x>1", "x>1", id="greater-than"),
    pytest.param("x>1,z<5", "x>1,z<5", id="greater-and-less"),
    pytest.param("x==a", "x==a", id="double-equals-kept"),
    pytest.param("a=x,x=a", "a=x,x=a", id="sorted-by-key"),
    pytest.param("x=a,a=x", "a=x,x=a", id="sorted-by-key-reversed"),
    pytest.param("\rx", "x", id="carriage-return-is-space"),
    pytest.param("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash",
                 id="prefixed-key"),
    pytest.param("0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
                 "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)", id="notin-with-spaces"),
    pytest.param("foo  in\t (abc)", "foo in (abc)", id="tabs-around-in"),
    pytest.param("x notin\n (abc)", "x notin (abc)", id="newline-after-notin"),
    pytest.param("x in (abc,)", "x in (,abc)", id="trailing-comma-is-empty-value"),
    pytest.param("x in ()", "x in ()", id="empty-set-is-empty-value"),
    pytest.param("x notin ( )", "x notin ()", id="blank-set"),
    pytest.param("x notin (, a)", "x notin (,a)", id="leading-comma"),
    pytest.param("x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()", id="mixed"),
    pytest.param("x in (b,a,b)", "x in (a,b)", id="values-sorted-and-deduplicated"),
    pytest.param("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)", id="keywords-as-values"),
    pytest.param("notin=in", "notin=in", id="keywords-as-key-and-value"),
    pytest.param("a ", "a", id="exists-trailing-space"),
    pytest.param("z!=a,z", "z!=a,z", id="same-key-keeps-order"),
    pytest.param("a\0garbage", "a", id="nul-ends-input-as-in-go"),
])
def test_parse_canonical_string(text: str, canonical: str) -> None:
    assert str(Selector.parse(text)) == canonical


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("x=a||y=b", f'unable to parse requirement: values[0][x]: Invalid value: "a||y": {VALUE_ERROR}',
                 id="pipes-in-value"),
    pytest.param("x==a==b", "found '==', expected: ',' or 'end of string'", id="two-operators"),
    pytest.param("!x=a", "found '=', expected: ',' or 'end of string'", id="negated-with-value"),
    pytest.param("x<a", "unable to parse requirement: values[0]: Invalid value: \"a\": "
                 "for 'Gt', 'Lt' operators, the value must be an integer", id="lt-not-integer"),
    pytest.param("x>-1", f'unable to parse requirement: values[0][x]: Invalid value: "-1": {VALUE_ERROR}',
                 id="gt-negative-is-not-a-label-value"),
    pytest.param("x,,y", "found ',', expected: identifier after ','", id="double-comma"),
    pytest.param(",x,y", "found ',', expected: !, identifier, or 'end of string'", id="leading-comma"),
    pytest.param("x,", "found '', expected: identifier after ','", id="trailing-comma"),
    pytest.param("x nott in (y)", f"unable to parse requirement: found 'nott', expected: {OPERATORS}",
                 id="misspelt-operator"),
    pytest.param("a in (xyz),", "found '', expected: identifier after ','", id="comma-after-set"),
    pytest.param("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'", id="missing-comma"),
    pytest.param("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'",
                 id="space-separated-values"),
    pytest.param("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier",
                 id="unclosed-set"),
    pytest.param("x in (a", "unable to parse requirement: found '', expected: ',' or ')'", id="unclosed-value"),
    pytest.param("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier",
                 id="operator-in-set"),
    pytest.param("x in a", "unable to parse requirement: found 'a' expected: '('", id="set-without-parens"),
    pytest.param("a (", f"unable to parse requirement: found '(', expected: {OPERATORS}", id="paren-after-key"),
    pytest.param("(", "found '(', expected: !, identifier, or 'end of string'", id="lone-paren"),
    pytest.param("x=(", "unable to parse requirement: found '(', expected: identifier", id="paren-as-value"),
    pytest.param("!,a", "unable to parse requirement: found ',', expected: identifier", id="bang-without-key"),
    pytest.param("!=a", "found '!=', expected: !, identifier, or 'end of string'", id="no-key"),
    pytest.param("app: nginx", f'unable to parse requirement: <nil>: Invalid value: "app:": {KEY_NAME_ERROR}',
                 id="colon-in-key"),
    pytest.param("a\u00a0b", 'unable to parse requirement: <nil>: Invalid value: "a\\u00a0b": '
                 + KEY_NAME_ERROR, id="unicode-space-is-part-of-key"),
    pytest.param("x=" + "a" * 64, 'unable to parse requirement: values[0][x]: Invalid value: "' + "a" * 64
                 + '": must be no more than 63 characters', id="value-too-long"),
])
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        Selector.parse(text)
    assert str(err.value) == message
    assert isinstance(err.value, ValueError)


def test_invalid_prefix_message() -> None:
    with pytest.raises(SelectorError, match=r'^unable to parse requirement: <nil>: Invalid value: "a/b/c": a '
                                           r"qualified name must consist of"):
        Selector.parse("a/b/c ?=? def")


@pytest.mark.parametrize(("text", "labels", "expected"), [
    pytest.param("", {"x": "y"}, True, id="empty-matches-all"),
    pytest.param("x=y", {"x": "y"}, True, id="equals"),
    pytest.param("x=y,z=w", {"x": "y", "z": "w"}, True, id="two-equals"),
    pytest.param("x!=y,z!=w", {"x": "z", "z": "a"}, True, id="two-not-equals"),
    pytest.param("notin=in", {"notin": "in"}, True, id="keywords"),
    pytest.param("x", {"x": "z"}, True, id="exists"),
    pytest.param("!x", {"y": "z"}, True, id="does-not-exist"),
    pytest.param("x>1", {"x": "2"}, True, id="gt"),
    pytest.param("x<1", {"x": "0"}, True, id="lt"),
    pytest.param("x=z", {}, False, id="equals-missing"),
    pytest.param("x=y", {"x": "z"}, False, id="equals-other"),
    pytest.param("x=y,z=w", {"x": "w", "z": "w"}, False, id="one-of-two"),
    pytest.param("x!=y,z!=w", {"x": "z", "z": "w"}, False, id="not-equals-hit"),
    pytest.param("x!=y", {}, True, id="not-equals-missing-key"),
    pytest.param("x", {"y": "z"}, False, id="exists-missing"),
    pytest.param("!x", {"x": "z"}, False, id="does-not-exist-present"),
    pytest.param("x>1", {"x": "0"}, False, id="gt-smaller"),
    pytest.param("x<1", {"x": "2"}, False, id="lt-greater"),
    pytest.param("x>1", {}, False, id="gt-missing"),
    pytest.param("z>1", {"z": "v2"}, False, id="gt-not-a-number"),
    pytest.param("z>1", {"z": "+5"}, True, id="gt-plus-sign"),
    pytest.param("z<1", {"z": "-5"}, True, id="lt-minus-sign"),
    pytest.param("z>1", {"z": " 5"}, False, id="gt-spaces-are-not-numbers"),
    pytest.param("z>1", {"z": "1_000"}, False, id="gt-underscores-are-not-numbers"),
    pytest.param("z>1", {"z": "\u0665"}, False, id="gt-arabic-digit-is-not-a-number"),
    pytest.param("z>1", {"z": "9223372036854775808"}, False, id="gt-beyond-int64"),
    pytest.param("z>1", {"z": "9223372036854775807"}, True, id="gt-int64-max"),
    pytest.param("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True, id="in-and-notin"),
    pytest.param("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False, id="in-miss"),
    pytest.param("x in (a,b)", {"x": "b"}, True, id="in-second-value"),
    pytest.param("x notin (),y", {"y": ""}, True, id="notin-empty-missing-key"),
    pytest.param("x notin (),!y", {"y": ""}, False, id="does-not-exist-empty-value"),
    pytest.param("x in ()", {"y": "baz"}, False, id="in-empty-value-missing-key"),
    pytest.param("x in ()", {"x": ""}, True, id="in-empty-value-present"),
    pytest.param("x=a,x=b", {"x": "a"}, False, id="contradiction"),
    pytest.param("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False, id="extra-requirement"),
])
def test_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    assert Selector.parse(text).matches(labels) is expected
    # A single requirement decides the same on its own.
    if len(Selector.parse(text).requirements) == 1:
        assert Selector.parse(text).requirements[0].matches(labels) is expected


@pytest.mark.parametrize(("key", "operator", "values", "message"), [
    pytest.param("x1", Operator.IN, (), "values: Invalid value: []string(nil): "
                 "for 'in', 'notin' operators, values set can't be empty", id="in-without-values"),
    pytest.param("x2", Operator.NOT_IN, (), "values: Invalid value: []string(nil): "
                 "for 'in', 'notin' operators, values set can't be empty", id="notin-without-values"),
    pytest.param("x5", Operator.EQUALS, ("bar", "foo"), 'values: Invalid value: []string{"bar", "foo"}: '
                 "exact-match compatibility requires one single value", id="equals-two-values"),
    pytest.param("x8", Operator.EXISTS, ("foo",), 'values: Invalid value: []string{"foo"}: '
                 "values set must be empty for exists and does not exist", id="exists-with-value"),
    pytest.param("x13", Operator.GREATER_THAN, (), "values: Invalid value: []string(nil): "
                 "for 'Gt', 'Lt' operators, exactly one value is required", id="gt-without-value"),
    pytest.param("x14", Operator.GREATER_THAN, ("bar",), 'values[0]: Invalid value: "bar": '
                 "for 'Gt', 'Lt' operators, the value must be an integer", id="gt-not-integer"),
    pytest.param("x15", Operator.LESS_THAN, ("bar",), 'values[0]: Invalid value: "bar": '
                 "for 'Gt', 'Lt' operators, the value must be an integer", id="lt-not-integer"),
    pytest.param("a" * 254, Operator.EXISTS, (), 'key: Invalid value: "' + "a" * 254
                 + '": name part must be no more than 63 characters', id="key-too-long"),
    pytest.param("x16", Operator.EQUALS, ("a" * 254,), 'values[0][x16]: Invalid value: "' + "a" * 254
                 + '": must be no more than 63 characters', id="value-too-long"),
    pytest.param("x17", Operator.EQUALS, ("a b",), f'values[0][x17]: Invalid value: "a b": {VALUE_ERROR}',
                 id="value-with-space"),
    pytest.param("x18", "unsupportedOp", (), 'operator: Unsupported value: "unsupportedOp": supported values: '
                 '"in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"', id="unknown-operator"),
    pytest.param("x19", Operator.EQUALS, ('a"\n',), 'values[0][x19]: Invalid value: "a\\"\\n": ' + VALUE_ERROR,
                 id="go-quoting-of-bad-value"),
    pytest.param("x20", Operator.LESS_THAN, ("1", "x"),
                 "[values: Invalid value: []string{\"1\", \"x\"}: for 'Gt', 'Lt' operators, exactly one value "
                 "is required, values[1]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an "
                 "integer]", id="errors-aggregated"),
])
def test_requirement_errors(key: str, operator: Operator, values: tuple[str, ...], message: str) -> None:
    with pytest.raises(SelectorError) as err:
        Requirement(key, operator, values)
    assert str(err.value) == message


def test_requirement_error_path_prefix() -> None:
    with pytest.raises(SelectorError, match=r"^spec\.selector\.values: Invalid value"):
        Requirement("x", Operator.IN, (), path="spec.selector")


def test_requirement_accepts_wire_spellings() -> None:
    req = Requirement("x", "in", ["b", "a"])  # type: ignore[arg-type]
    assert req.operator is Operator.IN
    assert req.values == ("b", "a")
    assert str(req) == "x in (a,b)"


@pytest.mark.parametrize(("requirements", "canonical"), [
    pytest.param([("x", Operator.IN, ("abc", "def")), ("y", Operator.NOT_IN, ("jkl",)), ("z", Operator.EXISTS, ())],
                 "x in (abc,def),y notin (jkl),z", id="set-based"),
    pytest.param([("x", Operator.NOT_IN, ("def", "abc")), ("y", Operator.NOT_EQUALS, ("jkl",)),
                  ("z", Operator.DOES_NOT_EXIST, ())], "x notin (abc,def),y!=jkl,!z", id="negations"),
    pytest.param([("x", Operator.NOT_IN, ("abc",)), ("y", Operator.IN, ("jkl", "mno")),
                  ("z", Operator.NOT_IN, ("",))], "x notin (abc),y in (jkl,mno),z notin ()", id="empty-value"),
    pytest.param([("x", Operator.EQUALS, ("abc",)), ("y", Operator.DOUBLE_EQUALS, ("jkl",)),
                  ("z", Operator.NOT_EQUALS, ("a",)), ("z", Operator.EXISTS, ())], "x=abc,y==jkl,z!=a,z",
                 id="exact"),
    pytest.param([("y", Operator.LESS_THAN, ("8",)), ("x", Operator.GREATER_THAN, ("2",)), ("z", Operator.EXISTS, ())],
                 "x>2,y<8,z", id="numeric-sorted-by-key"),
])
def test_selector_string(requirements: list[tuple[str, Operator, tuple[str, ...]]], canonical: str) -> None:
    assert str(Selector(Requirement(*r) for r in requirements)) == canonical


def test_everything_and_nothing() -> None:
    everything, nothing = Selector.everything(), Selector.nothing()
    assert everything.matches({}) and everything.matches({"x": "y"})
    assert everything.empty() and not nothing.empty()
    assert not nothing.matches({}) and not nothing.matches({"x": "y"})
    assert str(everything) == str(nothing) == ""
    assert everything.requirements == nothing.requirements == ()
    assert everything != nothing
    assert Selector.parse("") == everything
    assert repr(nothing) == "Selector.nothing()"
    assert repr(Selector.parse("b,a=1")) == "Selector.parse('a=1,b')"


def test_equality_and_hash() -> None:
    assert Selector.parse("x in (b,a), y") == Selector.parse("y,x in (a,b)")
    assert hash(Selector.parse("x in (b,a), y")) == hash(Selector.parse("y,x in (a,b)"))
    assert Selector.parse("x=a") != Selector.parse("x==a")
    assert Selector.parse("x=a") != "x=a"


@pytest.mark.parametrize(("spec", "canonical"), [
    pytest.param({}, "", id="empty-is-everything"),
    pytest.param({"matchLabels": {}, "matchExpressions": []}, "", id="empty-parts"),
    pytest.param({"matchLabels": {"tier": "fe", "app": "web"}}, "app=web,tier=fe", id="match-labels"),
    pytest.param({"matchExpressions": [
        {"key": "env", "operator": "In", "values": ["prod", "dev"]},
        {"key": "canary", "operator": "DoesNotExist"},
        {"key": "zone", "operator": "NotIn", "values": ["z"]},
        {"key": "gpu", "operator": "Exists", "values": []},
    ]}, "!canary,env in (dev,prod),gpu,zone notin (z)", id="every-operator"),
    pytest.param({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "app", "operator": "Exists"}]},
                 "app=web,app", id="labels-before-expressions"),
])
def test_from_label_selector(spec: dict[str, object], canonical: str) -> None:
    assert str(Selector.from_label_selector(spec)) == canonical


def test_from_label_selector_none_matches_nothing() -> None:
    assert Selector.from_label_selector(None) == Selector.nothing()
    assert Selector.from_label_selector({}) == Selector.everything()


def test_from_label_selector_model() -> None:
    model = V1LabelSelector(
        match_labels={"app": "web"},
        match_expressions=[V1LabelSelectorRequirement(key="tier", operator="In", values=["fe", "be"])],
    )
    sel = Selector.from_label_selector(model)
    assert str(sel) == "app=web,tier in (be,fe)"
    assert sel.matches({"app": "web", "tier": "be"})
    assert not sel.matches({"app": "web", "tier": "db"})


@pytest.mark.parametrize(("spec", "message"), [
    pytest.param({"matchExpressions": [{"key": "a", "operator": "In"}]},
                 "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
                 id="in-without-values"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
                 'values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist',
                 id="exists-with-values"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
                 '"Gt" is not a valid label selector operator', id="gt-is-node-only"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "in", "values": ["1"]}]},
                 '"in" is not a valid label selector operator', id="lowercase-operator"),
    pytest.param({"matchLabels": {"-bad": "x"}}, f'key: Invalid value: "-bad": {KEY_NAME_ERROR}', id="bad-key"),
    pytest.param({"matchLabels": {"app": 5}}, "selector keys and values must be strings, not 5",
                 id="number-value"),
    pytest.param({"matchLabels": ["app"]}, "matchLabels must be a map and matchExpressions a list",
                 id="labels-not-a-map"),
    pytest.param({"matchExpressions": ["app"]}, "a label selector requirement must be an object, not 'app'",
                 id="expression-not-an-object"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
                 "values must be a list of strings, not 'x'", id="values-not-a-list"),
])
def test_from_label_selector_errors(spec: dict[str, object], message: str) -> None:
    with pytest.raises(SelectorError) as err:
        Selector.from_label_selector(spec)
    assert str(err.value) == message


@pytest.mark.parametrize(("labels", "canonical", "matching", "other"), [
    pytest.param({}, "", {"x": "y"}, None, id="empty-is-everything"),
    pytest.param(None, "", {}, None, id="none-is-everything"),
    pytest.param({"foo": "bar"}, "foo=bar", {"foo": "bar", "baz": "blah"}, {"foo": "baz"}, id="one"),
    pytest.param({"foo": "bar", "baz": "blah"}, "baz=blah,foo=bar", {"foo": "bar", "baz": "blah"},
                 {"foo": "bar"}, id="two"),
])
def test_selector_from_set(labels: dict[str, str] | None, canonical: str, matching: dict[str, str],
                           other: dict[str, str] | None) -> None:
    sel = selector_from_set(labels)
    assert str(sel) == canonical
    assert sel.matches(matching)
    if other is not None:
        assert not sel.matches(other)


def test_selector_from_set_validates() -> None:
    with pytest.raises(SelectorError, match=r"^values\[0\]\[Key\]: Invalid value"):
        selector_from_set({"Key": "axahm2EJ8Phiephe2eixohbee9eGeiyees1thuozi1xoh0GiuH3diewi8iem7Nui"})


@pytest.mark.parametrize(("labels", "text"), [
    pytest.param({}, "", id="empty"),
    pytest.param({"app": "foo"}, "app=foo", id="one"),
    pytest.param({"app": "foo", "a": "b"}, "a=b,app=foo", id="sorted"),
    pytest.param({"a": "y", "a.b": "x"}, "a.b=x,a=y", id="sorted-as-whole-pairs"),
    pytest.param({"tier": "fe", "app": "web"}, "app=web,tier=fe", id="rc-selector"),
])
def test_format_selector(labels: dict[str, str], text: str) -> None:
    assert format_selector(labels) == text


# --- properties -----------------------------------------------------------------------------------

_names = st.from_regex(r"[a-z0-9]([a-z0-9._-]{0,8}[a-z0-9])?", fullmatch=True)
_keys = st.one_of(_names, st.builds(lambda p, n: f"{p}.io/{n}", st.from_regex(r"[a-z]{1,5}", fullmatch=True),
                                    _names))
_values = st.one_of(st.just(""), _names)
_requirements = st.one_of(
    st.builds(lambda k, v: Requirement(k, Operator.EQUALS, (v,)), _keys, _values),
    st.builds(lambda k, v: Requirement(k, Operator.NOT_EQUALS, (v,)), _keys, _values),
    st.builds(lambda k, vs: Requirement(k, Operator.IN, tuple(sorted(vs))), _keys,
              st.sets(_values, min_size=1, max_size=4)),
    st.builds(lambda k, vs: Requirement(k, Operator.NOT_IN, tuple(sorted(vs))), _keys,
              st.sets(_values, min_size=1, max_size=4)),
    st.builds(lambda k: Requirement(k, Operator.EXISTS), _keys),
    st.builds(lambda k: Requirement(k, Operator.DOES_NOT_EXIST), _keys),
    st.builds(lambda k, n: Requirement(k, Operator.GREATER_THAN, (str(n),)), _keys, st.integers(0, 10**6)),
    st.builds(lambda k, n: Requirement(k, Operator.LESS_THAN, (str(n),)), _keys, st.integers(0, 10**6)),
)


@given(st.lists(_requirements, max_size=6))
def test_string_form_parses_back_to_an_equal_selector(requirements: list[Requirement]) -> None:
    selector = Selector(requirements)
    assert Selector.parse(str(selector)) == selector


@given(st.lists(_requirements, max_size=6), st.dictionaries(_keys, _values, max_size=6))
def test_compiled_matching_agrees_with_each_requirement(requirements: list[Requirement],
                                                        labels: dict[str, str]) -> None:
    expected = all(r.matches(labels) for r in requirements)
    assert Selector(requirements).matches(labels) is expected


@given(st.text(alphabet=st.sampled_from("ab=!(),<> \tinot1"), max_size=20))
def test_arbitrary_text_parses_or_raises_selector_error(text: str) -> None:
    try:
        selector = Selector.parse(text)
    except SelectorError:
        return
    assert Selector.parse(str(selector)) == selector


def test_docstring_examples() -> None:
    assert doctest.testmod(labels).failed == 0


@given(st.dictionaries(_keys, _values, min_size=1, max_size=6), st.dictionaries(_keys, _values, max_size=6))
def test_a_match_labels_selector_is_the_selector_of_its_equalities(match_labels: dict[str, str],
                                                                  labels: dict[str, str]) -> None:
    """The matchLabels-only form (made without Requirement objects until asked) is the same selector."""
    compiled = Selector([Requirement(k, Operator.EQUALS, (v,)) for k, v in match_labels.items()])
    quick = Selector.from_label_selector({"matchLabels": match_labels})
    assert quick.matches(labels) is compiled.matches(labels) is all(labels.get(k) == v for k, v in match_labels.items())
    assert hash(quick) == hash(compiled) and quick == compiled and compiled == quick
    assert str(quick) == str(compiled) and quick.requirements == compiled.requirements
    assert not quick.empty()


def test_an_invalid_match_labels_selector_still_raises_kubernetes_message() -> None:
    with pytest.raises(SelectorError) as bad:
        Selector.from_label_selector({"matchLabels": {"app": "no spaces"}})
    assert "a valid label must be an empty string" in str(bad.value)
    with pytest.raises(SelectorError):
        Selector.from_label_selector({"matchLabels": {"bad key!": "x"}})

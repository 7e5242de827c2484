"""Node selector terms and node affinity, compiled once and matched against thousands of nodes.

This mirrors ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``: the
scheduler's NodeAffinity plugin (filter and score) and the kubelet's
admission check both decide "may this Pod run on this node" with it, so the
two can never disagree.

The rules, as Kubernetes keeps them:

- ``nodeSelectorTerms`` are ORed; inside a term, ``matchExpressions`` (on
  labels) and ``matchFields`` (on ``metadata.name`` only) are ANDed;
- a term with neither matches nothing;
- ``Gt``/``Lt`` compare integers: a label value that is not one never
  matches, a requirement value that is not one is an error;
- a Pod's ``spec.nodeSelector`` and its required node affinity must both hold.

A Pod is compiled once (:meth:`RequiredNodeAffinity.from_pod`), then
:meth:`RequiredNodeAffinity.matches` costs a set comparison for the
nodeSelector plus one compiled label selector per term. Measured on the
project's 2-core machines: 0.2 µs per node for a Pod with a one-label
nodeSelector, 0.8 µs for two required terms of two expressions each.

Compiled objects are immutable and free of I/O; share them freely.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel

from machinery.api.labels import (
    Operator,
    Requirement,
    SelectorError,
    _compile_plan,
    _invalid,
    _LabelTest,
    _not_supported,
    _string,
    _strings,
    as_wire,
)

if TYPE_CHECKING:
    from kubernetes.client import V1NodeSelector, V1Pod, V1PreferredSchedulingTerm

#: The only field a ``matchFields`` requirement may name.
NODE_NAME_FIELD: Final = "metadata.name"

_NODE_SELECTOR_OPERATORS: Final = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
    "Gt": Operator.GREATER_THAN,
    "Lt": Operator.LESS_THAN,
}
_FIELD_OPERATORS: Final = ("In", "NotIn")

# (node name must equal value?, value) for each matchFields requirement.
_NameTest = tuple[bool, str]
# A compiled NodeSelectorTerm, its parts ANDed: exact label pairs, other label
# tests (both from labels._compile_plan) and tests on the node's name.
_Term = tuple[frozenset[tuple[str, str]], tuple[_LabelTest, ...], tuple[_NameTest, ...]]


def _term_matches(term: _Term, node_name: str, node_labels: Mapping[str, str]) -> bool:
    pairs, tests, names = term
    if pairs and not node_labels.items() >= pairs:
        return False
    for test in tests:
        if not test(node_labels):
            return False
    # A node without a name has no fields, and Kubernetes then skips matchFields.
    if node_name:
        for equal, value in names:
            if (node_name == value) is not equal:
                return False
    return True


def _any_term_matches(terms: tuple[_Term, ...], node_name: str, node_labels: Mapping[str, str]) -> bool:
    for term in terms:
        if _term_matches(term, node_name, node_labels):
            return True
    return False


def _expressions(term: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    items = term.get(name) or []
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise SelectorError(f"{name} must be a list of node selector requirements")
    return items


def _compile_term(term: object, path: str) -> tuple[_Term | None, list[str]]:
    """The compiled term (None when it is empty, so that it selects nothing) and its problems."""
    if not isinstance(term, Mapping):
        raise SelectorError(f"a node selector term must be an object, not {term!r}")
    expressions = _expressions(term, "matchExpressions")
    fields = _expressions(term, "matchFields")
    if not expressions and not fields:
        return None, []
    errors: list[str] = []
    requirements: list[Requirement] = []
    for i, expr in enumerate(expressions):
        expr_path = f"{path}.matchExpressions[{i}]"
        name = expr.get("operator", "")
        operator = _NODE_SELECTOR_OPERATORS.get(name) if isinstance(name, str) else None
        if operator is None:
            errors.append(_not_supported(f"{expr_path}.operator", str(name), _NODE_SELECTOR_OPERATORS))
            continue
        key, values = _string(expr.get("key", "")), _strings(expr.get("values"))
        try:
            requirements.append(Requirement(key, operator, values, path=expr_path))
        except SelectorError as err:
            errors.extend(err.errors)
    names: list[_NameTest] = []
    for i, expr in enumerate(fields):
        field_path = f"{path}.matchFields[{i}]"
        name = expr.get("operator", "")
        values = _strings(expr.get("values"))
        if name not in _FIELD_OPERATORS:
            errors.append(_not_supported(f"{field_path}.operator", str(name), _FIELD_OPERATORS))
        elif len(values) != 1:
            errors.append(_invalid(f"{field_path}.values", values, "must have one element"))
        elif expr.get("key") != NODE_NAME_FIELD:
            # Kubernetes' matcher would compare an unknown field as "", its API
            # validation refuses it; refusing here too keeps the two consistent.
            errors.append(_invalid(f"{field_path}.key", str(expr.get("key", "")), "not a valid field selector key"))
        else:
            names.append((name == "In", values[0]))
    if errors:
        return None, errors
    pairs, tests = _compile_plan(requirements)
    return (pairs, tests, tuple(names)), []


def _compile_terms(spec: Mapping[str, Any] | V1NodeSelector, *, strict: bool) -> tuple[_Term, ...]:
    wire = as_wire(spec)
    terms = wire.get("nodeSelectorTerms") or []
    if not isinstance(terms, list):
        raise SelectorError("nodeSelectorTerms must be a list")
    compiled: list[_Term] = []
    errors: list[str] = []
    for i, term in enumerate(terms):
        parsed, term_errors = _compile_term(term, f"nodeSelectorTerms[{i}]")
        errors.extend(term_errors)
        if parsed is not None:
            compiled.append(parsed)
    if strict and errors:
        raise SelectorError(*errors)
    return tuple(compiled)


class NodeSelector:
    """A compiled ``v1.NodeSelector`` (``nodeaffinity.NewNodeSelector``).

    >>> sel = NodeSelector.from_spec({"nodeSelectorTerms": [
    ...     {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
    ...     {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-9"]}]}]})
    >>> sel.matches("node-1", {"zone": "b"}), sel.matches("node-9", {}), sel.matches("node-1", {})
    (True, True, False)
    """

    __slots__ = ("_terms",)

    def __init__(self, terms: tuple[_Term, ...]) -> None:
        self._terms = terms

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | V1NodeSelector) -> NodeSelector:
        """Compile a ``{nodeSelectorTerms: [...]}`` dict or ``V1NodeSelector``.

        Raises :class:`SelectorError` listing every bad requirement, with
        Kubernetes' paths and messages
        (``nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: ...``).
        """
        return cls(_compile_terms(spec, strict=True))

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        """Whether any term matches this node."""
        return _any_term_matches(self._terms, node_name, node_labels)


class PreferredTerms:
    """Compiled ``preferredDuringSchedulingIgnoredDuringExecution`` terms (``NewPreferredSchedulingTerms``).

    Terms of weight 0 and empty preferences are dropped, as in Kubernetes.
    """

    __slots__ = ("_terms",)

    def __init__(self, terms: tuple[tuple[int, _Term], ...]) -> None:
        self._terms = terms

    @classmethod
    def from_spec(cls, terms: Sequence[Mapping[str, Any] | V1PreferredSchedulingTerm] | None) -> PreferredTerms:
        """Compile the list (None is no preference); raises :class:`SelectorError` on a bad term."""
        compiled: list[tuple[int, _Term]] = []
        errors: list[str] = []
        for i, term in enumerate(terms or ()):
            wire = as_wire(term)
            if not isinstance(wire, Mapping):
                raise SelectorError(f"a preferred scheduling term must be an object, not {term!r}")
            weight = wire.get("weight", 0)
            if not isinstance(weight, int) or isinstance(weight, bool):
                raise SelectorError(f"[{i}].weight must be an integer, not {weight!r}")
            if weight == 0:
                continue
            # Kubernetes roots these paths at the list itself, hence "[0].matchExpressions[0]...".
            parsed, term_errors = _compile_term(wire.get("preference") or {}, f"[{i}]")
            errors.extend(term_errors)
            if parsed is not None:
                compiled.append((weight, parsed))
        if errors:
            raise SelectorError(*errors)
        return cls(tuple(compiled))

    def score(self, node_name: str, node_labels: Mapping[str, str]) -> int:
        """The sum of the weights of the terms this node matches."""
        total = 0
        for weight, term in self._terms:
            if _term_matches(term, node_name, node_labels):
                total += weight
        return total


class RequiredNodeAffinity:
    """What a Pod demands of its node: ``spec.nodeSelector`` and the required node affinity, ANDed.

    Mirrors ``nodeaffinity.GetRequiredNodeAffinity``. As there, a malformed
    affinity term never matches but does not fail the others, and the
    nodeSelector map is taken as it is, without validation: Kubernetes' API
    validation has already refused bad Pods, and the scheduler must not stop
    on one that slipped through.
    """

    __slots__ = ("_pairs", "_terms")

    def __init__(self, pairs: frozenset[tuple[str, str]], terms: tuple[_Term, ...] | None) -> None:
        self._pairs = pairs
        self._terms = terms

    @classmethod
    def from_pod(cls, pod: Mapping[str, Any] | V1Pod) -> RequiredNodeAffinity:
        node_selector, required = _pod_requirements(pod)
        if not isinstance(node_selector, Mapping):
            raise SelectorError(f"spec.nodeSelector must be a map, not {node_selector!r}")
        pairs = frozenset((_string(k), _string(v)) for k, v in node_selector.items())
        terms = None if required is None else _compile_terms(required, strict=False)
        return cls(pairs, terms)

    @property
    def matches_every_node(self) -> bool:
        """No nodeSelector and no required node affinity: every node matches."""
        return not self._pairs and self._terms is None

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        if self._pairs and not node_labels.items() >= self._pairs:
            return False
        return self._terms is None or _any_term_matches(self._terms, node_name, node_labels)


def _pod_requirements(pod: Mapping[str, Any] | V1Pod) -> tuple[Any, Mapping[str, Any] | V1NodeSelector | None]:
    """``spec.nodeSelector`` (``{}`` when unset) and the required node selector (None when unset)."""
    # A model (the official V1Pod) rather than wire JSON; not named, so that importing this module does
    # not import every model a Pod is made of.
    if isinstance(pod, BaseModel):
        spec = pod.spec
        if spec is None:
            return {}, None
        node_affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        required = (node_affinity.required_during_scheduling_ignored_during_execution
                    if node_affinity is not None else None)
        return spec.node_selector or {}, required
    try:
        wire_spec = pod.get("spec") or {}
        wire_affinity = (wire_spec.get("affinity") or {}).get("nodeAffinity") or {}
        return (wire_spec.get("nodeSelector") or {},
                wire_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    except AttributeError:
        raise SelectorError("spec, spec.affinity and spec.affinity.nodeAffinity must be objects") from None


def pod_matches_node_selector_and_affinity(pod: Mapping[str, Any] | V1Pod, node_name: str,
                                           node_labels: Mapping[str, str]) -> bool:
    """Whether this Pod may run on this node by nodeSelector and required node affinity.

    Compiles the Pod on every call: fine for the kubelet's one admission
    check; a caller testing many nodes should keep a :class:`RequiredNodeAffinity`.
    """
    return RequiredNodeAffinity.from_pod(pod).matches(node_name, node_labels)

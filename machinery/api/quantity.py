"""Resource quantities (``100m``, ``128Mi``, ``1e3``) and the resource arithmetic built on them.

Kubernetes' ``resource.Quantity`` is an arbitrary-precision decimal with a
grammar, a rounding rule (up, to the nano) and a canonical print form. Here:

- :func:`parse_quantity` validates the text with Kubernetes' grammar and
  messages, then lets ``kubernetes.utils.quantity.parse_quantity`` do the
  arithmetic; :func:`milli_value` and :func:`value` round up as
  ``MilliValue()``/``Value()`` do;
- everything else works on integers of milli-units (``ResourceList``, a
  ``dict[str, int]``): 1 CPU is 1000, 1 byte of memory is 1000, a count of
  pods is 1000 each. Integer arithmetic is exact and about fifty times faster
  than decimals, which matters when the scheduler compares a Pod's requests
  with 5,000 nodes;
- :func:`pod_requests` and :func:`pod_limits` compute a Pod's effective
  resources as ``k8s.io/component-helpers/resource.PodRequests`` does
  (containers summed, each init container a floor, sidecars added, overhead);
- :func:`format_quantity` prints milli-units back in Kubernetes' canonical form.

Parsed texts are cached (a cluster uses few distinct quantities); the cache
is a thread-safe ``functools.lru_cache``. Nothing else holds state.
"""

from __future__ import annotations

import decimal
import functools
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from kubernetes.utils import quantity as k8s_quantity
from pydantic import BaseModel

from machinery.api.labels import _parse_go_int64, as_wire

if TYPE_CHECKING:
    from kubernetes.client import V1Node, V1Pod

#: Resource name -> amount in milli-units.
ResourceList = dict[str, int]
#: What a quantity may arrive as: its text, or a JSON number.
QuantityValue = str | int | float | Decimal

# The official client's parser does the arithmetic; it is untyped, hence the annotation.
_k8s_parse_quantity: Final[Callable[[str], Decimal]] = k8s_quantity.parse_quantity

_FORMAT_ERROR: Final = ("quantities must match the regular expression "
                        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
_SUFFIX_ERROR: Final = "unable to parse quantity's suffix"

# Kubernetes' grammar, cut into sign, integer digits, fraction digits and suffix.
_QUANTITY_RE: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")
_DECIMAL_SUFFIXES: Final = frozenset(("", "n", "u", "m", "k", "M", "G", "T", "P", "E"))
_BINARY_SUFFIXES: Final = frozenset(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))
_INT64_MAX: Final = (1 << 63) - 1
_NANO: Final = Decimal("1e-9")

# The scheduler's stand-ins for a container that requests no cpu or memory
# (pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest), in milli-units.
_NON_ZERO_DEFAULTS: Final = {"cpu": 100, "memory": 200 * 1024 * 1024 * 1000}

# Resources Kubernetes prints in powers of 1024 (memory: 128Mi) rather than 1000 (cpu: 100m).
_BINARY_RESOURCES: Final = frozenset(("memory", "ephemeral-storage", "storage"))
_BINARY_PRINT: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_PRINT: Final = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
# Resources checked first, in Kubernetes' order, when reporting what does not fit.
_FIT_ORDER: Final = {"cpu": 0, "memory": 1, "ephemeral-storage": 2}


def _exponent_suffix(suffix: str) -> int | None:
    """The power of ten of an ``e3``/``E-2`` suffix, wrapped to 32 bits as Kubernetes' int32 is."""
    exponent = _parse_go_int64(suffix[1:]) if len(suffix) > 1 and suffix[0] in "eE" else None
    if exponent is None:
        return None
    return (exponent + (1 << 31)) % (1 << 32) - (1 << 31)


def parse_quantity(quantity: QuantityValue) -> Decimal:
    """``resource.ParseQuantity``: the exact value, rounded up (away from zero) to a multiple of 1n.

    Raises ``ValueError`` with Kubernetes' message: ``quantities must match
    the regular expression '...'`` for text outside the grammar (spaces
    included), ``unable to parse quantity's suffix`` for ``1mi`` or ``1e``.
    Binary quantities saturate at 2^63-1, as in Kubernetes.
    """
    text = repr(quantity) if isinstance(quantity, float) else str(quantity)
    match = _QUANTITY_RE.fullmatch(text) if text else None
    if match is None:
        raise ValueError(_FORMAT_ERROR)
    sign, integer, fraction, suffix = match.groups()
    if suffix in _DECIMAL_SUFFIXES or suffix in _BINARY_SUFFIXES:
        normal_suffix = suffix
    else:
        exponent = _exponent_suffix(suffix)
        if exponent is None:
            raise ValueError(_SUFFIX_ERROR)
        normal_suffix = f"e{exponent}"
    # Kubernetes reads "+", "." and "-." as zero; Python's Decimal would not, so
    # spell the number out in full before handing it over.
    number = f"{sign}{integer or '0'}.{fraction or '0'}"
    with decimal.localcontext(prec=len(text) + 40, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN):
        result = _k8s_parse_quantity(number + normal_suffix)
        exponent_of_result = result.as_tuple().exponent
        if isinstance(exponent_of_result, int) and exponent_of_result < -9:
            result = result.quantize(_NANO, rounding=decimal.ROUND_UP)
    if suffix in _BINARY_SUFFIXES and abs(result) > _INT64_MAX:
        result = Decimal(_INT64_MAX).copy_sign(result)
    return result


def _scaled(amount: Decimal, digits: int) -> int:
    """``amount * 10**digits`` rounded away from zero.

    Saturates where Kubernetes' int64 ``Value()`` ends (scaled likewise), where
    Go would overflow: the order of huge quantities is kept, and ``1e999999``
    never becomes a million-digit integer.
    """
    if not amount.is_finite():
        raise ValueError(_FORMAT_ERROR)
    if not amount:
        return 0
    bound: int = _INT64_MAX * 10**digits
    with decimal.localcontext(prec=len(amount.as_tuple().digits) + 40,
                              Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN):
        shifted = amount.scaleb(digits)
        if shifted >= bound:
            return bound
        if shifted <= -bound:
            return -bound
        return int(shifted.to_integral_value(rounding=decimal.ROUND_UP))


@functools.lru_cache(maxsize=4096)
def _milli_of_text(text: str) -> int:
    return _scaled(parse_quantity(text), 3)


def milli_value(quantity: QuantityValue) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up (``"0.5m"`` is 1; ``"-1.5m"`` is -2).

    A ``Decimal`` is taken as an already-parsed value; texts are parsed once and cached.
    """
    if isinstance(quantity, Decimal):
        return _scaled(quantity, 3)
    if isinstance(quantity, str):
        return _milli_of_text(quantity)
    return _scaled(parse_quantity(quantity), 3)


def value(quantity: QuantityValue) -> int:
    """``Quantity.Value()``: whole units, rounded up (``"100m"`` is 1)."""
    amount = quantity if isinstance(quantity, Decimal) else parse_quantity(quantity)
    return _scaled(amount, 0)


def format_quantity(milli: int, resource: str) -> str:
    """Print an amount of milli-units of ``resource`` as Kubernetes prints a Quantity.

    cpu and other counted resources print as Kubernetes' DecimalSI
    quantities (``100m``, ``2``, ``1500m``, ``4k``); memory, storage and
    hugepages as BinarySI ones, which use powers of 1024 for whole numbers of
    bytes from 1Ki up (``128Mi``, ``1Gi``, ``1536``, ``1000000000``) and
    decimal SI below that or for fractions of a byte (``512``, ``500m``).
    """
    if milli == 0:
        return "0"
    sign, magnitude = ("-", -milli) if milli < 0 else ("", milli)
    binary = resource in _BINARY_RESOURCES or resource.startswith("hugepages-")
    if binary and magnitude % 1000 == 0 and magnitude >= 1024 * 1000:
        units, power = magnitude // 1000, 0
        while units % 1024 == 0 and power < len(_BINARY_PRINT) - 1:
            units //= 1024
            power += 1
        return f"{sign}{units}{_BINARY_PRINT[power]}"
    exponent = -3
    while magnitude % 10 == 0:
        magnitude //= 10
        exponent += 1
    # Kubernetes only prints exponents that are multiples of three, up to E (10^18).
    extra = max(exponent % 3, exponent - 18)
    return f"{sign}{magnitude * 10 ** extra}{_DECIMAL_PRINT[exponent - extra]}"


# --- ResourceList arithmetic ----------------------------------------------------------------------


def resource_list(resources: Mapping[str, QuantityValue] | None) -> ResourceList:
    """A wire ``ResourceList`` (``{"cpu": "100m", "memory": "1Gi"}``) in milli-units."""
    return {name: milli_value(q) for name, q in (resources or {}).items()}


def add_resources(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    """The sum, resource by resource (a resource missing from one side counts as zero)."""
    total = dict(a)
    for name, amount in b.items():
        total[name] = total.get(name, 0) + amount
    return total


def subtract_resources(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    """``a - b`` resource by resource; the result may be negative."""
    rest = dict(a)
    for name, amount in b.items():
        rest[name] = rest.get(name, 0) - amount
    return rest


def fits(requests: Mapping[str, int], allocatable: Mapping[str, int],
         used: Mapping[str, int] | None = None) -> bool:
    """Whether every positive request fits in what is allocatable and not yet used.

    The scheduler's hot check (about 0.3 µs for a two-resource request on
    the project's 2-core machines); see :func:`insufficient_resources` for the
    names of what does not fit. A resource the node does not have counts as zero.
    """
    for name, want in requests.items():
        if want > 0 and want > allocatable.get(name, 0) - (used.get(name, 0) if used else 0):
            return False
    return True


def insufficient_resources(requests: Mapping[str, int], allocatable: Mapping[str, int],
                           used: Mapping[str, int] | None = None) -> list[str]:
    """The resources that do not fit, cpu, memory and ephemeral-storage first, then by name.

    The scheduler turns each into ``Insufficient <name>``. Only positive
    requests count, as in Kubernetes' NodeResourcesFit; the pods-per-node
    limit (``Too many pods``) is the caller's, as it counts Pods, not requests.
    """
    short = [name for name, want in requests.items()
             if want > 0 and want > allocatable.get(name, 0) - (used.get(name, 0) if used else 0)]
    return sorted(short, key=lambda name: (_FIT_ORDER.get(name, len(_FIT_ORDER)), name))


def _add_into(total: ResourceList, amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _max_into(floor: ResourceList, amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        if name not in floor or amount > floor[name]:
            floor[name] = amount


def _container_amounts(container: Mapping[str, Any], kind: str, non_zero: bool) -> ResourceList:
    amounts = resource_list((container.get("resources") or {}).get(kind))
    if non_zero:
        # Only a missing request is replaced; an explicit zero stays zero.
        for name, default in _NON_ZERO_DEFAULTS.items():
            amounts.setdefault(name, default)
    return amounts


def _pod_spec(pod: Mapping[str, Any] | V1Pod) -> Mapping[str, Any]:
    # A model (the official V1Pod) rather than wire JSON; not named, so that importing this module does
    # not import every model a Pod is made of.
    if isinstance(pod, BaseModel):
        return as_wire(pod.spec) if pod.spec is not None else {}
    spec: Mapping[str, Any] = pod.get("spec") or {}
    return spec


def _aggregate(spec: Mapping[str, Any], kind: str, non_zero: bool) -> ResourceList:
    """Kubernetes' aggregation of the containers' requests or limits, without the overhead."""
    total: ResourceList = {}
    for container in spec.get("containers") or ():
        _add_into(total, _container_amounts(container, kind, non_zero))
    # Init containers run one at a time, so each sets a floor rather than
    # adding up; a sidecar (an init container that restarts Always) keeps
    # running, so it adds to the Pod's total and to every later init container.
    sidecars: ResourceList = {}
    init_floor: ResourceList = {}
    for container in spec.get("initContainers") or ():
        amounts = _container_amounts(container, kind, non_zero)
        if container.get("restartPolicy") == "Always":
            _add_into(total, amounts)
            _add_into(sidecars, amounts)
            _max_into(init_floor, sidecars)
        else:
            _max_into(init_floor, add_resources(amounts, sidecars))
    _max_into(total, init_floor)
    return total


def pod_requests(pod: Mapping[str, Any] | V1Pod, *, non_zero: bool = False) -> ResourceList:
    """A Pod's effective requests (``resource.PodRequests``), overhead included, in milli-units.

    ``non_zero=True`` gives what the scheduler's scoring uses: a container
    that does not request cpu counts as 100m, one that does not request
    memory as 200Mi.
    """
    spec = _pod_spec(pod)
    total = _aggregate(spec, "requests", non_zero)
    _add_into(total, resource_list(spec.get("overhead")))
    return total


def pod_limits(pod: Mapping[str, Any] | V1Pod) -> ResourceList:
    """A Pod's effective limits (``resource.PodLimits``); overhead is added only to non-zero limits."""
    spec = _pod_spec(pod)
    total = _aggregate(spec, "limits", False)
    for name, amount in resource_list(spec.get("overhead")).items():
        if total.get(name):
            total[name] += amount
    return total


def node_allocatable(node: Mapping[str, Any] | V1Node) -> ResourceList:
    """``status.allocatable`` in milli-units, or ``status.capacity`` when the node reports no allocatable."""
    if isinstance(node, BaseModel):
        status: Mapping[str, Any] = as_wire(node.status) if node.status is not None else {}
    else:
        status = node.get("status") or {}
    return resource_list(status.get("allocatable") or status.get("capacity"))


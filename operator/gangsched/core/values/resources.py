"""Exact Kubernetes quantities and integer resource vectors.

Quantities arrive as strings (``"500m"``, ``"1.5Gi"``, ``"1e3"``) and are parsed exactly,
once, at the edge, with :class:`fractions.Fraction`: no float ever touches a quantity.
They are then rounded up to integer *units* the way Kubernetes does
(``Quantity.MilliValue()`` / ``Quantity.Value()`` round towards +infinity):

* ``cpu`` is counted in millicores: ``"0.1m"`` is 1, ``"1.5"`` is 1500;
* every other resource (``memory``, ``ephemeral-storage``, ``pods``, ``nvidia.com/gpu``,
  ``hugepages-2Mi``, ...) is counted in its base unit (bytes, counts).

Everything after the edge works on :class:`Resources`, an immutable vector of integers
keyed by resource name. It is the hot path of the scheduler, so it is a plain dict behind
``__slots__`` rather than a dataclass. Zero entries are never stored, so two vectors are
equal exactly when they hold the same non-zero amounts.

Two "missing key" rules exist, and they differ on purpose (as in yunikorn-core's
``resources.go``):

* :meth:`Resources.fits_in` -- node semantics: a resource the node does not list is a
  resource the node has none of (a node without ``nvidia.com/gpu`` cannot take a GPU pod);
* :meth:`Resources.fits_in_quota` -- queue semantics: a resource the quota does not list is
  not limited by that quota.
"""

from __future__ import annotations

import fractions
import functools
import math
import re
from collections.abc import Callable, ItemsView, Iterable, KeysView, Mapping, Sequence
from typing import ClassVar, NoReturn

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

_BINARY_SUFFIXES: dict[str, int] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL_SUFFIXES: dict[str, fractions.Fraction] = {
    "n": fractions.Fraction(1, 10**9),
    "u": fractions.Fraction(1, 10**6),
    "m": fractions.Fraction(1, 10**3),
    "": fractions.Fraction(1),
    "k": fractions.Fraction(10**3),
    "M": fractions.Fraction(10**6),
    "G": fractions.Fraction(10**9),
    "T": fractions.Fraction(10**12),
    "P": fractions.Fraction(10**15),
    "E": fractions.Fraction(10**18),
}
# Largest first, for rendering byte amounts with the largest exact suffix.
_BINARY_RENDER_ORDER = sorted(_BINARY_SUFFIXES.items(), key=lambda item: -item[1])

# ASCII digits only: ``\d`` would also accept other Unicode digits.
_NUMBER_RE = re.compile(r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<suffix>.*)")
_EXPONENT_RE = re.compile(r"[eE](?P<exponent>[+-]?[0-9]+)")
_MAX_EXPONENT = 1000
"""Exponents beyond this are rejected, so that ``"1e999999999"`` cannot stall the parser."""

_BYTE_RESOURCES = frozenset({MEMORY, EPHEMERAL_STORAGE, "storage"})
_HUGEPAGES_PREFIX = "hugepages-"


class QuantityError(ValueError):
    """A quantity that is not valid Kubernetes quantity syntax, or not allowed for a resource.

    ``text`` is the offending input, ``reason`` says what is wrong with it, and ``resource``
    names the resource it was given for, when known.
    """

    def __init__(self, text: object, reason: str, *, resource: str | None = None) -> None:
        self.text = text
        self.reason = reason
        self.resource = resource
        shown = f'"{text}"' if isinstance(text, str) else repr(text)
        where = f' for resource "{resource}"' if resource is not None else ""
        super().__init__(f"invalid quantity {shown}{where}: {reason}")


def parse_quantity(text: str | int | float) -> fractions.Fraction:
    """Return the exact value of a Kubernetes quantity.

    The grammar is that of ``k8s.io/apimachinery`` ``resource.Quantity``: an optional sign,
    digits with an optional decimal point (``"1"``, ``"1.5"``, ``"1."``, ``".5"``), then
    either nothing, a binary SI suffix (``Ki Mi Gi Ti Pi Ei``), a decimal SI suffix
    (``n u m k M G T P E``) or a decimal exponent (``e3``, ``E-2``). ``"1E"`` is one exa,
    ``"1E3"`` is one thousand.

    ``int`` and ``float`` are accepted (a float through its shortest ``str()`` form, so
    ``0.1`` is exactly 1/10). Negative values are returned as they are; use
    :func:`parse_resource` to reject them.

    Raises :class:`QuantityError` for anything else: empty text, whitespace, ``"1.2.3"``,
    ``"--1"``, ``"1Kb"``, ``"0x10"``, ``"inf"``, ``"nan"``, booleans, other types, and
    exponents larger than 1000 in magnitude.
    """
    if isinstance(text, bool):
        raise QuantityError(text, "booleans are not quantities")
    if isinstance(text, int):
        return fractions.Fraction(text)
    if isinstance(text, float):
        return parse_quantity(str(text))  # "inf" and "nan" are rejected by the grammar.
    if not isinstance(text, str):
        raise QuantityError(text, f"expected a string or a number, got {type(text).__name__}")
    if not text:
        raise QuantityError(text, "empty")
    if any(char.isspace() for char in text):
        raise QuantityError(text, "must not contain whitespace")
    match = _NUMBER_RE.fullmatch(text)
    if match is None:
        raise QuantityError(text, "expected a number, with an optional sign, at the start")
    value = fractions.Fraction(match["number"]) * _suffix_multiplier(text, match["suffix"])
    return -value if match["sign"] == "-" else value


def _suffix_multiplier(text: str, suffix: str) -> fractions.Fraction:
    binary = _BINARY_SUFFIXES.get(suffix)
    if binary is not None:
        return fractions.Fraction(binary)
    decimal = _DECIMAL_SUFFIXES.get(suffix)
    if decimal is not None:
        return decimal
    exponent_match = _EXPONENT_RE.fullmatch(suffix)
    if exponent_match is None:
        raise QuantityError(text, f'unknown suffix "{suffix}"')
    exponent = int(exponent_match["exponent"])
    if abs(exponent) > _MAX_EXPONENT:
        raise QuantityError(text, f"exponent {exponent} is out of range (at most {_MAX_EXPONENT})")
    return fractions.Fraction(10) ** exponent


def to_units(resource: str, value: fractions.Fraction) -> int:
    """Convert an exact quantity to the integer units the scheduler counts in.

    ``cpu`` becomes millicores, ``ceil(value * 1000)``; every other resource becomes
    ``ceil(value)``. Rounding is always towards +infinity, as Kubernetes rounds requests
    (``"0.1m"`` of cpu is 1 millicore, ``"0.5"`` bytes of memory is 1 byte). Negative values
    are converted with the same rule and are not rejected here.
    """
    if resource == CPU:
        return math.ceil(value * 1000)
    return math.ceil(value)


def parse_resource(resource: str, text: str | int | float) -> int:
    """Parse a quantity given for ``resource`` and return it in integer units.

    Raises :class:`QuantityError` (naming the resource) for invalid syntax or a negative
    value. See :func:`parse_quantity` and :func:`to_units`. Results are memoised (typed,
    so ``True`` is never taken for ``1``): pods repeat the same few quantities, and
    parsing exactly with fractions is the costliest step of reading a pod.
    """
    if isinstance(text, str | int | float):
        return _parse_resource_cached(resource, text)
    return _parse_resource(resource, text)


@functools.lru_cache(maxsize=8192, typed=True)
def _parse_resource_cached(resource: str, text: str | int | float) -> int:
    return _parse_resource(resource, text)


def _parse_resource(resource: str, text: str | int | float) -> int:
    try:
        value = parse_quantity(text)
    except QuantityError as error:
        raise QuantityError(error.text, error.reason, resource=resource) from None
    if value < 0:
        raise QuantityError(text, "must not be negative", resource=resource)
    return to_units(resource, value)


def _is_byte_resource(name: str) -> bool:
    return name in _BYTE_RESOURCES or name.startswith(_HUGEPAGES_PREFIX)


def format_amount(resource: str, amount: int) -> str:
    """Render an amount in units as the canonical Kubernetes quantity string.

    ``cpu``: ``"2"`` for whole cores, else ``"500m"``. Byte resources (``memory``,
    ``ephemeral-storage``, ``storage``, ``hugepages-*``): the largest binary suffix that
    divides the amount exactly (``"1Gi"``, ``"1536Mi"``), else plain bytes. Everything else:
    the plain integer. ``parse_resource(resource, format_amount(resource, n)) == n`` for
    every ``n >= 0``.
    """
    if resource == CPU:
        cores, millis = divmod(amount, 1000)
        return str(cores) if millis == 0 else f"{amount}m"
    if amount and _is_byte_resource(resource):
        for suffix, multiplier in _BINARY_RENDER_ORDER:
            if amount % multiplier == 0:
                return f"{amount // multiplier}{suffix}"
    return str(amount)


_new = object.__new__
_set = object.__setattr__


def _make(values: dict[str, int]) -> Resources:
    """Wrap a dict that already holds no zero values, without copying or checking it."""
    made = _new(Resources)
    _set(made, "_v", values)
    _set(made, "_hash", None)
    return made


class Resources:
    """An immutable vector of integer resource amounts, keyed by resource name.

    Amounts are in scheduler units (millicores for ``cpu``, bytes, counts). A name that is
    not present has amount 0; zero amounts are dropped on construction, so equality and
    hashing do not depend on explicit zeros. Amounts may be negative (the result of
    subtraction); :meth:`any_negative` and :meth:`clamp_non_negative` deal with that.
    Every operation returns a new vector (or an unchanged operand); none mutates.
    """

    __slots__ = ("_hash", "_v")

    ZERO: ClassVar[Resources]
    """The empty vector."""

    _v: dict[str, int]
    _hash: int | None

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        """Build a vector from a mapping of name to integer amount (``None`` is empty).

        Raises ``TypeError`` for a non-string name or a non-integer (or boolean) amount.
        """
        cleaned: dict[str, int] = {}
        for name, amount in (values or {}).items():
            if not isinstance(name, str):
                raise TypeError(f"resource names must be strings, got {name!r}")
            if not isinstance(amount, int) or isinstance(amount, bool):
                raise TypeError(f"amount of {name!r} must be an int, got {amount!r}")
            if amount:
                cleaned[name] = amount
        object.__setattr__(self, "_v", cleaned)
        object.__setattr__(self, "_hash", None)

    @classmethod
    def from_k8s(cls, mapping: Mapping[str, str | int | float] | None) -> Resources:
        """Parse a Kubernetes resource list such as ``{"cpu": "500m", "memory": "1Gi"}``.

        ``None`` or an empty mapping gives :attr:`ZERO`. Each value goes through
        :func:`parse_resource`; the first invalid or negative one raises
        :class:`QuantityError` naming its resource.
        """
        if not mapping:
            return cls.ZERO
        values: dict[str, int] = {}
        for name, text in mapping.items():
            amount = parse_resource(name, text)
            if amount:
                values[name] = amount
        return _make(values)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"Resources is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"Resources is immutable; cannot delete {name!r}")

    def __reduce__(self) -> tuple[type[Resources], tuple[dict[str, int]]]:
        return (Resources, (dict(self._v),))

    # Reading.

    def get(self, name: str) -> int:
        """The amount of ``name``; 0 when the vector does not hold it."""
        return self._v.get(name, 0)

    def items(self) -> ItemsView[str, int]:
        """The non-zero ``(name, amount)`` pairs, in insertion order (read-only view)."""
        return self._v.items()

    def names(self) -> KeysView[str]:
        """The names with a non-zero amount (read-only view)."""
        return self._v.keys()

    def is_zero(self) -> bool:
        """True when every amount is zero."""
        return not self._v

    def __bool__(self) -> bool:
        return bool(self._v)

    def any_negative(self) -> bool:
        """True when some amount is below zero."""
        return any(amount < 0 for amount in self._v.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resources):
            return NotImplemented
        return self._v == other._v

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash(frozenset(self._v.items()))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={amount}" for name, amount in sorted(self._v.items()))
        return f"Resources({inner})"

    # Arithmetic.

    def __add__(self, other: Resources) -> Resources:
        if not isinstance(other, Resources):
            return NotImplemented
        if not other._v:
            return self
        if not self._v:
            return other
        out = dict(self._v)
        for name, amount in other._v.items():
            total = out.get(name, 0) + amount
            if total:
                out[name] = total
            else:
                del out[name]
        return _make(out)

    def __sub__(self, other: Resources) -> Resources:
        if not isinstance(other, Resources):
            return NotImplemented
        if not other._v:
            return self
        out = dict(self._v)
        for name, amount in other._v.items():
            total = out.get(name, 0) - amount
            if total:
                out[name] = total
            else:
                del out[name]
        return _make(out)

    def scale(self, n: int) -> Resources:
        """Every amount multiplied by the integer ``n`` (``0`` gives :attr:`ZERO`)."""
        if n == 1:
            return self
        if n == 0:
            return Resources.ZERO
        return _make({name: amount * n for name, amount in self._v.items()})

    def max(self, other: Resources) -> Resources:
        """Per-name maximum of the two vectors (a missing name counts as 0)."""
        return self._combine(other, max)

    def min(self, other: Resources) -> Resources:
        """Per-name minimum of the two vectors (a missing name counts as 0)."""
        return self._combine(other, min)

    def _combine(self, other: Resources, pick: Callable[[int, int], int]) -> Resources:
        out: dict[str, int] = {}
        for name in _union(self._v, other._v):
            amount = pick(self._v.get(name, 0), other._v.get(name, 0))
            if amount:
                out[name] = amount
        return _make(out)

    def clamp_non_negative(self) -> Resources:
        """The same vector with every negative amount replaced by 0."""
        if not self.any_negative():
            return self
        return _make({name: amount for name, amount in self._v.items() if amount > 0})

    # Comparison against a capacity.

    def fits_in(self, capacity: Resources) -> bool:
        """True when this request fits in ``capacity`` with *node* semantics.

        Every name with a positive amount here must have at most that amount in
        ``capacity``. A name missing from ``capacity`` counts as 0 available: a node that
        does not list ``nvidia.com/gpu`` cannot take a pod that asks for one. Names with a
        zero or negative amount here always fit. (yunikorn-core ``FitIn``.)
        """
        cap = capacity._v
        for name, amount in self._v.items():
            if amount > 0 and amount > cap.get(name, 0):
                return False
        return True

    def fits_in_quota(self, quota: Resources) -> bool:
        """True when this usage fits in ``quota`` with *queue quota* semantics.

        Like :meth:`fits_in`, except that a name missing from ``quota`` is unlimited: a
        queue whose quota only names ``cpu`` and ``memory`` does not limit GPUs.
        (yunikorn-core ``FitInMaxUndef``.) Because zero amounts are never stored, a quota
        of 0 for a name is indistinguishable from "not limited"; a caller that needs
        "none allowed" must express it outside of the vector.
        """
        limits = quota._v
        for name, amount in self._v.items():
            if amount > 0 and name in limits and amount > limits[name]:
                return False
        return True

    def shortfall(self, capacity: Resources) -> Resources:
        """Per name, how much more ``capacity`` would need: ``max(0, self - capacity)``.

        Node semantics: a name missing from ``capacity`` counts as 0, so the whole amount is
        short. Names with a zero or negative amount here are never short, so the result is
        :attr:`ZERO` exactly when ``self.fits_in(capacity)``.
        """
        cap = capacity._v
        out: dict[str, int] = {}
        for name, amount in self._v.items():
            if amount <= 0:
                continue
            missing = amount - cap.get(name, 0)
            if missing > 0:
                out[name] = missing
        return _make(out)

    def ratio_max(self, capacity: Resources) -> float:
        """The largest ``self[name] / capacity[name]`` over the names held here.

        0.0 for an empty vector. A name that ``capacity`` lacks (or holds as 0) gives
        ``math.inf``. Used by binpack and spread scoring.
        """
        cap = capacity._v
        best = 0.0
        for name, amount in self._v.items():
            available = cap.get(name, 0)
            if available == 0:
                return math.inf
            best = max(best, amount / available)
        return best

    # Rendering.

    def to_k8s(self) -> dict[str, str]:
        """Render as a Kubernetes resource list of canonical quantity strings.

        See :func:`format_amount` for the formats. ``Resources.from_k8s(r.to_k8s()) == r``
        for every vector without negative amounts (negative amounts render with a ``-``
        sign, which :meth:`from_k8s` rejects).
        """
        return {name: format_amount(name, amount) for name, amount in self._v.items()}

    def format_short(self) -> str:
        """A one-line human summary sorted by name, e.g. ``cpu=2, memory=4Gi``.

        ``"none"`` for the empty vector. Meant for messages and events, not for parsing.
        The same few vectors are worded over and over (every waiting gang's message, each
        cycle): the last few thousand wordings are kept.
        """
        return _short(self)


Resources.ZERO = _make({})


@functools.lru_cache(maxsize=4096)
def _short(resources: Resources) -> str:
    values = resources._v
    if not values:
        return "none"
    return ", ".join(
        f"{name}={format_amount(name, amount)}" for name, amount in sorted(values.items()))


def _union(a: Mapping[str, int], b: Mapping[str, int]) -> Iterable[str]:
    if not b:
        return a.keys()
    return [*a, *(name for name in b if name not in a)]


def effective_pod_request(
    containers: Sequence[Resources],
    init_containers: Sequence[tuple[Resources, bool]],
    overhead: Resources = Resources.ZERO,
) -> Resources:
    """The amount a pod needs on a node, by Kubernetes' rule for init containers and sidecars.

    This is ``PodRequests`` from ``k8s.io/kubernetes/pkg/api/v1/resource`` (with
    sidecar containers, KEP-753). ``init_containers`` are ``(requests, is_sidecar)`` in
    order, ``is_sidecar`` meaning ``restartPolicy: Always``. Walking them in order with a
    running ``sidecar_sum`` (starting at zero):

    * a regular init container runs alone next to the sidecars started before it: its
      peak is ``its requests + sidecar_sum``;
    * a sidecar first joins ``sidecar_sum``; its peak is the new ``sidecar_sum``
      (it keeps running).

    The result is, per resource, ``max(sum(containers) + sidecar_sum_at_end,
    max(peaks))``, plus ``overhead`` (``spec.overhead``). Pod-level resources
    (``spec.resources``) are not modelled here. ``pods: 1`` is not added; the scheduler
    adds it itself. Empty sequences are allowed (an empty pod requests only ``overhead``).
    """
    running = Resources.ZERO
    for requests in containers:
        running += requests
    sidecar_sum = Resources.ZERO
    init_peak = Resources.ZERO
    for requests, is_sidecar in init_containers:
        if is_sidecar:
            sidecar_sum += requests
            peak = sidecar_sum
        else:
            peak = requests + sidecar_sum
        init_peak = init_peak.max(peak)
    return (running + sidecar_sum).max(init_peak) + overhead

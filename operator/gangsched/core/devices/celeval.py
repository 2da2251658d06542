"""Device selectors: CEL expressions over one device, compiled once, evaluated cached.

A selector (of a DeviceClass or of a request) sees one variable, ``device``, as
kube-scheduler's DRA CEL environment declares it:

* ``device.driver``: the driver name;
* ``device.attributes["<domain>"].<id>``: each attribute, by its domain (a name without
  one is in the driver's domain) and id: an ``int``, ``bool``, ``string`` or a semantic
  version;
* ``device.capacity["<domain>"].<id>``: each capacity, a quantity.

A domain the device does not have reads as an empty map (so ``"id" in
device.attributes["other.example.com"]`` is false), and a missing id is a runtime error
(``no such key``), as upstream. The Kubernetes CEL libraries that DRA selectors use are
registered: ``quantity``/``isQuantity`` with ``compareTo``, ``isGreaterThan``,
``isLessThan``, ``add``, ``sub``, ``asInteger``, ``asApproximateFloat``, ``sign`` and
``isInteger``; ``semver``/``isSemver`` with ``compareTo``, ``isGreaterThan``,
``isLessThan``, ``major``, ``minor`` and ``patch``. Quantities and versions are CEL maps
with one private key (``quantity("1Gi") == quantity("1073741824")`` holds: the value is
canonical).

The CEL implementation is ``common-expression-language`` (cel-rust). What it does not
offer (``cel.bind``, the string extension library's ``lowerAscii`` and friends) fails
with the library's own words, as a runtime error of the selector: the claim's pod then
says so, and nothing is allocated on a guess.

Errors never escape as exceptions other than :class:`SelectorError`, whose message is
kube-scheduler's (``CEL compile error: ...``, ``CEL runtime error: ...``); the caller
prefixes where the selector came from (``class gpu: selector #0: ``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

import cel

from gangsched.core.values.devices import Device, Quantity, Version
from gangsched.core.values.resources import QuantityError, parse_quantity

_Q = "__k8s_quantity_milli__"
_V = "__k8s_semver__"
_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'')
_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?")

_MATCH_CACHE_LIMIT = 200_000


class SelectorError(Exception):
    """A selector that does not compile, or that failed on a device."""


def _first(item: tuple[str, str, object]) -> str:
    return item[0]


def _quantity(milli: int) -> dict[str, int]:
    return {_Q: milli}


def _semver(text: str) -> dict[str, str]:
    return {_V: text}


def _parse_semver(text: str) -> tuple[int, int, int, tuple[str, ...]] | None:
    found = _SEMVER.fullmatch(text)
    if found is None:
        return None
    pre = tuple(found.group(4).split(".")) if found.group(4) else ()
    return int(found.group(1)), int(found.group(2)), int(found.group(3)), pre


def _semver_key(text: str) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
    parsed = _parse_semver(text)
    if parsed is None:
        raise ValueError(f"invalid semver {text!r}")
    major, minor, patch, pre = parsed
    # A release sorts after its pre-releases; numeric identifiers sort before others.
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre)
    return major, minor, patch, 0 if pre else 1, parts


def _is(value: Any, key: str) -> bool:
    return isinstance(value, dict) and len(value) == 1 and key in value


def _compare(a: Any, b: Any) -> int:
    if _is(a, _Q) and _is(b, _Q):
        x, y = int(a[_Q]), int(b[_Q])
        return (x > y) - (x < y)
    if _is(a, _V) and _is(b, _V):
        kx, ky = _semver_key(a[_V]), _semver_key(b[_V])
        return (kx > ky) - (kx < ky)
    raise TypeError("no such overload: compareTo needs two quantities or two semvers")


def _to_quantity(text: Any) -> dict[str, int]:
    if not isinstance(text, str):
        raise TypeError("no such overload: quantity(string)")
    return _quantity(_milli_of(text))


@functools.lru_cache(maxsize=1024)
def _milli_of(text: str) -> int:
    try:
        return Quantity.parse(text).milli
    except QuantityError as err:
        raise ValueError(f"quantity: {err}") from None


def _is_quantity(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _to_semver(text: Any, normalize: bool = False) -> dict[str, str]:
    if not isinstance(text, str):
        raise TypeError("no such overload: semver(string)")
    if normalize:
        text = _normalized(text)
    if _parse_semver(text) is None:
        raise ValueError(f"semver: invalid semver {text!r}")
    return _semver(text)


def _normalized(text: str) -> str:
    """``semver(s, true)``: a leading ``v`` dropped, missing minor/patch filled with 0,
    leading zeros removed."""
    core, sep, rest = text.removeprefix("v").partition("-")
    parts = core.split(".")
    while len(parts) < 3:
        parts.append("0")
    parts = [p.lstrip("0") or "0" if p.isdigit() else p for p in parts]
    return ".".join(parts) + (sep + rest if sep else "")


def _is_semver(text: Any, normalize: bool = False) -> bool:
    if not isinstance(text, str):
        return False
    return _parse_semver(_normalized(text) if normalize else text) is not None


def _part(index: int) -> Callable[[Any], int]:
    def get(v: Any) -> int:
        if not _is(v, _V):
            raise TypeError("no such overload: needs a semver")
        parsed = _parse_semver(v[_V])
        if parsed is None:
            raise ValueError(f"invalid semver {v[_V]!r}")
        return parsed[index]  # type: ignore[return-value]
    return get


def _milli(v: Any) -> int:
    if _is(v, _Q):
        return int(v[_Q])
    if isinstance(v, int) and not isinstance(v, bool):
        return v * 1000
    raise TypeError("no such overload: needs a quantity")


def _as_integer(v: Any) -> int:
    milli = _milli(v)
    if milli % 1000:
        raise ValueError("cannot convert value to integer")
    return milli // 1000


_FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "quantity": _to_quantity,
    "isQuantity": _is_quantity,
    "semver": _to_semver,
    "isSemver": _is_semver,
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "add": lambda a, b: _quantity(_milli(a) + _milli(b)),
    "sub": lambda a, b: _quantity(_milli(a) - _milli(b)),
    "asInteger": _as_integer,
    "isInteger": lambda v: _milli(v) % 1000 == 0,
    "asApproximateFloat": lambda v: _milli(v) / 1000,
    "sign": lambda v: (_milli(v) > 0) - (_milli(v) < 0),
    "major": _part(0),
    "minor": _part(1),
    "patch": _part(2),
}


def _value(value: object) -> object:
    if isinstance(value, Version):
        return _semver(value.text)
    return value


def device_variable(driver: str, device: Device) -> dict[str, Any]:
    """The ``device`` variable for ``device`` of ``driver``."""
    attributes: dict[str, dict[str, object]] = {}
    for name, value in device.attributes.items():
        domain, _, ident = name.rpartition("/")
        attributes.setdefault(domain or driver, {})[ident] = _value(value)
    capacity: dict[str, dict[str, object]] = {}
    for name, cap in device.capacity.items():
        domain, _, ident = name.rpartition("/")
        capacity.setdefault(domain or driver, {})[ident] = _quantity(cap.value.milli)
    return {"driver": driver, "attributes": attributes, "capacity": capacity}


class _Compiled:
    __slots__ = ("domains", "error", "program")

    def __init__(self, expression: str) -> None:
        self.program: Any = None
        self.error = ""
        self.domains: tuple[str, ...] = tuple(
            a or b for a, b in _LITERAL.findall(expression))
        try:
            self.program = cel.compile(expression)
        except Exception as err:  # the library's parse errors are of several types
            self.error = f"CEL compile error: compilation failed: {_one_line(err)}"


def _one_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return " ".join(text.split())


class SelectorCache:
    """Compiled selectors by expression, and each selector's verdict by device."""

    def __init__(self) -> None:
        self._compiled: dict[str, _Compiled] = {}
        self._matches: dict[tuple[str, object], bool | str] = {}
        self._contents: dict[int, tuple[Device, object]] = {}
        self._context = cel.Context(functions=dict(_FUNCTIONS))
        self.evaluations = 0

    def compile_error(self, expression: str) -> str:
        """Empty when ``expression`` compiles; else kube-scheduler's words for why not."""
        return self._get(expression).error

    def _get(self, expression: str) -> _Compiled:
        found = self._compiled.get(expression)
        if found is None:
            found = self._compiled[expression] = _Compiled(expression)
        return found

    def matches(self, expression: str, driver: str, device: Device) -> bool:
        """Whether ``device`` of ``driver`` passes ``expression``; :class:`SelectorError`
        when it does not compile, fails at run time, or is not a bool."""
        key = (expression, self._content(driver, device))
        verdict = self._matches.get(key)
        if verdict is None:
            verdict = self._evaluate(expression, driver, device)
            if len(self._matches) >= _MATCH_CACHE_LIMIT:
                self._matches.clear()
            self._matches[key] = verdict
        if isinstance(verdict, str):
            raise SelectorError(verdict)
        return verdict

    def _content(self, driver: str, device: Device) -> object:
        """What a selector sees of ``device`` (its driver, attributes and capacities), as
        a key: devices alike share their verdicts."""
        found = self._contents.get(id(device))
        if found is not None and found[0] is device:
            return found[1]
        key = (driver, tuple(sorted(((k, type(v).__name__, v)
                                     for k, v in device.attributes.items()), key=_first)),
               tuple(sorted((name, cap.value.milli) for name, cap in device.capacity.items())))
        if len(self._contents) >= _MATCH_CACHE_LIMIT:
            self._contents.clear()
        self._contents[id(device)] = (device, key)
        return key

    def _evaluate(self, expression: str, driver: str, device: Device) -> bool | str:
        compiled = self._get(expression)
        if compiled.error:
            return compiled.error
        variable = device_variable(driver, device)
        for domain in compiled.domains:
            variable["attributes"].setdefault(domain, {})
            variable["capacity"].setdefault(domain, {})
        self.evaluations += 1
        try:
            self._context.add_variable("device", variable)
            result = compiled.program.execute(self._context)
        except Exception as err:  # cel-rust raises KeyError, TypeError, RuntimeError...
            detail = _one_line(err)
            if isinstance(err, KeyError):
                detail = f"no such key: {detail.strip(chr(39))}"
            return f"CEL runtime error: {detail}"
        if not isinstance(result, bool):
            return (f"CEL runtime error: CEL result of type {type(result).__name__} "
                    "could not be converted to bool")
        return result

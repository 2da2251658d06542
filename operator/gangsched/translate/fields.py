"""Typed reading of raw Kubernetes JSON, with the path of every field in every error.

Objects from the API are plain dicts and lists. The readers here turn one field into a
Python value or raise :class:`TranslationError` whose message starts with the field's
path, e.g. ``spec.taskGroups[1].minResource.memory: invalid quantity "12Qi": unknown
suffix "Qi"``. The rule for every reader: ``None`` (absent) gives the documented default,
a value of the wrong JSON type is an error.

:class:`Problems` gathers the errors of many fields, so that a user sees every mistake of
an object at once, not one per round trip.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from gangsched.core.values import constraints, resources

T = TypeVar("T")

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
MAX_SUBDOMAIN = 253


class TranslationError(ValueError):
    """Bad input in a Kubernetes object; the message starts with the offending path."""


def json_type(value: object) -> str:
    """The JSON name of a value's type, for messages: ``string``, ``list``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def key_path(path: str, key: str) -> str:
    """``path.key`` for a plain key, ``path[key]`` for keys such as ``nvidia.com/gpu``."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key}]"


def wrong_type(expected: str, value: object, path: str) -> TranslationError:
    """``<path>: expected <expected>, got <type> [<value>]`` (numbers, booleans and short
    strings are shown)."""
    if isinstance(value, bool):
        shown = " true" if value else " false"
    elif isinstance(value, int | float):
        shown = f" {value}"
    elif isinstance(value, str) and len(value) <= 64:
        shown = f' "{value}"'
    else:
        shown = ""
    return TranslationError(f"{path}: expected {expected}, got {json_type(value)}{shown}")


def mapping(raw: object, path: str) -> Mapping[str, Any]:
    """An object; ``None`` gives ``{}``."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise wrong_type("an object", raw, path)
    return raw


def sequence(raw: object, path: str) -> Sequence[Any]:
    """A list; ``None`` gives ``()``."""
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise wrong_type("a list", raw, path)
    return raw


def string(raw: object, path: str, *, default: str = "") -> str:
    """A string; ``None`` gives ``default``."""
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise wrong_type("a string", raw, path)
    return raw


def integer(
    raw: object,
    path: str,
    *,
    default: int,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """An integer within ``[minimum, maximum]``; ``None`` gives ``default``.

    Booleans and numbers with a fraction (``2.5``, also ``2.0``, as Go's decoder) are
    errors, and so are integers out of range.
    """
    if raw is None:
        return default
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise wrong_type("an integer", raw, path)
    if minimum is not None and raw < minimum:
        raise TranslationError(f"{path}: must be at least {minimum}, got {raw}")
    if maximum is not None and raw > maximum:
        raise TranslationError(f"{path}: must be at most {maximum}, got {raw}")
    return raw


def boolean(raw: object, path: str, *, default: bool) -> bool:
    """A JSON boolean; ``None`` gives ``default``."""
    if raw is None:
        return default
    if not isinstance(raw, bool):
        raise wrong_type("a boolean", raw, path)
    return raw


def string_map(raw: object, path: str) -> dict[str, str]:
    """An object of string values (labels, annotations); ``None`` gives ``{}``."""
    result: dict[str, str] = {}
    for key, value in mapping(raw, path).items():
        result[key] = string(value, key_path(path, str(key)))
    return result


def quantity_error(error: resources.QuantityError, path: str) -> TranslationError:
    """A quantity error as ``<path>: invalid quantity "<text>": <reason>``."""
    text = error.text
    shown = f'"{text}"' if isinstance(text, str) else repr(text)
    return TranslationError(f"{path}: invalid quantity {shown}: {error.reason}")


MAX_AMOUNT = 2**63 - 1
"""The largest amount Kubernetes represents (its quantities are int64 in their smallest
unit: millicores for cpu, bytes for memory); anything larger is saturated there."""


def resource_list(raw: object, path: str) -> resources.Resources:
    """A Kubernetes resource list (``{"cpu": "500m", "memory": "1Gi"}``); ``None`` gives
    :attr:`Resources.ZERO`. Negative, malformed and out-of-range (more than
    :data:`MAX_AMOUNT` units, e.g. ``1e1000``) quantities are errors naming the resource's
    path."""
    values: dict[str, int] = {}
    for name, text in mapping(raw, path).items():
        try:
            amount = resources.parse_resource(name, text)
        except resources.QuantityError as error:
            raise quantity_error(error, key_path(path, name)) from None
        if amount > MAX_AMOUNT:
            shown = f'"{text}"' if isinstance(text, str) else repr(text)
            raise TranslationError(
                f"{key_path(path, name)}: invalid quantity {shown}: too large "
                "(a quantity is at most 2^63-1 of its smallest unit)"
            )
        values[name] = amount
    return resources.Resources(values)


def dns_subdomain(text: str, path: str, *, what: str) -> str:
    """``text`` when it is a valid object name (an RFC 1123 DNS subdomain, as Kubernetes
    requires for most names and as the CRDs require for queue names), else raise."""
    if len(text) > MAX_SUBDOMAIN or not _DNS_SUBDOMAIN.fullmatch(text):
        raise TranslationError(
            f'{path}: invalid {what} "{text}": must consist of lower case alphanumerics, '
            f"'-' and '.', start and end with an alphanumeric, and be at most "
            f"{MAX_SUBDOMAIN} characters"
        )
    return text


def lookup(obj: Mapping[str, Any], key: str) -> Any:
    """``obj[key]``, else the value of the first key equal to ``key`` ignoring case (as Go's
    ``encoding/json`` matches struct fields); ``None`` when there is neither."""
    if key in obj:
        return obj[key]
    folded = key.casefold()
    for name, value in obj.items():
        if isinstance(name, str) and name.casefold() == folded:
            return value
    return None


class Problems:
    """Collects the error messages of many field reads, in the order they were found."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def read(self, reader: Callable[[], T], default: T) -> T:
        """``reader()``, or ``default`` after recording the error it raised.

        Catches :class:`TranslationError` and
        :class:`~gangsched.core.values.constraints.ConstraintError` (whose message already starts
        with a path); anything else is a bug and propagates.
        """
        try:
            return reader()
        except (TranslationError, constraints.ConstraintError) as error:
            self.messages.append(str(error))
            return default

    def add(self, message: str) -> None:
        self.messages.append(message)

    def message(self) -> str | None:
        """All messages joined with ``"; "``, or ``None`` when there were none."""
        return "; ".join(self.messages) or None

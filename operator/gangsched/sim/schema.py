"""Typed reading of a positioned YAML document, collecting every error with its position.

:class:`Reader` turns the plain data of a :class:`~gangsched.sim.source.Document` into
checked values. Each accessor takes the mapping, its path and a key, and returns the value
(or the default when the key is absent). A wrong value records an error such as
``workload.yaml:12:5: applications[2].taskGroups[0].minMember: must be an integer ≥ 1``
and returns the default (or None), so that one pass reports every problem in the file.
Missing required keys are reported at the mapping they are missing from; unknown keys at
the key itself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar

from gangsched.core.values.constraints import ConstraintError
from gangsched.core.values.resources import QuantityError, Resources
from gangsched.sim.source import Document, Path, SourceError, WorkloadError

T = TypeVar("T")

_FIELD_TOKEN = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")
_BYTE_SUFFIX = re.compile(r"[0-9.](Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)$")


def field_path(base: Path, field: str) -> Path:
    """``base`` plus a dotted field such as ``tolerations[1].operator`` as path parts."""
    parts: list[str | int] = list(base)
    for match in _FIELD_TOKEN.finditer(field):
        index, name = match.group(1), match.group(2)
        if name is not None:
            parts.append(name)
        elif index is not None:
            parts.append(int(index) if index.isdigit() else index)
    return tuple(parts)


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


class Reader:
    """Checked access to a document; errors accumulate in ``errors``."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.errors: list[SourceError] = []
        self.warnings: list[SourceError] = []
        """Values that are valid but almost certainly not what was meant."""

    def fail(self, path: Path, message: str, *, key: bool = False) -> None:
        self.errors.append(self.doc.error(path, message, key=key))

    def warn(self, path: Path, message: str) -> None:
        self.warnings.append(self.doc.error(path, f"warning: {message}"))

    def raise_if_failed(self) -> None:
        if self.errors:
            ordered = sorted(self.errors, key=lambda e: (e.mark.line, e.mark.column)
                             if e.mark is not None else (0, 0))
            raise WorkloadError(ordered)

    # --- structure -----------------------------------------------------------------------

    def mapping(
        self,
        value: object,
        path: Path,
        fields: Sequence[str],
        required: Sequence[str] = (),
    ) -> dict[str, object] | None:
        """``value`` as a mapping with only ``fields`` as keys and every ``required`` one."""
        if not isinstance(value, dict):
            self.fail(path, f"must be a mapping, got {_kind(value)}")
            return None
        for key in value:
            if key not in fields:
                self.fail((*path, key), f'unknown field (accepted: {", ".join(fields)})',
                          key=True)
        for key in required:
            if key not in value:
                self.fail((*path, key), "is required")
        return value

    def items(self, obj: Mapping[str, object], path: Path, key: str, *,
              required: bool = False) -> Iterator[tuple[Path, object]]:
        """The entries of the list at ``key`` with their paths (nothing when absent)."""
        value = obj.get(key)
        if value is None:
            if required:
                self.fail((*path, key), "is required and must be a non-empty list")
            return
        if not isinstance(value, list):
            self.fail((*path, key), f"must be a list, got {_kind(value)}")
            return
        if required and not value:
            self.fail((*path, key), "must be a non-empty list")
        for index, item in enumerate(value):
            yield (*path, key, index), item

    # --- scalars -------------------------------------------------------------------------

    def integer(self, obj: Mapping[str, object], path: Path, key: str, default: int,
                *, minimum: int | None = None) -> int:
        value = obj.get(key)
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool) or (
                minimum is not None and value < minimum):
            bound = f" ≥ {minimum}" if minimum is not None else ""
            self.fail((*path, key), f"must be an integer{bound}, got {value!r}")
            return default
        return value

    def number(self, obj: Mapping[str, object], path: Path, key: str, default: float,
               *, minimum: float = 0.0, positive: bool = False) -> float:
        """A finite number of seconds (or similar); ``positive`` excludes the minimum."""
        value = obj.get(key)
        if value is None:
            return default
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok:
            number = float(value)  # type: ignore[arg-type]
            ok = math.isfinite(number) and (number > minimum if positive else number >= minimum)
        if not ok:
            relation = ">" if positive else "≥"
            self.fail((*path, key), f"must be a number {relation} {minimum:g}, got {value!r}")
            return default
        return number

    def optional_number(self, obj: Mapping[str, object], path: Path, key: str,
                        *, positive: bool = True) -> float | None:
        if obj.get(key) is None:
            return None
        before = len(self.errors)
        value = self.number(obj, path, key, 0.0, positive=positive)
        return None if len(self.errors) > before else value

    def string(self, obj: Mapping[str, object], path: Path, key: str, default: str = "",
               *, pattern: re.Pattern[str] | None = None, what: str = "") -> str:
        value = obj.get(key)
        if value is None:
            return default
        if not isinstance(value, str) or not value:
            self.fail((*path, key), f"must be a non-empty string, got {value!r}")
            return default
        if pattern is not None and not pattern.fullmatch(value):
            self.fail((*path, key), f"{value!r} is not {what or 'valid'}")
            return default
        return value

    def choice(self, obj: Mapping[str, object], path: Path, key: str,
               parse: Callable[[str], T], default: T) -> T:
        """A string parsed by ``parse`` (an enum's ``from_string``), whose error is kept."""
        value = obj.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.fail((*path, key), f"must be a string, got {_kind(value)}")
            return default
        try:
            return parse(value)
        except ValueError as error:
            self.fail((*path, key), str(error))
            return default

    def labels(self, obj: Mapping[str, object], path: Path, key: str) -> dict[str, str]:
        """A string-to-string mapping; integer values are taken as their decimal text."""
        value = obj.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail((*path, key), f"must be a mapping, got {_kind(value)}")
            return {}
        result: dict[str, str] = {}
        for name, item in value.items():
            if isinstance(item, str):
                result[name] = item
            elif isinstance(item, int) and not isinstance(item, bool):
                result[name] = str(item)
            else:
                self.fail((*path, key, name), f"must be a string, got {_kind(item)}")
        return result

    # --- quantities and Kubernetes fragments ----------------------------------------------

    def quantity(self, obj: Mapping[str, object], path: Path, key: str,
                 resource: str) -> dict[str, str | int | float]:
        """``{resource: value}`` for a quantity at ``key`` (``{}`` when absent or wrong)."""
        value = obj.get(key)
        if value is None:
            return {}
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            self.fail((*path, key), f"must be a quantity such as 2, 500m or 4Gi, got "
                                    f"{_kind(value)}")
            return {}
        try:
            amount = Resources.from_k8s({resource: value}).get(resource)
        except QuantityError as error:
            self.fail((*path, key), error.reason)
            return {}
        self._absurd((*path, key), resource, value, amount)
        return {resource: value}

    def _absurd(self, path: Path, resource: str, value: str | int | float,
                amount: int) -> None:
        """Warn about a valid quantity that cannot be what was meant: cpu with a byte
        suffix (``cpu: 1.5Gi``, 1.6 billion cores), memory under a mebibyte (``memory:
        0.5`` is half a byte: a bare number is bytes)."""
        text = str(value).strip()
        if resource == "cpu" and _BYTE_SUFFIX.search(text):
            self.warn(path, f"cpu: {text} is {amount / 1000:,.0f} cores; cpu is counted in "
                            "cores (2, 500m): did you mean memory?")
        elif resource == "memory" and 0 < amount < 2**20:
            try:
                hint = f"; did you mean {text}{'Gi' if float(text) < 64 else 'Mi'}?"
            except ValueError:  # a unit was given: a small amount on purpose, or a slip
                hint = ""
            self.warn(path, f"memory: {text} is {amount:,} bytes, under 1Mi (a number "
                            f"without a unit is bytes){hint}")

    def resources(self, obj: Mapping[str, object], path: Path, key: str) -> Resources:
        """A resource list such as ``{cpu: 2, memory: 4Gi}`` (ZERO when absent or wrong)."""
        value = obj.get(key)
        if value is None:
            return Resources.ZERO
        if not isinstance(value, dict):
            self.fail((*path, key), f"must be a mapping of resource to quantity, got "
                                    f"{_kind(value)}")
            return Resources.ZERO
        raw: dict[str, str | int | float] = {}
        for name in value:
            raw.update(self.quantity(value, (*path, key), name, name))
        return Resources.from_k8s(raw)

    def k8s(self, obj: Mapping[str, object], path: Path, key: str,
            read: Callable[..., T], default: T) -> T:
        """A Kubernetes fragment read by a ``gangsched.translate`` reader (``path=`` kw)."""
        value = obj.get(key)
        if value is None:
            return default
        try:
            return read(value, path=key)
        except ConstraintError as error:
            self.fail(field_path(path, error.field or key), error.detail)
            return default

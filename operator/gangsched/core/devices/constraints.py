"""A claim's device constraints, checked as devices are added during the search.

``matchAttribute``: every device of the named requests (all requests when none are
named) has the attribute, and all have one value (of one type). ``distinctAttribute``:
every such device has the attribute, and no two share a value. Both are monotonic: once
a device breaks one, adding more never mends it, so the search backtracks at once. An
attribute is looked up by its fully qualified name, or by its short name when the domain
is the device's driver (kube-scheduler's ``lookupAttribute``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gangsched.core.values.devices import AttributeValue, Device, DeviceConstraint, DeviceID


def lookup(device: Device, device_id: DeviceID, name: str) -> AttributeValue | None:
    """The attribute ``name`` (fully qualified) of ``device``; None when it has none."""
    found = device.attributes.get(name)
    if found is not None:
        return found
    domain, sep, ident = name.partition("/")
    if not sep or domain != device_id.driver:
        return None
    return device.attributes.get(ident)


def _typed(value: AttributeValue) -> tuple[str, object]:
    """A value with its type: ``1`` and ``True`` differ, as do ``"1.0.0"`` and a version."""
    return (type(value).__name__, value)


@dataclass(slots=True)
class Constraint:
    requests: frozenset[str]
    attribute: str
    distinct: bool
    values: list[tuple[str, object]] = field(default_factory=list)

    def _applies(self, base: str, sub: str) -> bool:
        if not self.requests:
            return True
        return base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def add(self, base: str, sub: str, device: Device, device_id: DeviceID) -> bool:
        """Whether ``device`` keeps the constraint; if so it is counted in."""
        if not self._applies(base, sub):
            return True
        value = lookup(device, device_id, self.attribute)
        if value is None:
            return False
        typed = _typed(value)
        if self.distinct:
            if typed in self.values:
                return False
        elif self.values and self.values[0] != typed:
            return False
        self.values.append(typed)
        return True

    def remove(self, base: str, sub: str, device: Device, device_id: DeviceID) -> None:
        """Undo the :meth:`add` of ``device`` (which must have returned True)."""
        if not self._applies(base, sub):
            return
        value = lookup(device, device_id, self.attribute)
        if value is not None:
            self.values.remove(_typed(value))


def make_constraints(specs: Sequence[DeviceConstraint]) -> list[Constraint] | str:
    """The constraints of a claim, fresh; or the reason one cannot be used."""
    found: list[Constraint] = []
    for index, spec in enumerate(specs):
        if spec.match_attribute:
            found.append(Constraint(frozenset(spec.requests), spec.match_attribute, False))
        elif spec.distinct_attribute:
            found.append(Constraint(frozenset(spec.requests), spec.distinct_attribute, True))
        else:
            return f"constraint #{index}: empty constraint (unsupported constraint type?)"
    return found

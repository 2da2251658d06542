"""PriorityClasses (``scheduling.k8s.io/v1``) and how a ``priorityClassName`` resolves.

As the API server's Priority admission plugin does for pods: a named class gives its
``value``; no name gives the ``globalDefault`` class's value (the lowest one, should
several claim to be the default), else 0; a name with no such class is an error, in the
plugin's words (``no PriorityClass with name x was found``). The same rule gives
Applications and PodGroups their priority from their ``spec.priorityClassName``, and
pods that reach us without ``spec.priority`` (the plugin fills it in on a real server).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class PriorityClasses:
    """The classes by name, and the global default (name and value) if there is one."""

    values: Mapping[str, int] = field(default_factory=dict)
    default: tuple[str, int] | None = None

    @classmethod
    def from_k8s(cls, objects: Iterable[Mapping[str, Any]]) -> PriorityClasses:
        """Read PriorityClass objects; one without an integer ``value`` is skipped."""
        values: dict[str, int] = {}
        default: tuple[str, int] | None = None
        for obj in objects:
            name = (obj.get("metadata") or {}).get("name")
            value = obj.get("value")
            if not isinstance(name, str) or not isinstance(value, int) or isinstance(value,
                                                                                     bool):
                continue
            values[name] = value
            if obj.get("globalDefault") is True and (default is None or value < default[1]):
                default = (name, value)
        return cls(values, default)

    def resolve(self, name: object) -> tuple[int, str | None]:
        """(priority, None) for the class ``name`` (empty or None: the global default,
        else 0); when there is no such class or it is not a string, (what no class would
        give, the error)."""
        fallback = self.default[1] if self.default is not None else 0
        if name is None or name == "":
            return fallback, None
        if not isinstance(name, str):
            return fallback, "spec.priorityClassName: must be a string"
        value = self.values.get(name)
        if value is None:
            return fallback, f"no PriorityClass with name {name} was found"
        return value, None


NO_CLASSES = PriorityClasses()

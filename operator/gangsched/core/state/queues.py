"""Queues: a hierarchy with quota (``max``), ``guaranteed``, app limits and sort policies.

Usage is charged to a leaf queue and counted at every level above it, so a quota set on a
parent applies to all of its children together. A resource missing from ``max`` is
unlimited there (YuniKorn's rule); a queue with no ``max`` at all has no quota. A resource
set to 0 in ``max`` is *not* missing: the edge lists it in ``QueueSpec.limited`` (zero
amounts do not survive in :class:`Resources`), and the queue allows none of it.

The queue named ``default`` always exists: when no Queue object defines it, it is a
top-level queue with no quota and the configured default sort policy.

Admitted gang applications *earmark* their whole placeholder ask in the hierarchy until
their placeholders are allocated: two apps can never both be admitted on the same
headroom, so an admitted gang is never starved of quota by a later one.
"""

from __future__ import annotations

from dataclasses import dataclass

from gangsched.core.values.model import DEFAULT_QUEUE, QueueSpec, SortPolicy
from gangsched.core.values.resources import Resources


@dataclass(frozen=True, slots=True)
class QuotaCheck:
    """The result of a quota check: which level blocks, and by how much."""

    ok: bool
    queue: str = ""
    headroom: Resources = Resources.ZERO
    max: Resources = Resources.ZERO
    problem: str = ""
    """Set when the queue cannot be used at all: unknown, invalid, or a broken parent chain."""
    max_text: str = ""
    """``max`` for messages, with zero limits shown (``nvidia.com/gpu=0``)."""

    def describe(self, needed: Resources, what: str) -> str:
        """A message for users: why ``what`` (needing ``needed``) does not fit."""
        if self.problem:
            return self.problem
        return (f"queue {self.queue} has {self.headroom.format_short()} free of max "
                f"{self.max_text}; {what} needs {needed.format_short()}")


OK = QuotaCheck(True)


def format_max(spec: QueueSpec) -> str:
    """``spec.max`` as ``cpu=4, nvidia.com/gpu=0``: zero limits are shown too."""
    limits = spec.max or Resources.ZERO
    names = sorted(set(limits.names()) | spec.limited)
    if not names:
        return "none"
    shown = []
    for name in names:
        amount = limits.get(name)
        shown.append(Resources({name: amount}).format_short() if amount else f"{name}=0")
    return ", ".join(shown)


class QueueTree:
    def __init__(self, default_policy: SortPolicy = SortPolicy.FIFO) -> None:
        self.specs: dict[str, QueueSpec] = {}
        self.default_policy = default_policy
        self.used: dict[str, Resources] = {}
        self.earmarked: dict[str, Resources] = {}
        self.placeholder_used: dict[str, Resources] = {}
        self.charged: dict[str, dict[Resources, int]] = {}
        """Per queue charged (not its parents), how many pods of each request: the few
        shapes of the pods it runs."""
        self._paths: dict[str, tuple[str, ...] | str] = {}
        self._unlimited: dict[str, bool] = {}
        self._default = QueueSpec(DEFAULT_QUEUE, sort_policy=default_policy)
        """The default queue's spec while none is observed (made once: a spec checks
        its fields when made)."""

    # --- specs ---------------------------------------------------------------------------

    def upsert(self, spec: QueueSpec) -> None:
        self.specs[spec.name] = spec
        self._paths.clear()
        self._unlimited.clear()

    def remove(self, name: str) -> None:
        self.specs.pop(name, None)
        self._paths.clear()
        self._unlimited.clear()

    def spec(self, name: str) -> QueueSpec | None:
        found = self.specs.get(name)
        if found is None and name == DEFAULT_QUEUE:
            return self._default
        return found

    def names(self) -> list[str]:
        names = set(self.specs)
        names.add(DEFAULT_QUEUE)
        return sorted(names)

    def is_leaf(self, name: str) -> bool:
        return not any(spec.parent == name for spec in self.specs.values())

    def path(self, name: str) -> tuple[str, ...] | str:
        """Leaf-to-root names, or an error message (unknown queue, missing parent, cycle)."""
        cached = self._paths.get(name)
        if cached is not None:
            return cached
        result: tuple[str, ...] | str
        chain: list[str] = []
        current: str | None = name
        result = ()
        while current:
            spec = self.spec(current)
            if spec is None:
                if current == name:
                    result = f'queue "{name}" does not exist'
                else:
                    result = f'queue "{chain[-1]}" names parent "{current}", which does not exist'
                break
            if spec.invalid:
                result = f'queue "{current}" is invalid: {spec.invalid}'
                break
            if current in chain:
                result = "queue parents form a cycle: " + " -> ".join([*chain, current])
                break
            chain.append(current)
            current = spec.parent
        if not isinstance(result, str):
            result = tuple(chain)
        self._paths[name] = result
        return result

    # --- usage ---------------------------------------------------------------------------

    def _levels(self, name: str) -> tuple[str, ...]:
        path = self.path(name)
        return path if isinstance(path, tuple) else (name,)

    def charge(self, name: str, request: Resources, *, placeholder: bool = False) -> None:
        shapes = self.charged.setdefault(name, {})
        shapes[request] = shapes.get(request, 0) + 1
        for level in self._levels(name):
            self.used[level] = self.used.get(level, Resources.ZERO) + request
            if placeholder:
                held = self.placeholder_used.get(level, Resources.ZERO)
                self.placeholder_used[level] = held + request

    def release(self, name: str, request: Resources, *, placeholder: bool = False) -> None:
        shapes = self.charged.get(name)
        if shapes is not None:
            left = shapes.get(request, 0) - 1
            if left > 0:
                shapes[request] = left
            else:
                shapes.pop(request, None)
                if not shapes:
                    del self.charged[name]
        for level in self._levels(name):
            self.used[level] = self.used.get(level, Resources.ZERO) - request
            if placeholder:
                held = self.placeholder_used.get(level, Resources.ZERO)
                self.placeholder_used[level] = held - request

    def earmark(self, name: str, request: Resources) -> None:
        for level in self._levels(name):
            self.earmarked[level] = self.earmarked.get(level, Resources.ZERO) + request

    def unearmark(self, name: str, request: Resources) -> None:
        for level in self._levels(name):
            self.earmarked[level] = self.earmarked.get(level, Resources.ZERO) - request

    def usage(self, name: str) -> Resources:
        return self.used.get(name, Resources.ZERO)

    # --- checks --------------------------------------------------------------------------

    def fits(
        self, name: str, request: Resources, *, own_earmark: Resources = Resources.ZERO
    ) -> QuotaCheck:
        """Can ``request`` be allocated in queue ``name``, at every level up to the root?

        Every earmark counts as taken except ``own_earmark``, the caller's own (an admitted
        gang allocating its placeholders). Unknown queues never fit.
        """
        path = self.path(name)
        if isinstance(path, str):
            return QuotaCheck(False, name, problem=path)
        for level in path:
            spec = self.specs.get(level)
            if spec is None or (spec.max is None and not spec.limited):
                continue
            taken = self.used.get(level, Resources.ZERO) + self.earmarked.get(level, Resources.ZERO)
            taken = taken - own_earmark
            if not spec.within_max(taken + request):
                limit = spec.max or Resources.ZERO
                return QuotaCheck(False, level, (limit - taken).clamp_non_negative(), limit,
                                  max_text=format_max(spec))
        return OK

    def unlimited(self, name: str) -> bool:
        """Does every request fit queue ``name`` whatever is used: its path resolves and
        no level of it has a max? (:meth:`fits` is then always OK.)"""
        found = self._unlimited.get(name)
        if found is None:
            path = self.path(name)
            found = self._unlimited[name] = isinstance(path, tuple) and all(
                spec is None or (spec.max is None and not spec.limited)
                for spec in map(self.specs.get, path))
        return found

    def over_max(self, name: str, request: Resources) -> QuotaCheck:
        """Is ``request`` larger than the quota of some level, even with the queue empty?"""
        path = self.path(name)
        if isinstance(path, str):
            return QuotaCheck(False, name, problem=path)
        for level in path:
            spec = self.specs.get(level)
            if spec is not None and not spec.within_max(request):
                limit = spec.max or Resources.ZERO
                return QuotaCheck(False, level, limit, limit, max_text=format_max(spec))
        return OK

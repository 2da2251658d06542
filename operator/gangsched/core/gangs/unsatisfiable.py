"""Gangs that can never fit the cluster as it is now: reported at once, with the numbers.

A waiting gang is *unsatisfiable* when, on the nodes that exist now,

* its minimum exceeds the allocatable of every ready, schedulable node together (an
  Application: the sum over task groups of ``minMember`` x ``minResource``; a PodGroup:
  ``minResources``, else the requests of its first ``minMember`` members); or
* a member is larger than every node its constraints allow (nodeSelector, node affinity,
  tolerations): a task group's ``minResource``, a PodGroup member's request; or
* a task group's ``minMember`` members together exceed all the nodes they may use.

A gang whose constraints allow no node at all, or any gang while no node is ready and
schedulable (a cluster starting up, or scaled to zero), is not called unsatisfiable: the
ordinary blocking reason (``Constraints``, ``Capacity``, with the nodes each filter
rejected) says so.

Such a gang is not failed or killed: a cluster autoscaler may add nodes, an administrator
may resize or relabel them. It stays where it waits (an Application ``Accepted``, a
PodGroup ``Pending``/``Inqueue``), each affected task group's (or the PodGroup's)
``blockingReason`` is ``Unsatisfiable`` with the numbers, and a Warning Event
``Unsatisfiable`` is recorded once per distinct verdict. The check runs again whenever the
nodes change (added, removed, resized, relabelled, becoming ready or not); when the gang
fits, the verdict is withdrawn and the ordinary blocking reasons show again.

Timers: an Application's placeholder timeout starts at its first placeholder allocation,
and a PodGroup's schedule timeout at its first assumed member. A gang held as a whole by
``enqueue`` (the default) gets neither, so neither timer runs: a Hard gang is not killed,
it waits, saying why, until nodes are added or it is deleted. Without ``enqueue`` some
placeholders of an Application may be placed; the timer then runs, and a Hard gang is
killed, a Soft one resumes, as for any gang that does not fit in time. A PodGroup that can
never fit for its declared ``minResources`` has no member assumed at all (its pods wait
with ``Unsatisfiable``, :func:`declared_verdict`), so its timer never starts. Neither
kind is ever a preemptor (it preempts and reclaims nothing): :func:`group_verdict` and
:func:`app_verdict` judge it on demand for the victim searches, which run before a new
gang's first verdict.

Cost: O(nodes) per cycle while a gang waits (the capacity of the cluster); the per-member
checks are cached per (constraints, request) until the nodes change, and each gang's
verdict until the nodes, its spec or (for a PodGroup) its members change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

from gangsched.core.placement.cluster import ONE_POD, Constraints
from gangsched.core.state.verdicts import GANG, Fit, Verdicts
from gangsched.core.values.decisions import BlockingReason, EventType, ObjectRef
from gangsched.core.values.resources import Resources

K = TypeVar("K")
V = TypeVar("V")


class _Dirty(Protocol):
    dirty: bool

if TYPE_CHECKING:
    from gangsched.core.state.records import AppRuntime, GroupRuntime, PodState
    from gangsched.core.state.session import Session
    from gangsched.core.values.model import PodGroupSpec

REASON = "Unsatisfiable"


def check(s: Session) -> None:
    """Re-derive the verdict of every waiting gang; mark the changed ones dirty and
    record an Event for each new verdict. Gangs that no longer wait lose theirs."""
    v = s.unsatisfiable
    apps = [rt for rt in s.app_index.members("accepted_gang")
            if not rt.reserved and not rt.spec.invalid]
    groups = [rt for rt in s.group_index.members("unfinished")
              if not (rt.satisfied or rt.timed_out or rt.spec.invalid)]
    if not apps and not groups and not v.apps and not v.groups:
        return
    _refresh(s, v)
    for rt in apps:
        _set_app(s, rt, _app_verdict(s, v, rt))
    app_keys = {rt.spec.key for rt in apps}
    _forget(v.apps, app_keys, s.apps)
    for grt in groups:
        _set_group(s, grt, _group_verdict(s, v, grt))
    group_keys = {grt.spec.key for grt in groups}
    _forget(v.groups, group_keys, s.groups)
    _prune(v.judged_apps, app_keys)
    _prune(v.judged_groups, group_keys)


def group_verdict(s: Session, rt: GroupRuntime) -> BlockingReason | None:
    """The verdict on PodGroup ``rt`` as the nodes stand now (None: it may fit), judged
    on demand (cached like :func:`check`'s): the victim searches ask it before a gang's
    first cycle has been judged. A gang that can never fit preempts nothing and reclaims
    nothing."""
    if rt.satisfied or rt.timed_out or rt.spec.invalid:
        return None
    v = s.unsatisfiable
    _refresh(s, v)
    return _group_verdict(s, v, rt)


def declared_verdict(s: Session, rt: GroupRuntime) -> BlockingReason | None:
    """The verdict on PodGroup ``rt``'s declared ``minResources`` alone (None without
    any, or when they may fit): a gate, as Volcano's enqueue keeps such a group
    Pending; its members are then never assumed. (A gang without ``minResources`` whose
    members exceed the nodes is judged by :func:`group_verdict`, and its members are
    still tried: a NonStrict group accumulates them as they come.)"""
    spec = rt.spec
    if not spec.min_resources or rt.satisfied or rt.timed_out or spec.invalid:
        return None
    v = s.unsatisfiable
    _refresh(s, v)
    return _whole(v, spec.min_resources, f"PodGroup {spec.key}")


def app_verdict(s: Session, rt: AppRuntime) -> dict[str, BlockingReason]:
    """:func:`group_verdict` for a gang Application: per task group (and ``GANG`` for
    the whole), empty when it may fit."""
    if not rt.spec.gang or rt.spec.invalid:
        return {}
    v = s.unsatisfiable
    _refresh(s, v)
    return _app_verdict(s, v, rt)


def _prune(judged: dict[K, V], waiting: set[K]) -> None:
    """Forget what was judged of gangs no longer waiting."""
    if len(judged) > len(waiting):
        for key in [k for k in judged if k not in waiting]:
            del judged[key]


def _forget(verdicts: dict[K, V], judged: set[K],
            objects: Mapping[K, _Dirty]) -> None:
    """Drop the verdicts of gangs no longer judged; their status is written again."""
    for key in [k for k in verdicts if k not in judged]:
        del verdicts[key]
        found = objects.get(key)
        if found is not None:
            found.dirty = True


def _refresh(s: Session, v: Verdicts) -> None:
    """Forget the cached fits when the nodes changed."""
    capacity = s.cluster.capacity()
    signature = (s.cluster.node_epoch, capacity)
    if signature != v.signature:
        v.signature, v.capacity = signature, capacity
        v.fits.clear()
        v.judged_apps.clear()
        v.judged_groups.clear()


def _same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """The same objects, in the same order (identity: specs and pods are replaced, not
    changed in place)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _fit(s: Session, v: Verdicts, constraints: Constraints, request: Resources) -> Fit:
    key = (constraints, request)
    found = v.fits.get(key)
    if found is None:
        nodes = s.cluster.candidates(constraints)
        total = Resources.ZERO
        largest = Resources.ZERO
        fits = False
        for state in nodes:
            alloc = state.node.allocatable
            total = total + alloc
            fits = fits or request.fits_in(alloc)
            if _size(alloc, request) > _size(largest, request):
                largest = alloc
        found = v.fits[key] = Fit(len(nodes), fits, largest, total)
    return found


def _size(alloc: Resources, request: Resources) -> tuple[int, ...]:
    return tuple(alloc.get(name) for name, _ in sorted(request.items()))


def _only(amount: Resources, names: Resources) -> Resources:
    """``amount`` restricted to the resources ``names`` asks for (for messages)."""
    return Resources({name: amount.get(name) for name, _ in names.items()})


def _whole(v: Verdicts, minimum: Resources, what: str) -> BlockingReason | None:
    if not v.capacity or minimum.fits_in(v.capacity):
        return None  # fits, or no node is ready at all (a cluster starting, scaled to 0)
    short = minimum.shortfall(v.capacity)
    message = (f"{what} needs {minimum.format_short()} in all; all ready, schedulable nodes "
               f"together have {_only(v.capacity, minimum).format_short()} (short of "
               f"{short.format_short()}): it cannot run until nodes are added")
    return BlockingReason(REASON, message, {
        "needed": minimum.format_short(),
        "cluster": _only(v.capacity, minimum).format_short(),
        "short": short.format_short(),
    })


def _member(fit: Fit, request: Resources, count: int, what: str) -> BlockingReason | None:
    """The verdict on ``count`` members of one kind (None: they may fit)."""
    if fit.allowed == 0:
        return None  # no node passes the filters: the ordinary reasons say which
    if not fit.fits:
        message = (f"{what} needs {request.format_short()} per member; the largest of the "
                   f"{fit.allowed} nodes its constraints allow has "
                   f"{_only(fit.largest, request).format_short()}: it cannot run until "
                   "larger nodes are added")
        return BlockingReason(REASON, message, {
            "member": request.format_short(),
            "largestNode": _only(fit.largest, request).format_short(),
            "nodesAllowed": str(fit.allowed),
        })
    together = request.scale(count)
    if count > 1 and not together.fits_in(fit.total):
        message = (f"{what} needs {count} x {request.format_short()} = "
                   f"{together.format_short()}; the {fit.allowed} nodes its constraints "
                   f"allow have {_only(fit.total, together).format_short()} together: it "
                   "cannot run until nodes are added")
        return BlockingReason(REASON, message, {
            "needed": together.format_short(),
            "nodesAllowedHave": _only(fit.total, together).format_short(),
            "nodesAllowed": str(fit.allowed),
        })
    return None


def _app_verdict(s: Session, v: Verdicts, rt: AppRuntime) -> dict[str, BlockingReason]:
    spec = rt.spec
    inputs: tuple[object, ...] = (spec,)
    held = v.judged_apps.get(spec.key)
    if held is not None and _same(held[0], inputs):
        return held[1]
    found: dict[str, BlockingReason] = {}
    minimum = Resources.ZERO
    for group in spec.task_groups:
        request = group.min_resource + ONE_POD
        minimum = minimum + group.min_resource.scale(group.min_member)
        fit = _fit(s, v, Constraints.of_group(group), request)
        verdict = _member(fit, request, group.min_member, f"task group {group.name}")
        if verdict is not None:
            found[group.name] = verdict
    whole = _whole(v, minimum, "the gang")
    if whole is not None:
        found[GANG] = whole
    v.judged_apps[spec.key] = (inputs, found)
    return found


def _group_verdict(s: Session, v: Verdicts, rt: GroupRuntime) -> BlockingReason | None:
    spec = rt.spec
    known = v.judged_groups.get(spec.key)
    if known is not None and known[0][0] is spec and known[0][1] == rt.members_version:
        return known[1]  # no member joined, left, was observed, charged or released since
    active = [ps for ps in (s.pods[uid] for uid in s.group_members.get(spec.key, ()))
              if ps.pod.active]
    verdict = _judge_group(s, v, spec, active)
    v.judged_groups[spec.key] = ((spec, rt.members_version), verdict)
    return verdict


def _judge_group(s: Session, v: Verdicts, spec: PodGroupSpec,
                 active: list[PodState]) -> BlockingReason | None:
    members = sorted(active, key=lambda ps: (-ps.pod.priority, ps.pod.creation, ps.pod.name))
    kinds: dict[tuple[Constraints, Resources], int] = {}
    for ps in members[:spec.min_member]:
        kinds[(ps.constraints, ps.request)] = kinds.get((ps.constraints, ps.request), 0) + 1
    ordered = (sorted(kinds.items(), key=lambda kv: repr(kv[0])) if len(kinds) > 1
               else kinds.items())
    for (constraints, request), count in ordered:
        verdict = _member(_fit(s, v, constraints, request), request, count,
                          f"PodGroup {spec.key}")
        if verdict is not None:
            return verdict
    minimum = spec.min_resources
    if not minimum and len(members) >= spec.min_member:
        for ps in members[:spec.min_member]:
            minimum = minimum + ps.pod.requests
    return _whole(v, minimum, f"PodGroup {spec.key}")


def _set_app(s: Session, rt: AppRuntime, verdict: dict[str, BlockingReason]) -> None:
    v = s.unsatisfiable
    key = rt.spec.key
    if v.apps.get(key, {}) == verdict:
        return
    if verdict:
        v.apps[key] = verdict
        # One Event: the task groups' verdicts, else the whole gang's.
        said = [b for group, b in verdict.items() if group != GANG] or [verdict[GANG]]
        for blocking in said:
            _warn(s, rt.warned, rt.ref, blocking.message)
    else:
        v.apps.pop(key, None)
    rt.dirty = True


def _set_group(s: Session, rt: GroupRuntime, verdict: BlockingReason | None) -> None:
    v = s.unsatisfiable
    key = rt.spec.key
    if v.groups.get(key) == verdict:
        return
    if verdict is not None:
        v.groups[key] = verdict
        _warn(s, rt.warned, rt.ref, verdict.message)
    else:
        v.groups.pop(key, None)
    rt.dirty = True


def _warn(s: Session, warned: set[str], target: ObjectRef, message: str) -> None:
    if f"{REASON}:{message}" in warned:
        return
    warned.add(f"{REASON}:{message}")
    s.event(target, EventType.WARNING, REASON, message)

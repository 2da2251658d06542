"""The simulation behind every victim search: would a preemptor fit, given room freed?

Preemption and reclaim choose victims by simulating the preemptor's placement with the
room the chosen victims would give back (``extra``, per node) added to the nodes' free
room: :func:`fit` places the preemptor's members one by one, as placement would (the
same filters, the scoring the preemptor gets); :func:`enough_places` is the cheap
necessary test that comes first (enough places for every member, each counted on its
own). Nothing is charged: the cluster is read, never changed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from gangsched.core.placement.cluster import NodeState
from gangsched.core.preemption.preemptors import Item, Preemptor
from gangsched.core.values.model import PodUID, Scoring
from gangsched.core.values.resources import Resources
from gangsched.core.volumes import claims

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


def fit(
    s: Session,
    items: Iterable[Item],
    extra: Mapping[str, Resources],
    scoring: Scoring,
    owners: frozenset[str] = frozenset(),
    victims: Collection[str] = (),
) -> dict[int, str] | None:
    """Where each item would go with ``extra`` more free per node, or None if one fits
    nowhere. Greedy in the given order, scoring as allocate does (binpack: the fullest
    node it fits; spread: the emptiest), among the first ``sample_size`` nodes that fit,
    skipping nodes reserved for a gang other than ``owners``. Items with resource
    claims must also have their devices there, the devices of the claims of
    ``victims`` (pod uids) counted as free and each item's devices taken from the items
    after it (:class:`~gangsched.core.volumes.claims.Simulation`). Nothing in the cluster
    changes."""
    items = list(items)
    devices = _devices(s, items, victims)
    taken: dict[str, Resources] = {}
    placed: dict[int, str] = {}
    sample = s.cluster.sample_size
    barred = closed_nodes(s, owners)
    skip: dict[Item, int] = {}
    """Per item shape, the nodes before the first one it fitted: room only shrinks
    during the call, so a later item of the same shape fits none of them either."""
    for index, item in enumerate(items):
        best: NodeState | None = None
        best_score = 0.0
        found = 0
        nodes = s.cluster.candidates(item.constraints)
        first = skip.get(item, 0)
        for position in range(first, len(nodes)):
            state = nodes[position]
            name = state.node.name
            if name in barred:
                continue
            free = state.free
            more = extra.get(name)
            if more is not None:
                free = free + more
            less = taken.get(name)
            if less is not None:
                free = free - less
            if not item.request.fits_in(free):
                continue
            info = item.info
            if (devices is not None and info is not None and info.volumes.resource_claims
                    and not devices.fits(index, info.namespace, info.volumes, info.uid,
                                         state.node)):
                continue
            if not found:
                skip[item] = position
            score = _score(state, item.request, free)
            if (best is None or (scoring is Scoring.BINPACK and score > best_score)
                    or (scoring is Scoring.SPREAD and score < best_score)):
                best, best_score = state, score
            found += 1
            if found >= sample:
                break
        if best is None:
            return None
        name = best.node.name
        if devices is not None:
            devices.take(index, name)
        taken[name] = taken.get(name, Resources.ZERO) + item.request
        placed[index] = name
    return placed


def _devices(s: Session, items: list[Item], victims: Collection[str]
             ) -> claims.Simulation | None:
    if not any(item.info is not None and item.info.volumes.resource_claims for item in items):
        return None
    found = (s.pods.get(PodUID(uid)) for uid in victims)
    pods = [ps.pod for ps in found if ps is not None]
    freed = claims.freed_by(s.volumes, ((p.namespace, p.volumes.resource_claims, p.uid)
                                        for p in pods if p.volumes.resource_claims))
    return claims.Simulation(s.volumes, freed)


def enough_places(s: Session, items: Iterable[Item], extra: Mapping[str, Resources],
                  owners: frozenset[str] = frozenset()) -> bool | None:
    """Would :func:`fit` place every item, told by counting? Each shape of item (request
    and constraints) needs as many places as it has members, a place being room for one
    more on a node it may use: False when some shape has fewer (the simulation would
    fail), True when all items are of one shape and it has enough (identical members fit
    wherever one more fits, so the greedy placement cannot fail), None otherwise (the
    shapes compete for the same room: only the simulation tells). The places are the
    cluster's kept count per shape (:meth:`~gangsched.core.placement.cluster.Cluster.room_with`),
    corrected on the nodes with extra room or barred: O(shapes x those nodes) instead of
    O(items x nodes)."""
    shapes: dict[Item, int] = {}
    for item in items:
        shapes[item] = shapes.get(item, 0) + 1
    return enough_places_of(s, shapes, extra, owners)


def enough_places_of(s: Session, shapes: Mapping[Item, int], extra: Mapping[str, Resources],
                     owners: frozenset[str] = frozenset()) -> bool | None:
    """:func:`enough_places` of items counted by shape (a preemptor's, counted once)."""
    barred = closed_nodes(s, owners)
    for item, count in shapes.items():
        if s.cluster.room_with(item.request, item.constraints, extra, barred) < count:
            return False
    return True if len(shapes) <= 1 else None


def _score(state: NodeState, request: Resources, free: Resources) -> float:
    alloc = state.node.allocatable
    total = 0.0
    for name, amount in request.items():
        capacity = alloc.get(name)
        if capacity > 0:
            total += (capacity - free.get(name) + amount) / capacity
    return total


def scoring_for(s: Session, pre: Preemptor) -> Scoring:
    """Placeholders and PodGroup members use the gang scoring; single pods the pod one."""
    return s.config.pod_scoring if pre.pod is not None else s.config.gang_scoring


def closed_nodes(s: Session, owners: frozenset[str]) -> frozenset[str]:
    """Nodes reserved for a starving gang that is not one of ``owners``."""
    cluster = s.cluster
    if cluster.reserved and not owners & cluster.reserved_owners:
        return cluster.reserved
    return frozenset()


def relevant_nodes(s: Session, pre: Preemptor) -> set[str]:
    """Nodes that pass the static filters for at least one item, and are not reserved
    for another gang."""
    found: set[str] = set()
    for constraints in {item.constraints for item in pre.items}:
        found.update(state.node.name for state in s.cluster.candidates(constraints))
    return found - closed_nodes(s, pre.owners)

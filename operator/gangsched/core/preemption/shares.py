"""Deserved shares: how much of the cluster each queue should have when queues compete.

As in Volcano's proportion plugin, per resource and level by level, from the top:

1. the level's amount (the cluster's schedulable capacity at the top, a parent's own
   deserved share below) is split between sibling queues;
2. each first gets its ``guaranteed`` amount;
3. what is left is divided in proportion to ``weight`` ("water-filling"): a queue never
   gets more than its ``max`` nor more than it *asks for* (its usage plus its pending
   work), and what a capped queue cannot use goes on to its siblings.

So a queue with nothing to do deserves nothing, and its share goes to the queues that
have work. The ``reclaim`` action compares each queue's usage with its deserved share.
A queue whose parent chain is broken deserves nothing. Integer units throughout: the
rounding remainder goes one unit at a time, in queue-name order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gangsched.core.preemption.preemptors import app_ask
from gangsched.core.values.model import DEFAULT_QUEUE, QueueSpec
from gangsched.core.values.resources import PODS, Resources

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


@dataclass(frozen=True, slots=True)
class Claim:
    """One sibling's claim on a level's amount of one resource."""

    name: str
    weight: int
    floor: int
    cap: int


def fill(amount: int, claims: list[Claim]) -> dict[str, int]:
    """Split ``amount``: floors first (each capped), then the rest by weight up to caps.

    Floors that together exceed ``amount`` are all given (guarantees are promises);
    nothing is left for weights then.
    """
    given = {c.name: min(c.floor, c.cap) for c in claims}
    left = amount - sum(given.values())
    open_claims = sorted((c for c in claims if given[c.name] < c.cap), key=lambda c: c.name)
    while left > 0 and open_claims:
        weights = sum(c.weight for c in open_claims)
        spent = 0
        for c in open_claims:
            add = min(left * c.weight // weights, c.cap - given[c.name])
            given[c.name] += add
            spent += add
        if spent == 0:  # the rounding remainder: one unit each, in name order
            for c in open_claims:
                if spent < left and given[c.name] < c.cap:
                    given[c.name] += 1
                    spent += 1
        left -= spent
        open_claims = [c for c in open_claims if given[c.name] < c.cap]
    return given


def demand(s: Session, now: float) -> dict[str, Resources]:
    """What each queue asks for, counted at every level of its path: its usage, its
    pending pods, and what not-reserved gangs still need (placeholders not made yet)."""
    found: dict[str, Resources] = {}
    asked: dict[str, dict[str, int]] = {}
    """Per leaf queue, the amounts asked: summed as integers, added up the path once."""

    def add(queue: str, amount: Resources) -> None:
        sums = asked.setdefault(queue, {})
        for name, value in amount.items():
            sums[name] = sums.get(name, 0) + value

    for name in s.queues.names():
        found[name] = s.queues.usage(name)
    counted: set[str] = set()
    for rt in sorted(s.app_index.members("accepted_gang"), key=lambda rt: rt.spec.key):
        key = rt.spec.key
        if not rt.reserved:
            asked_for = app_ask(s, rt)
            if asked_for is not None:
                add(rt.spec.queue, asked_for)
                counted.add(key)
    pods: dict[tuple[str, Resources], int] = {}
    """Pending pods by queue and request: most share a few shapes, added up once each."""
    for shape, count in s.pending_shapes.counts.items():
        if shape.app in counted or shape.invalid:
            continue  # a gang not reserved asks for its placeholders, not its pods
        at = (s.queue_for(shape.app, shape.group, shape.queue), shape.request)
        pods[at] = pods.get(at, 0) + count
    for (queue, request), count in pods.items():
        add(queue, request.scale(count))
    for queue in sorted(asked):
        path = s.queues.path(queue)
        amount = Resources(asked[queue])
        for level in path if isinstance(path, tuple) else ():
            found[level] = found.get(level, Resources.ZERO) + amount
    return found


def deserved(s: Session, now: float) -> dict[str, Resources]:
    """Every queue's deserved share (see the module docstring), computed once while
    nothing changes in a cycle (allocate orders its queues by it, reclaim asks again)."""
    return s.kept("deserved", lambda: compute_deserved(s, now))


def compute_deserved(s: Session, now: float) -> dict[str, Resources]:
    """Every queue's deserved share, computed from the queues and their demand."""
    asks = demand(s, now)
    children: dict[str | None, list[QueueSpec]] = {}
    for name in s.queues.names():
        path = s.queues.path(name)
        spec = s.queues.spec(name)
        if not isinstance(path, tuple) or spec is None:
            continue
        parent = path[1] if len(path) > 1 else None
        children.setdefault(parent, []).append(spec)
    result: dict[str, Resources] = {}
    capacity = s.cluster.capacity()

    def split(parent: str | None, amount: Resources) -> None:
        kids = children.get(parent, [])
        if not kids:
            return
        shares: dict[str, dict[str, int]] = {k.name: {} for k in kids}
        for resource, total in amount.items():
            claims = []
            for kid in kids:
                ask = asks.get(kid.name, Resources.ZERO).get(resource)
                limit = kid.limit(resource)
                cap = ask if limit is None else min(ask, limit)
                claims.append(Claim(kid.name, max(kid.weight, 1),
                                    kid.guaranteed.get(resource), max(cap, 0)))
            for name, value in fill(total, claims).items():
                shares[name][resource] = value
        for kid in kids:
            result[kid.name] = Resources(shares[kid.name])
            split(kid.name, result[kid.name])

    split(None, capacity)
    result.setdefault(DEFAULT_QUEUE, Resources.ZERO)
    return result



def ratio(usage: Resources, share: Resources) -> float:
    """The largest fraction of its share a queue uses, over the resources it uses (the
    ``pods`` slot aside); infinite for a resource it uses with no share of it."""
    worst = 0.0
    for name, amount in usage.items():
        if name == PODS or amount <= 0:
            continue
        deserved = share.get(name)
        worst = max(worst, amount / deserved if deserved > 0 else float("inf"))
    return worst


def within(usage: Resources, share: Resources, need: Resources) -> bool:
    """Does ``usage + need`` stay within ``share`` in every resource ``need`` asks for
    (the ``pods`` slot aside)?"""
    for name, amount in need.items():
        if name != PODS and amount > 0 and usage.get(name) + amount > share.get(name):
            return False
    return True

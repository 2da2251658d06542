"""The gang guarantee on a slow cluster, over generated gangs, swaps, restarts and latencies.

Gangs are reserved with placeholders, then their real members arrive (all at once, as a
driver creates its executors) and replace them; pods of no gang arrive meanwhile and
take any room they find. The cluster deletes gracefully (a placeholder keeps its node
while it terminates, then is reported stopped, then is gone), starts pods late and
reports every change late. The core is restarted now and then (rebuilt from the world
as it stands), and a member waiting for its placeholder is now and then deleted and
replaced by its controller. The clock jumps from one instant at which something
happens to the next, as the simulator's does.

After every cycle, computed from the world (the truth) and the core's promises:

(a) no over-commit: on every node, the pods bound there (terminating ones included)
    plus the room promised to each real pod waiting for its placeholder there (what it
    needs beyond what its placeholder still holds) fit the node's allocatable; and the
    core's own books agree (``invariants.over_committed``);
(b) no gang has some but not all of its minimum members bound for longer than the
    slowest swap takes (``Latency.swap_seconds``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from builders import make_app, make_group, make_node, make_pod
from gangsched.core.state import invariants
from gangsched.core.values.model import AppKey, PodUID
from gangsched.core.values.resources import Resources
from gangsched.sim.latency import Latency
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simworld import SimWorld

HORIZON = 80.0
ONE = Resources({"pods": 1})


@dataclass(frozen=True)
class Gang:
    name: str
    members: int
    cpu: int
    real_at: float
    """When its real members arrive (all at once)."""
    delta: int = 0
    """How much more cpu a real member asks than its placeholder (-1, 0 or 1)."""


@dataclass(frozen=True)
class Scenario:
    nodes: tuple[int, ...]
    gangs: tuple[Gang, ...]
    others: tuple[tuple[float, int], ...]
    """Pods of no gang: (arrival, cpu)."""
    restarts: tuple[float, ...]
    replaces: tuple[float, ...]
    """Instants at which one real member waiting for its placeholder is deleted and
    replaced by a new one."""
    latency: Latency


@st.composite
def latencies(draw: st.DrawFn) -> Latency:
    low = draw(st.sampled_from((0.0, 0.2, 0.5, 1.0)))
    high = low + draw(st.sampled_from((0.0, 0.5, 2.0, 4.8)))
    return Latency(grace_min=low, grace_max=high,
                   running_after=draw(st.sampled_from((0.0, 1.0))),
                   watch_delay=draw(st.sampled_from((0.0, 0.3, 1.0))),
                   stopped_before_gone=draw(st.sampled_from((0.0, 0.5, 2.0))))


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    nodes = tuple(draw(st.lists(st.sampled_from((2, 4, 8)), min_size=1, max_size=3)))
    gangs = tuple(
        Gang(f"g{i}", draw(st.integers(1, 4)), cpu := draw(st.integers(1, 2)),
             draw(st.sampled_from((5.0, 12.0, 20.0, 31.5))),
             draw(st.sampled_from((0, 1) if cpu == 1 else (-1, 0, 1))))
        for i in range(draw(st.integers(1, 3))))
    others = tuple(draw(st.lists(st.tuples(st.sampled_from((0.0, 6.0, 13.0, 21.0, 33.0)),
                                           st.integers(1, 2)), max_size=6)))
    restarts = tuple(sorted(draw(st.lists(st.floats(1.0, 60.0), max_size=2))))
    replaces = tuple(sorted(draw(st.lists(st.floats(5.0, 40.0), max_size=2))))
    return Scenario(nodes, gangs, others, restarts, replaces, draw(latencies()))


class Check:
    """The two invariants, followed cycle after cycle."""

    def __init__(self, w: SimWorld, s: Scenario, *, overcommit: bool, partial: bool) -> None:
        self.w = w
        self.overcommit, self.partial = overcommit, partial
        self.need = {AppKey(f"default/{g.name}"): g.members for g in s.gangs}
        self.larger = {AppKey(f"default/{g.name}") for g in s.gangs if g.delta > 0}
        """Gangs whose real members ask more than their placeholders: such a member may
        fit nowhere, and wait (saying why) while the rest of its gang runs."""
        self.since: dict[AppKey, float] = {}
        self.whole: set[AppKey] = set()
        self.spans: list[tuple[AppKey, float]] = []
        self.limit = s.latency.swap_seconds + 1e-6

    def after_cycle(self, now: float) -> None:
        if self.overcommit:
            self._no_overcommit()
        self._no_partial_gang(now)

    def _no_overcommit(self) -> None:
        w = self.w
        held: dict[str, Resources] = {}
        for pod in w.pods.values():
            if pod.node_name is not None and pod.active:
                held[pod.node_name] = held.get(pod.node_name, Resources.ZERO) + pod.requests + ONE
        core = w.scheduler
        for ps in core.pods.values():
            if ps.parked_on is None or ps.parked_node is None or ps.uid not in w.pods:
                continue  # a real pod waiting for its placeholder: its room is promised
            placeholder = w.pods.get(ps.parked_on)
            standing = Resources.ZERO
            if (placeholder is not None and placeholder.node_name == ps.parked_node
                    and placeholder.active):
                standing = placeholder.requests + ONE
            swap = core.swaps[ps.parked_on]
            # It goes there, or (too large for that node) elsewhere: its gang keeps the
            # placeholder's room until it is placed.
            need = w.pods[ps.uid].requests + ONE if swap.there else swap.request
            claim = (need - standing).clamp_non_negative()
            held[ps.parked_node] = held.get(ps.parked_node, Resources.ZERO) + claim
        for name, node in w.nodes.items():
            total = held.get(name, Resources.ZERO)
            assert total.fits_in(node.allocatable), (
                f"node {name} holds {total} (bound pods and room promised to swaps) of "
                f"{node.allocatable}")
        assert invariants.over_committed(core) == []

    def _no_partial_gang(self, now: float) -> None:
        bound: dict[AppKey, int] = {}
        for pod in self.w.pods.values():
            if (pod.app is not None and not pod.placeholder and pod.node_name is not None
                    and pod.active):
                bound[pod.app] = bound.get(pod.app, 0) + 1
        for app, need in self.need.items():
            if app in self.whole:
                continue
            count = bound.get(app, 0)
            if count >= need:
                self.whole.add(app)
                self._close(app, now)
            elif count > 0:
                self.since.setdefault(app, now)
            start = self.since.get(app)
            assert (not self.partial or app in self.larger or start is None
                    or now - start <= self.limit), (
                f"{app} has had {count}/{need} members bound for {now - start:g}s "
                f"(a swap takes at most {self.limit:g}s)")

    def _close(self, app: AppKey, now: float) -> None:
        start = self.since.pop(app, None)
        if start is not None:
            self.spans.append((app, now - start))


def run(s: Scenario, *, overcommit: bool = True, partial: bool = True) -> Check:
    w = SimWorld()
    w.latency = s.latency
    for i, cpu in enumerate(s.nodes):
        w.add_node(make_node(f"n{i}", cpu=cpu))
    for gang in s.gangs:
        w.add_app(make_app(gang.name, make_group("g", gang.members, cpu=gang.cpu)))
    check = Check(w, s, overcommit=overcommit, partial=partial)
    events: dict[float, list[str]] = {}
    for gang in s.gangs:
        events.setdefault(gang.real_at, []).append(f"real:{gang.name}")
    for i, (at, _) in enumerate(s.others):
        events.setdefault(at, []).append(f"other:{i}")
    for at in s.restarts:
        events.setdefault(at, []).append("restart")
    for at in s.replaces:
        events.setdefault(at, []).append("replace")
    serial = 0
    now = 0.0
    while now <= HORIZON:
        for what in events.pop(now, []):
            kind, _, arg = what.partition(":")
            if kind == "real":
                gang = next(g for g in s.gangs if g.name == arg)
                for m in range(gang.members):
                    w.add_pod(make_pod(f"{arg}-x{m}", cpu=gang.cpu + gang.delta, app=arg,
                                       task_group="g", creation=now))
            elif kind == "other":
                w.add_pod(make_pod(f"o{arg}", cpu=s.others[int(arg)][1], creation=now))
            elif kind == "restart":
                w.restart()
            else:
                serial += 1
                _replace_one(w, now, serial)
        w.settle(now, cycles=3)
        check.after_cycle(now)
        upcoming = [t for t in (w.next_due(), w.scheduler.next_wake(),
                                min(events, default=None)) if t is not None and t > now]
        if not upcoming:
            break
        now = min(upcoming)
    return check


def _replace_one(w: SimWorld, now: float, serial: int) -> None:
    """A controller replaces a member that waits for its placeholder (the first found)."""
    for ps in sorted(w.scheduler.pods.values(), key=lambda p: p.pod.name):
        pod = w.pods.get(ps.uid)
        if ps.parked_on is not None and pod is not None and pod.node_name is None:
            w.delete_pod(pod.uid)
            w.add_pod(dataclasses.replace(pod, uid=PodUID(f"{pod.uid}-r{serial}"),
                                          name=f"{pod.name}-r{serial}", creation=now))
            return


PROPERTIES = settings(max_examples=100, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow])


@PROPERTIES
@given(scenarios())
def test_no_node_ever_holds_more_than_its_allocatable(s: Scenario) -> None:
    run(s, partial=False)


@PROPERTIES
@given(scenarios())
def test_no_gang_is_partial_for_longer_than_a_swap_takes(s: Scenario) -> None:
    run(s, overcommit=False)


def test_a_scenario_with_every_path() -> None:
    """One fixed scenario through swaps, a replacement, a restart and slow deletion."""
    s = Scenario(nodes=(4, 4, 4), gangs=(Gang("g0", 4, 2, 5.0), Gang("g1", 2, 1, 12.0)),
                 others=((6.0, 2), (6.0, 2), (13.0, 1)), restarts=(7.0,), replaces=(5.5,),
                 latency=Latency(0.2, 5.0, 1.0, 0.5, 1.0))
    check = run(s)
    assert check.whole == set(check.need)
    assert any(span > 0 for _, span in check.spans)  # swaps did take time

"""What the cluster keeps up to date as usage changes is what a full count gives: the
diagnosis kept node by node, and the capacity and free room summed over the nodes."""

from __future__ import annotations

from builders import make_node, res
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.placement.cluster import ONE_POD, Cluster, Constraints
from gangsched.core.placement.tally import TouchLog
from gangsched.core.values.constraints import ANY_NODE, Taint, TaintEffect
from gangsched.core.values.resources import Resources
from hypothesis import given, settings
from hypothesis import strategies as st

NODES = [f"n{i}" for i in range(6)]
SHAPES = [res(1) + ONE_POD, res(2, "4Gi") + ONE_POD, res(3) + ONE_POD]
ANY = Constraints.build({}, (), ANY_NODE)
TAINT = Taint("dedicated", "gpu", TaintEffect.NO_SCHEDULE)

step = st.one_of(
    st.tuples(st.just("charge"), st.sampled_from(NODES), st.integers(0, 9),
              st.integers(1, 3)),
    st.tuples(st.just("release"), st.sampled_from(NODES), st.integers(0, 9), st.just(0)),
    st.tuples(st.just("resize"), st.sampled_from(NODES), st.integers(0, 0), st.integers(2, 6)),
    st.tuples(st.just("taint"), st.sampled_from(NODES), st.integers(0, 0), st.integers(0, 1)),
    st.tuples(st.just("cordon"), st.sampled_from(NODES), st.integers(0, 0), st.integers(0, 1)),
    st.tuples(st.just("reserve"), st.sampled_from(NODES), st.integers(0, 0), st.integers(0, 1)),
    st.tuples(st.just("diagnose"), st.sampled_from(NODES), st.integers(0, 2), st.just(0)),
)


def _both(cluster: Cluster, request: Resources, owner: str | None) -> tuple[object, object]:
    """The diagnosis the cluster gives (kept node by node) and a full pass's."""
    info = PodInfo(request, ANY, owner=owner)
    return cluster.diagnose(request, ANY, owner), cluster._diagnose(info,
                                                                   cluster._blocked(owner))


def _copies(cluster: Cluster, request: Resources) -> int:
    """Pods of ``request`` the schedulable nodes have room for, counted node by node."""
    total = 0
    for state in cluster.candidates(ANY):
        total += min(max(state.free.get(name) // amount, 0)
                     for name, amount in request.items())
    return total


def _counted(cluster: Cluster, owner: str | None) -> tuple[Resources, Resources]:
    """Allocatable and free room over ready, schedulable nodes, counted node by node."""
    blocked = cluster._blocked(owner) or frozenset()
    total = free = Resources.ZERO
    for state in cluster.nodes.values():
        if state.node.ready and not state.node.unschedulable:
            total = total + state.node.allocatable
            if state.node.name not in blocked:
                free = free + state.free.clamp_non_negative()
    return total, free


@settings(max_examples=150, deadline=None)
@given(st.lists(step, min_size=20, max_size=80))
def test_a_tally_follows_every_change_exactly(steps: list[tuple[str, str, int, int]]) -> None:
    cluster = Cluster()
    for name in NODES:
        cluster.upsert_node(make_node(name, cpu=4, memory="8Gi"))
    charged: dict[str, str] = {}
    for action, node, n, amount in steps:
        uid = f"p{n}"
        if action == "charge" and uid not in charged:
            cluster.charge(node, uid, res(amount, f"{amount}Gi") + ONE_POD)
            charged[uid] = node
        elif action == "release" and uid in charged:
            cluster.release(charged.pop(uid), uid, Resources.ZERO)
        elif action == "resize":
            cluster.upsert_node(make_node(node, cpu=amount, memory="8Gi"))
        elif action == "taint":
            taints = (TAINT,) if amount else ()
            cluster.upsert_node(make_node(node, cpu=4, memory="8Gi", taints=taints))
        elif action == "cordon":
            cluster.upsert_node(make_node(node, cpu=4, memory="8Gi", unschedulable=bool(amount)))
        elif action == "reserve":
            cluster.reserve([node] if amount else [], ["gang"], "default/gang")
        elif action == "diagnose":
            request = SHAPES[n]
            for owner in (None, "gang"):
                kept, full = _both(cluster, request, owner)
                assert kept == full
            assert cluster.room_for(request, ANY) == _copies(cluster, request)
        for owner in (None, "gang"):
            assert cluster.free_capacity(owner) == _counted(cluster, owner)
        assert cluster.capacity() == _counted(cluster, None)[0]


def test_a_long_log_is_forgotten_and_what_was_kept_starts_again() -> None:
    log = TouchLog()
    log.size_for(3)
    for _ in range(4 * 3 + 64):
        log.touch("n0")
    assert (len(log.names), log.generation) == (4 * 3 + 64, 0)
    log.touch("n0")
    assert (log.names, log.generation) == ([], 1)


def test_a_diagnosis_after_a_release_judges_only_the_touched_node() -> None:
    cluster = Cluster()
    for name in NODES:
        cluster.upsert_node(make_node(name, cpu=2))
    for name in NODES:
        cluster.charge(name, f"on-{name}", res(2) + ONE_POD)
    request = res(1) + ONE_POD
    first = cluster.diagnose(request, ANY)
    assert first.by_filter == {"NodeResourcesFit": 6}
    judged: list[str] = []
    original = cluster._judge

    def spy(info: PodInfo, blocked: frozenset[str] | None) -> object:
        judge = original(info, blocked)
        if callable(judge):
            def counting(state):  # type: ignore[no-untyped-def]
                judged.append(state.node.name)
                return judge(state)
            return counting
        return judge

    cluster._judge = spy  # type: ignore[assignment,method-assign]
    cluster.release("n3", "on-n3", Resources.ZERO)
    second = cluster.diagnose(request, ANY)
    assert second.by_filter == {"NodeResourcesFit": 5, "Fits": 1}
    assert judged == ["n3"]


def test_the_closest_node_is_found_again_when_it_fills_up() -> None:
    cluster = Cluster()
    for name in ("n0", "n1"):
        cluster.upsert_node(make_node(name, cpu=4))
    cluster.charge("n0", "a", res(3) + ONE_POD)
    cluster.charge("n1", "b", res(2) + ONE_POD)
    request = res(4) + ONE_POD
    assert cluster.diagnose(request, ANY).best_shortfall == res(2)  # n1
    cluster.charge("n1", "c", res(2) + ONE_POD)
    assert cluster.diagnose(request, ANY).best_shortfall == res(3)  # n0 now
    cluster.release("n0", "a", Resources.ZERO)
    assert cluster.diagnose(request, ANY).best_shortfall == res(4)  # n0 fits; n1
    cluster.charge("n0", "d", res(1) + ONE_POD)
    assert cluster.diagnose(request, ANY).best_shortfall == res(1)  # n0

"""PodTopologySpread's domain counts, kept per selector, namespace and eligible nodes and
brought up to date with the pods placed and gone since (``PodIndex.changed_since``),
equal the counts made afresh from the index, through pods coming, going and starting
to terminate (which spread does not count), in two namespaces, on nodes that change."""

from __future__ import annotations

import dataclasses
import itertools

from builders import make_node, res
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.framework.podinfo import Constraints, PodInfo
from gangsched.core.placement.cluster import Cluster
from gangsched.core.plugins import podtopologyspread
from gangsched.core.values.model import Scoring
from gangsched.core.values.placement_terms import (
    Placement,
    SpreadConstraint,
    WhenUnsatisfiable,
)
from gangsched.core.values.selectors import LabelSelector
from hypothesis import given, settings
from hypothesis import strategies as st

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

_OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 29), st.integers(0, 2), st.integers(0, 1)),
    st.tuples(st.just("remove"), st.integers(0, 1000), st.just(0), st.just(0)),
    st.tuples(st.just("terminate"), st.integers(0, 1000), st.just(0), st.just(0)),
    st.tuples(st.just("zone"), st.integers(0, 29), st.integers(0, 3), st.just(0)),
), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(_OPS)
def test_kept_spread_counts_equal_fresh_ones(ops: list[tuple[str, int, int, int]]) -> None:
    cluster = Cluster()
    for i in range(30):
        cluster.upsert_node(make_node(f"n{i:02}", cpu=64, labels={HOST: f"n{i:02}",
                                                                  ZONE: f"z{i % 3}"}))
    plugin = cluster.framework(Scoring.BINPACK).plugin(podtopologyspread.NAME)
    assert isinstance(plugin, podtopologyspread.PodTopologySpread)
    uids: list[str] = []
    serial = 0
    checked = 0
    for op, a, b, c in ops:
        if op == "add":
            uid = f"p{serial}"
            serial += 1
            cluster.charge(f"n{a:02}", uid, res(1), PlacedPod(
                uid, ("default", "other")[c], {"app": f"a{b}"}, Placement(), f"n{a:02}"))
            uids.append(uid)
        elif op == "remove" and uids:
            uid = uids.pop(a % len(uids))
            cluster.release(cluster.pod_index.pods[uid].node, uid, res(1))
        elif op == "terminate" and uids:
            placed = cluster.pod_index.pods[uids[a % len(uids)]]
            cluster.pod_index.add(dataclasses.replace(placed, terminating=True))
        elif op == "zone":
            cluster.upsert_node(make_node(f"n{a:02}", cpu=64, labels={HOST: f"n{a:02}",
                                                                      ZONE: f"z{b}"}))
        for app, namespace, key in itertools.product(range(3), ("default", "other"),
                                                     (HOST, ZONE)):
            constraint = SpreadConstraint(1, key, WhenUnsatisfiable.DO_NOT_SCHEDULE,
                                          LabelSelector.build({"app": f"a{app}"}))
            pod = PodInfo(res(1), Constraints(), Placement(), namespace)
            eligible = plugin._eligible_nodes(cluster, pod, constraint, (key,))[0]
            kept = plugin._count(cluster, pod, constraint, eligible)
            fresh = podtopologyspread.PodTopologySpread(plugin.args)
            assert kept == fresh._count(cluster, pod, constraint, eligible)
            kept["z9"] = 99  # a copy of its own: the kept counts are not touched
            assert plugin._count(cluster, pod, constraint, eligible).get("z9") is None
            checked += 1
    assert checked == 12 * len(ops)

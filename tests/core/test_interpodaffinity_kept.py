"""InterPodAffinity's PreFilter counts, kept per pod shape and brought up to date with
the pods placed and gone since, equal the counts made afresh over every placed pod,
through pods coming and going (with affinity, anti-affinity, namespaces and namespace
selectors), namespaces relabelled and nodes relabelled."""

from __future__ import annotations

from builders import make_node, res
from gangsched.core.framework import interface as fw
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.framework.podinfo import Constraints, PodInfo
from gangsched.core.placement.cluster import Cluster
from gangsched.core.plugins import interpodaffinity
from gangsched.core.values.model import Scoring
from gangsched.core.values.placement_terms import AffinityTerm, Placement
from gangsched.core.values.selectors import LabelSelector
from hypothesis import given, settings
from hypothesis import strategies as st

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
KEYS = (HOST, ZONE)


def _term(key: int, app: int, namespaces: int) -> AffinityTerm:
    selector = LabelSelector.build({"app": f"a{app}"})
    if namespaces == 1:
        return AffinityTerm(KEYS[key], selector, namespaces=("default", "other"))
    if namespaces == 2:
        return AffinityTerm(KEYS[key], selector,
                            namespace_selector=LabelSelector.build({"team": "x"}))
    return AffinityTerm(KEYS[key], selector)


def _placement(app: int, anti: tuple[int, int, int] | None,
               affine: tuple[int, int, int] | None) -> Placement:
    return Placement(labels=(("app", f"a{app}"),),
                     anti_affinity=(_term(*anti),) if anti else (),
                     affinity=(_term(*affine),) if affine else ())


_TERM = st.one_of(st.none(), st.tuples(st.integers(0, 1), st.integers(0, 2),
                                       st.integers(0, 2)))
_OPS = st.lists(st.one_of(
    st.tuples(st.just("place"), st.integers(0, 2), _TERM, _TERM, st.integers(0, 7),
              st.booleans()),
    st.tuples(st.just("go"), st.integers(0, 99), st.none(), st.none(), st.just(0),
              st.just(False)),
    st.tuples(st.just("namespace"), st.integers(0, 1), st.none(), st.none(), st.just(0),
              st.booleans()),
    st.tuples(st.just("zone"), st.integers(0, 7), st.none(), st.none(), st.integers(0, 2),
              st.just(False)),
), min_size=1, max_size=25)

_SHAPES = [(0, (0, 0, 0), None), (1, None, (1, 1, 0)), (2, (1, 2, 2), (0, 0, 1)),
           (0, None, None), (1, (0, 1, 1), None)]


@settings(max_examples=150, deadline=None)
@given(_OPS)
def test_kept_counts_equal_counts_made_afresh(ops: list[tuple[object, ...]]) -> None:
    cluster = Cluster()
    for i in range(8):
        cluster.upsert_node(make_node(f"n{i}", cpu=64, labels={HOST: f"n{i}", ZONE: f"z{i % 3}"}))
    fwk = cluster.framework(Scoring.BINPACK)
    plugin = fwk.plugin(interpodaffinity.NAME)
    assert isinstance(plugin, interpodaffinity.InterPodAffinity)
    placed: list[PlacedPod] = []
    serial = 0
    for op, a, anti, affine, node, flag in ops:  # type: ignore[misc]
        if op == "place":
            serial += 1
            namespace = "other" if flag else "default"
            placement = _placement(a, anti, affine)
            pod = PlacedPod(f"p{serial}", namespace, placement.label_map, placement, f"n{node}")
            cluster.charge(pod.node, pod.uid, res(1), pod)
            placed.append(pod)
        elif op == "go" and placed:
            pod = placed.pop(a % len(placed))
            cluster.release(pod.node, pod.uid, res(1))
        elif op == "namespace":
            cluster.upsert_namespace(("default", "other")[a], {"team": "x"} if flag else {})
        elif op == "zone":
            cluster.upsert_node(make_node(f"n{a}", cpu=64, labels={HOST: f"n{a}",
                                                                   ZONE: f"z{node}"}))
        for index, (app, own_anti, own_affine) in enumerate(_SHAPES):
            placement = _placement(app, own_anti, own_affine)
            for namespace in ("default", "other"):
                info = PodInfo(res(1), Constraints(), placement, namespace, f"new{index}",
                               f"new{index}", labels=placement.label_map)
                state = fw.CycleState()
                status = plugin.pre_filter(state, info, cluster)
                fresh = plugin._count_all(info, cluster)
                skip = (not placement.affinity and not placement.anti_affinity
                        and not fresh.existing_anti)
                assert (status.code is fw.Code.SKIP) == skip
                if skip:
                    continue
                kept = state.data[interpodaffinity.NAME]
                assert isinstance(kept, interpodaffinity._FilterState)
                assert kept.existing_anti == fresh.existing_anti
                assert kept.affinity == fresh.affinity
                assert kept.anti == fresh.anti
                assert kept.matches_own_terms == fresh.matches_own_terms


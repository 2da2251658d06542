"""A scan carried over for pods with volume claims finds what a fresh scan finds.

A pod whose claims are served by local volumes (each naming its node) or provisioned
alike on every node is judged by VolumeBinding from the node's hostname alone; its
digest (:func:`gangsched.core.volumes.binding.hosts_digest`) holds where the catalogue's
log of local volumes stood, so that a scan carried over to the next pod of its shape
judges again only the hosts whose volumes were taken, freed, added, edited or removed
since. Each sequence below is placed twice from the same cluster and catalogue, once as
the cluster runs and once with every scan made afresh (``fresh_scans``): every placement
must choose the same node. Volumes are assumed as the scheduler assumes them
(:func:`gangsched.core.placement.volume_assumptions.reserve`'s rule), bindings confirmed
or given back, pods released, and volumes added or removed in between.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from builders import make_node, res
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.framework.podinfo import Constraints, PodInfo
from gangsched.core.placement import carried as core_carried
from gangsched.core.placement import cluster as core_cluster
from gangsched.core.placement.cluster import ONE_POD, Cluster
from gangsched.core.placement.scan import Found
from gangsched.core.values.model import Scoring
from gangsched.core.values.placement_terms import (
    Placement,
    SpreadConstraint,
    WhenUnsatisfiable,
)
from gangsched.core.values.selectors import LabelSelector
from gangsched.core.values.volume_specs import ClaimRef, PodClaim, PodVolumes, claim_key
from gangsched.core.volumes import binding
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_scan_carry import HOST, ZONE, Op, fresh_scans
from volume_builders import FAST, LOCAL, make_pv, make_pvc

_OPS = st.lists(st.one_of(
    st.tuples(st.just("place"), st.integers(0, 5), st.integers(0, 2), st.integers(1, 30)),
    st.tuples(st.just("release"), st.integers(0, 10_000), st.integers(1, 5), st.just(0)),
    st.tuples(st.just("confirm"), st.integers(0, 10_000), st.integers(1, 5), st.just(0)),
    st.tuples(st.just("forget"), st.integers(0, 10_000), st.integers(1, 5), st.just(0)),
    st.tuples(st.just("pv"), st.integers(0, 299), st.integers(5, 30), st.just(0)),
    st.tuples(st.just("unpv"), st.integers(0, 299), st.just(0), st.just(0)),
), min_size=1, max_size=12)


def _claims(kind: int, uid: str) -> tuple[tuple[str, str, str], ...]:
    """The claims of a pod of ``kind``: (name, class, request)."""
    if kind in (0, 3):
        return ((f"{uid}-data", LOCAL.name, "5Gi"),)
    if kind == 1:
        return ((f"{uid}-data", LOCAL.name, "15Gi"),)  # only the larger volumes serve it
    if kind == 2:
        return ((f"{uid}-data", FAST.name, "5Gi"), (f"{uid}-logs", FAST.name, "1Gi"))
    if kind == 4:  # two local claims: a host must have two free volumes
        return ((f"{uid}-data", LOCAL.name, "5Gi"), (f"{uid}-logs", LOCAL.name, "5Gi"))
    return ()


@contextmanager
def found_recorded(into: list[object]) -> Iterator[None]:
    """Each bin-packing scan's nodes recorded: the first of each usage key, by name (what
    usage scoring reads; a scan kept per zone finds only those)."""
    scan = core_cluster.Cluster._binpack_scan

    def recorded(*args: object, **kwargs: object) -> Found:
        found = scan(*args, **kwargs)  # type: ignore[arg-type]
        firsts: dict[str, str] = {}
        for state in found.nodes:
            firsts.setdefault(state.usage_key, state.node.name)
        into.append(sorted(firsts.values()))
        return found

    core_cluster.Cluster._binpack_scan = recorded  # type: ignore[method-assign]
    try:
        yield
    finally:
        core_cluster.Cluster._binpack_scan = scan  # type: ignore[method-assign]


def _run(nodes: int, ops: list[Op], fresh: bool) -> list[object]:
    """Each placement's choice, and before it what its scan found."""
    chosen: list[object] = []
    with fresh_scans(fresh), found_recorded(chosen):
        cluster = Cluster(percentage_of_nodes_to_score=10)
        catalog = cluster.volumes
        catalog.upsert(LOCAL)
        catalog.upsert(FAST)
        for i in range(nodes):
            name = f"n{i:03}"
            cluster.upsert_node(make_node(name, cpu=2 + i % 3,
                                          labels={HOST: name, ZONE: f"z{i % 4}"}))
            if i % 3:
                catalog.upsert(make_pv(f"pv-{name}", "20Gi" if i % 5 == 1 else "10Gi",
                                       node=name))
        placed: list[tuple[str, str, object]] = []
        serial = 0
        for op, a, b, c in ops:
            if op == "place":
                app = f"app{b}"
                selector = LabelSelector.build({"app": app})
                spread = (SpreadConstraint(1, ZONE, WhenUnsatisfiable.DO_NOT_SCHEDULE,
                                           selector),) if a == 3 else ()
                placement = Placement(labels=(("app", app),), spread=spread)
                request = res(1) + ONE_POD
                for _ in range(c):
                    uid = f"p{serial}"
                    serial += 1
                    claims = _claims(a, uid)
                    for name, storage_class, size in claims:
                        catalog.upsert(make_pvc(name, size, storage_class=storage_class))
                    volumes = PodVolumes(claims=tuple(PodClaim(name) for name, _, _ in claims))
                    info = PodInfo(request, Constraints(), placement, "default", uid, uid,
                                   labels=placement.label_map, volumes=volumes)
                    where = cluster.place(request, info.constraints, Scoring.BINPACK, pod=info)
                    chosen.append(where)
                    if where is None:
                        continue
                    cluster.charge(where, uid, request, PlacedPod(
                        uid, "default", placement.label_map, placement, where))
                    found = binding.prefilter(catalog, "default", volumes)
                    assert isinstance(found, binding.Claims)
                    reason, plan = binding.match(catalog, found, cluster.nodes[where].node)
                    assert reason is None
                    catalog.assume(uid, plan)
                    catalog.pod_placed(uid, "default", volumes, where)
                    placed.append((uid, where, request))
            elif op in ("release", "confirm", "forget"):
                for _ in range(min(b, len(placed))):
                    uid, where, request = placed[a % len(placed)]
                    if op == "release":
                        placed.pop(a % len(placed))
                        cluster.release(where, uid, request)  # type: ignore[arg-type]
                        catalog.pod_left(uid)
                        catalog.forget_pod(uid)
                    elif op == "forget":
                        catalog.forget_pod(uid)
                    else:  # the PV controller binds what was assumed
                        for item in catalog.by_pod.get(uid, ()):
                            if item.volume:
                                pv = catalog.volumes[item.volume]
                                ns, name = item.claim.split("/", 1)
                                catalog.upsert(dataclasses.replace(
                                    pv, claim_ref=ClaimRef(ns, name, ""), phase="Bound"))
                    a += 1
            elif op == "pv" and a < nodes:
                catalog.upsert(make_pv(f"pv-extra-{a:03}-{b}", f"{b}Gi", node=f"n{a:03}"))
            elif op == "unpv" and a < nodes:
                for name in [n for n in catalog.volumes if n.endswith(f"-{a:03}")
                             or f"-{a:03}-" in n]:
                    if catalog.claimed(catalog.volumes[name]) is None:
                        catalog.remove("PersistentVolume", name)
        return chosen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(120, 300), _OPS)
def test_a_carried_scan_with_volumes_chooses_what_a_fresh_scan_chooses(
        nodes: int, ops: list[Op]) -> None:
    assert _run(nodes, ops, fresh=False) == _run(nodes, ops, fresh=True)


def test_long_runs_with_volumes_choose_as_afresh_and_are_carried() -> None:
    """Runs of each kind, long enough to take the first hosts' volumes and go past the
    sample, with volumes confirmed, given back and added between them; most pods with
    one local claim or provisioned claims are placed from a scan carried over."""
    ops: list[Op] = []
    for kind in range(6):
        ops += [("place", kind, 0, 40), ("confirm", 3, 10, 0), ("forget", 11, 4, 0),
                ("pv", 7 + kind, 25, 0), ("release", 5, 3, 0), ("unpv", 40 + kind, 0, 0),
                ("place", kind, 1, 40)]
    carried: list[bool] = []
    original = core_carried.carry

    def counted(*args: object, **kwargs: object) -> object:
        found = original(*args, **kwargs)  # type: ignore[arg-type]
        carried.append(found is not None)
        return found

    core_carried.carry = counted  # type: ignore[assignment]
    try:
        kept = _run(240, ops, fresh=False)
    finally:
        core_carried.carry = original
    assert kept == _run(240, ops, fresh=True)
    assert sum(isinstance(where, str) for where in kept) > 300
    assert sum(carried) > 150


def test_the_digest_names_the_hosts_whose_local_volumes_changed() -> None:
    catalog = Cluster().volumes
    catalog.upsert(LOCAL)
    catalog.upsert(FAST)
    for host in ("a", "b", "c"):
        catalog.upsert(make_pv(f"pv-{host}", node=host))
    catalog.upsert(make_pvc("one"))
    catalog.upsert(make_pvc("two", storage_class=FAST.name))
    catalog.upsert(make_pvc("three"))
    claims = binding.Claims(delayed=(catalog.claims[claim_key("default", "one")],))
    before = binding.hosts_digest(catalog, claims)
    assert before is not None
    catalog.assume("p", (binding.Assumption(claim_key("default", "three"), "pv-b", "b"),))
    catalog.upsert(make_pv("pv-d", node="d"))
    after = binding.hosts_digest(catalog, claims)
    assert after is not None and after.changed_hosts(before) == {"b", "d"}
    # a claim provisioned everywhere: no host to judge again
    provisioned = binding.Claims(delayed=(catalog.claims[claim_key("default", "two")],))
    first = binding.hosts_digest(catalog, provisioned)
    catalog.upsert(make_pv("pv-e", node="e"))
    second = binding.hosts_digest(catalog, provisioned)
    assert first is not None and second is not None and second.changed_hosts(first) == set()
    # other claims, or a claim with an assumption of its own: nothing to carry
    assert after.changed_hosts(first) is None
    assumed = binding.Claims(delayed=(catalog.claims[claim_key("default", "one")],))
    catalog.assume("q", (binding.Assumption(claim_key("default", "one"), "", "a"),))
    assert binding.hosts_digest(catalog, assumed) is None
    # a volume that reaches more than its host: any node may change
    catalog.forget_pod("q")
    catalog.upsert(make_pv("pv-any"))
    assert binding.hosts_digest(catalog, claims) is None

"""The batch paths of placement give exactly the answers of the per-node paths they replace.

Placement judges nodes a run at a time and scores them in bulk. Each such path has a
per-node twin whose answer it must repeat exactly, whatever the cluster:

* a :class:`~gangsched.core.framework.interface.BatchFilterPlugin`'s ``filter_nodes`` is
  ``[n for n in nodes if filter(n).ok]``, in order, on any list of nodes (in any order);
* :func:`~gangsched.core.volumes.binding.match_nodes` keeps the nodes :func:`match` finds
  a plan for, also after volumes come, go, are released, bound or assumed (the hosts the
  catalogue keeps per claim follow);
* :meth:`Framework.score <gangsched.core.framework.runner.Framework.score>` scoring the
  usage scorers once per usage key equals scoring every node, and both equal the
  plugins' per-node ``score`` and ``normalize`` (as do ``score_nodes`` and
  ``score_normalized`` where a plugin has them);
* ``PodTopologySpread.score_nodes`` equals the per-node formula of its PreScore table,
  the tables PreScore writes and any table (weights that make halves show the rounding).

Clusters are drawn at random: 5 to 40 nodes in zones (some in none) with hostname labels
(some shared, some missing), placed pods with labels and required anti-affinity, local
PersistentVolumes, claims bound, pre-bound or assumed, provisioning classes with and
without ``allowedTopologies`` or tracked capacity, CSINodes with limits; pending pods with
their own spread constraints or the default ones, pod (anti-)affinity, and claims.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.framework.runner import Framework
from gangsched.core.placement.cluster import Cluster
from gangsched.core.plugins import podtopologyspread as pts
from gangsched.core.plugins.podtopologyspread import scoring as pts_scoring
from gangsched.core.values.constraints import ANY_NODE, Taint, TaintEffect
from gangsched.core.values.model import Node, Scoring
from gangsched.core.values.placement_terms import Placement, SpreadConstraint, WhenUnsatisfiable
from gangsched.core.values.profile import ProfileConfig
from gangsched.core.values.resources import Resources
from gangsched.core.values.selectors import LabelSelector
from gangsched.core.values.volume_specs import (
    BindingMode,
    ClaimRef,
    CSIDriver,
    PodClaim,
    PodVolumes,
    StorageClass,
    claim_key,
)
from gangsched.core.volumes import binding
from gangsched.core.volumes.catalog import Assumption, VolumeCatalog
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.core.plugins.conformance import info as translate
from tests.core.plugins.conformance import pod as k8s_pod
from tests.core.volume_builders import (
    FAST,
    IMMEDIATE,
    LOCAL,
    RWO,
    RWX,
    in_zones,
    make_capacity,
    make_csinode,
    make_pv,
    make_pvc,
    on_nodes,
    size,
)

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
KEYS = (HOST, ZONE)
ZONES = ("a", "b", "c")
APPS = ("web", "db", "cache")
CLAIMS = tuple(f"c{i}" for i in range(6))
CSI = "csi.example.com"
TRACKED = "tracked.example.com"
ZONAL = StorageClass("zonal", CSI, BindingMode.WAIT_FOR_FIRST_CONSUMER, in_zones("a", "b"))
CAPPED = StorageClass("capped", TRACKED, BindingMode.WAIT_FOR_FIRST_CONSUMER)
CLASSES = {c.name: c for c in (LOCAL, FAST, ZONAL, CAPPED, IMMEDIATE)}
PREFER_NOT = Taint("prefer", "not", TaintEffect.PREFER_NO_SCHEDULE)
IMAGE = "busybox:latest"  # the image of every pod conformance.pod writes

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --- what is drawn ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeSpec:
    zone: str | None
    host: str | None
    """The ``kubernetes.io/hostname`` label (None: none)."""
    cpu: int
    prefer_not: bool
    image: bool


@dataclass(frozen=True)
class PlacedSpec:
    node: int
    labels: tuple[tuple[str, str], ...]
    namespace: str
    cpu: str
    anti: tuple[str, str] | None
    """A required anti-affinity term: (topology key, the app it keeps away)."""
    preferred: tuple[str, str] | None
    claims: tuple[str, ...]
    terminating: bool


@dataclass(frozen=True)
class SpreadSpec:
    key: str
    when: str
    skew: int
    app: str | None
    """The app its selector matches; None: no labelSelector."""
    min_domains: int | None
    affinity_policy: str
    taints_policy: str


@dataclass(frozen=True)
class PendingSpec:
    labels: tuple[tuple[str, str], ...]
    namespace: str
    cpu: str
    spread: tuple[SpreadSpec, ...]
    by_default: bool
    """Owned by a ReplicaSet: the default constraints when it has none of its own."""
    affinity: tuple[tuple[str, str], ...]
    anti: tuple[tuple[str, str], ...]
    preferred: tuple[tuple[str, str, int], ...]
    """Preferred pod affinity terms (key, app, weight); a negative weight is anti."""
    zone_selector: str | None
    node_preferred: str | None
    tolerates: bool
    claims: tuple[str, ...]


@dataclass(frozen=True)
class PVSpec:
    storage_class: str
    where: tuple[str, ...] | str | None
    """Hostnames its affinity names, a zone, or None (any node)."""
    capacity: int
    block: bool
    rwx: bool
    tier: str | None
    phase: str
    terminating: bool


@dataclass(frozen=True)
class ClaimSpec:
    storage_class: str
    request: int
    block: bool
    rwx: bool
    tier: str | None
    selected: int | None
    """The node index named by the selected-node annotation."""


@dataclass(frozen=True)
class World:
    defaults: str
    """The profile's default spread: ``system``, or a ``List`` of :data:`LIST_DEFAULTS`."""
    nodes: tuple[NodeSpec, ...]
    placed: tuple[PlacedSpec, ...]
    volumes: tuple[PVSpec, ...]
    claims: tuple[ClaimSpec, ...]
    links: tuple[tuple[int, int, str], ...]
    """(claim, volume, how): ``bound``, ``ref`` (the PV's claimRef only), ``assumed``
    (the volume assumed for the claim), or ``provision`` (assumed to be provisioned on
    the node of index ``volume``)."""
    csinodes: tuple[tuple[int, int, int], ...]
    """(node, limit of csi.example.com, limit of tracked.example.com)."""
    capacities: tuple[tuple[str, int], ...]
    """CSIStorageCapacity of the capped class: (zone, GiB)."""
    tracked_csi: bool
    """Does csi.example.com track capacity too (then FAST and ZONAL depend on it)?"""
    pending: tuple[PendingSpec, ...]


maybe_app = st.sampled_from((None, *APPS))
labels_st = st.builds(
    lambda app, tier: tuple((k, v) for k, v in (("app", app), ("tier", tier)) if v),
    maybe_app, st.sampled_from((None, "x", "y")))
term_st = st.tuples(st.sampled_from(KEYS), st.sampled_from(APPS))
spread_st = st.builds(
    SpreadSpec,
    key=st.sampled_from(KEYS),
    when=st.sampled_from(("DoNotSchedule", "ScheduleAnyway")),
    skew=st.integers(1, 3),
    app=st.sampled_from((None, *APPS, *APPS)),
    min_domains=st.sampled_from((None, None, None, 2, 4)),
    affinity_policy=st.sampled_from(("Honor", "Honor", "Ignore")),
    taints_policy=st.sampled_from(("Ignore", "Ignore", "Honor")),
)


@st.composite
def worlds(draw: st.DrawFn, *, claims_always: bool = False) -> World:
    """A world; with ``claims_always`` every pending pod has claims."""
    count = draw(st.integers(5, 40))
    host_st = st.one_of(st.just("own"), st.just("own"), st.just("own"), st.none(),
                        st.integers(0, count - 1).map(lambda i: f"n{i:02d}"),
                        st.sampled_from(("shared-1", "shared-2")))
    nodes = []
    for i in range(count):
        host = draw(host_st)
        nodes.append(NodeSpec(
            zone=draw(st.sampled_from((None, *ZONES, *ZONES))),
            host=f"n{i:02d}" if host == "own" else host,
            cpu=draw(st.sampled_from((4, 8))),
            prefer_not=draw(st.integers(0, 7)) == 0,
            image=draw(st.integers(0, 9)) == 0))
    hosts = sorted({n.host for n in nodes if n.host is not None} | {"n99"})
    placed = draw(st.lists(st.builds(
        PlacedSpec,
        node=st.integers(0, count - 1),
        labels=labels_st,
        namespace=st.sampled_from(("default", "default", "other")),
        cpu=st.sampled_from(("500m", "1")),
        anti=st.one_of(st.none(), st.none(), st.none(), term_st),
        preferred=st.one_of(st.none(), st.none(), st.none(), st.none(), term_st),
        claims=st.lists(st.sampled_from(CLAIMS), max_size=2, unique=True).map(tuple),
        terminating=st.integers(0, 9).map(lambda n: n == 0),
    ), max_size=25))
    on_hosts = st.lists(st.sampled_from(hosts), min_size=1, max_size=2, unique=True).map(tuple)
    on_host = st.sampled_from(hosts).map(lambda h: (h,))
    elsewhere = st.one_of(st.sampled_from(ZONES), st.none())
    # Local volumes name their nodes (in some worlds one reaches a zone or any node: then
    # every node may have one); the provisioned class's reach anywhere.
    local_where = (st.one_of(on_host, on_host, on_hosts, elsewhere)
                   if draw(st.integers(0, 3)) == 0 else st.one_of(on_host, on_host, on_hosts))
    volumes = draw(st.lists(st.one_of(
        st.tuples(st.just("local"), local_where),
        st.tuples(st.just("local"), local_where),
        st.tuples(st.just("fast"), st.one_of(on_host, elsewhere)),
    ).flatmap(lambda cw: st.builds(
        PVSpec,
        storage_class=st.just(cw[0]),
        where=st.just(cw[1]),
        capacity=st.integers(1, 20),
        block=st.integers(0, 7).map(lambda n: n == 0),
        rwx=st.booleans(),
        tier=st.sampled_from((None, None, "gold", "silver")),
        phase=st.sampled_from(("Available", "Available", "Available", "", "Released")),
        terminating=st.integers(0, 11).map(lambda n: n == 0),
    )), max_size=24))
    claims = draw(st.lists(st.builds(
        ClaimSpec,
        storage_class=st.sampled_from(("local", "local", "local", "fast", "zonal", "capped",
                                       "standard")),
        request=st.integers(0, 12),
        block=st.integers(0, 7).map(lambda n: n == 0),
        rwx=st.integers(0, 3).map(lambda n: n == 0),
        tier=st.sampled_from((None, None, None, "gold", "silver")),
        selected=st.one_of(*(st.none(),) * 12, st.integers(0, count - 1)),
    ), min_size=len(CLAIMS), max_size=len(CLAIMS)))
    links = draw(st.lists(st.tuples(
        st.integers(0, len(CLAIMS) - 1), st.integers(0, max(len(volumes) - 1, 0)),
        st.sampled_from(("bound", "ref", "ref", "assumed", "provision", "provision"))),
        max_size=4))
    csinodes = draw(st.lists(st.tuples(st.integers(0, count - 1), st.integers(0, 2),
                                       st.integers(0, 2)), max_size=count))
    capacities = draw(st.lists(st.tuples(st.sampled_from(ZONES), st.integers(0, 20)),
                               max_size=3))
    pending = draw(st.lists(st.builds(
        PendingSpec,
        labels=labels_st,
        namespace=st.sampled_from(("default", "default", "default", "default", "other")),
        cpu=st.sampled_from(("500m", "1", "2")),
        spread=st.lists(spread_st, max_size=4).map(tuple),
        by_default=st.booleans(),
        affinity=st.lists(term_st, max_size=2).map(tuple),
        anti=st.lists(term_st, max_size=2).map(tuple),
        preferred=st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(APPS),
                                     st.sampled_from((-5, 3, 10))), max_size=2).map(tuple),
        zone_selector=st.sampled_from((None, None, None, *ZONES)),
        node_preferred=st.sampled_from((None, None, None, *ZONES)),
        tolerates=st.booleans(),
        claims=st.lists(st.sampled_from(CLAIMS), min_size=1, max_size=2, unique=True).map(
            tuple) if claims_always else st.sampled_from(((), ("c0",), ("c1", "c2"), ("c3",),
                                                           ("c4", "c0"), ("c5",))),
    ), min_size=1, max_size=4))
    return World(draw(st.sampled_from(("system", "system", "list1", "list3", "filtering"))),
                 tuple(nodes), tuple(placed), tuple(volumes), tuple(claims), tuple(links),
                 tuple(csinodes), tuple(capacities), draw(st.booleans()), tuple(pending))


# --- building the cluster --------------------------------------------------------------------


LIST_DEFAULTS = {
    "list1": (SpreadConstraint(1, ZONE, WhenUnsatisfiable.SCHEDULE_ANYWAY),),
    "list3": (SpreadConstraint(2, HOST, WhenUnsatisfiable.SCHEDULE_ANYWAY),
              SpreadConstraint(1, ZONE, WhenUnsatisfiable.SCHEDULE_ANYWAY),
              SpreadConstraint(3, ZONE, WhenUnsatisfiable.SCHEDULE_ANYWAY)),
    "filtering": (SpreadConstraint(2, ZONE, WhenUnsatisfiable.DO_NOT_SCHEDULE),
                  SpreadConstraint(1, HOST, WhenUnsatisfiable.SCHEDULE_ANYWAY)),
}


def node_name(i: int) -> str:
    return f"n{i:02d}"


def _volumes(claims: Sequence[str]) -> list[dict[str, Any]]:
    return [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(claims)]


def _term(key: str, app: str) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}


def placed_info(spec: PlacedSpec, index: int) -> PodInfo:
    pod_spec: dict[str, Any] = {}
    affinity: dict[str, Any] = {}
    if spec.anti is not None:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(*spec.anti)]}
    if spec.preferred is not None:
        affinity["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 4, "podAffinityTerm": _term(*spec.preferred)}]}
    if affinity:
        pod_spec["affinity"] = affinity
    if spec.claims:
        pod_spec["volumes"] = _volumes(spec.claims)
    return translate(k8s_pod(f"placed{index}", namespace=spec.namespace,
                             labels=dict(spec.labels), cpu=spec.cpu, memory="1Gi",
                             **pod_spec))


def pending_info(spec: PendingSpec, index: int) -> PodInfo:
    pod_spec: dict[str, Any] = {}
    if spec.spread:
        constraints = []
        for c in spec.spread:
            found: dict[str, Any] = {"maxSkew": c.skew, "topologyKey": c.key,
                                     "whenUnsatisfiable": c.when,
                                     "nodeAffinityPolicy": c.affinity_policy,
                                     "nodeTaintsPolicy": c.taints_policy}
            if c.app is not None:
                found["labelSelector"] = {"matchLabels": {"app": c.app}}
            if c.min_domains is not None and c.when == "DoNotSchedule":
                found["minDomains"] = c.min_domains
            constraints.append(found)
        pod_spec["topologySpreadConstraints"] = constraints
    affinity: dict[str, Any] = {}
    if spec.affinity:
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(*t) for t in spec.affinity]}
    liked = [p for p in spec.preferred if p[2] > 0]
    if liked:
        affinity.setdefault("podAffinity", {})[
            "preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "podAffinityTerm": _term(k, a)} for k, a, w in liked]
    if spec.anti:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(*t) for t in spec.anti]}
    disliked = [p for p in spec.preferred if p[2] < 0]
    if disliked:
        affinity.setdefault("podAntiAffinity", {})[
            "preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": -w, "podAffinityTerm": _term(k, a)} for k, a, w in disliked]
    if spec.node_preferred is not None:
        affinity["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [
                {"key": ZONE, "operator": "In", "values": [spec.node_preferred]}]}}]}
    if affinity:
        pod_spec["affinity"] = affinity
    if spec.zone_selector is not None:
        pod_spec["nodeSelector"] = {ZONE: spec.zone_selector}
    if spec.tolerates:
        pod_spec["tolerations"] = [{"key": "prefer", "operator": "Exists"}]
    if spec.claims:
        pod_spec["volumes"] = _volumes(spec.claims)
    obj = k8s_pod(f"pending{index}", namespace=spec.namespace, labels=dict(spec.labels),
                  cpu=spec.cpu, memory="1Gi", **pod_spec)
    if spec.by_default:
        obj["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                               "name": "rs", "uid": "rs-uid",
                                               "controller": True}]
    return translate(obj)


def build(world: World) -> tuple[Cluster, list[PodInfo]]:
    """The cluster the world describes, and its pending pods."""
    profile = ProfileConfig()
    if world.defaults != "system":
        profile = ProfileConfig(args=((pts.NAME, pts.SpreadArgs(
            pts.Defaulting.LIST, LIST_DEFAULTS[world.defaults])),))
    cluster = Cluster(profile=profile)
    for i, spec in enumerate(world.nodes):
        labels = {}
        if spec.host is not None:
            labels[HOST] = spec.host
        if spec.zone is not None:
            labels[ZONE] = spec.zone
        cluster.upsert_node(Node(
            node_name(i), Resources.from_k8s({"cpu": spec.cpu, "memory": "16Gi", "pods": 110}),
            labels, (PREFER_NOT,) if spec.prefer_not else (),
            images={IMAGE: 300 * 1024 * 1024} if spec.image else {}))
    catalog = cluster.volumes
    for obj in (*CLASSES.values(), CSIDriver(TRACKED, storage_capacity=True),
                CSIDriver(CSI, storage_capacity=world.tracked_csi)):
        catalog.upsert(obj)
    for n, (zone, gib) in enumerate(world.capacities):
        catalog.upsert(make_capacity(f"cap{n}", CAPPED.name, zone=zone, capacity=f"{gib}Gi"))
    if world.tracked_csi:
        catalog.upsert(make_capacity("csi-a", FAST.name, zone="a", capacity="8Gi"))
        catalog.upsert(make_capacity("csi-z", ZONAL.name, zone="b", capacity="20Gi"))
    for node, csi, tracked in world.csinodes:
        catalog.upsert(make_csinode(node_name(node % len(world.nodes)),
                                    **{CSI: csi, TRACKED: tracked}))
    pvs = []
    for n, spec in enumerate(world.volumes):
        pv = make_pv(f"pv{n}", f"{spec.capacity}Gi", storage_class=spec.storage_class,
                     modes=RWX if spec.rwx else RWO, phase=spec.phase,
                     labels={"tier": spec.tier} if spec.tier else {},
                     mode="Block" if spec.block else "Filesystem",
                     terminating=spec.terminating,
                     driver=CSI if spec.storage_class == "fast" else "")
        if isinstance(spec.where, tuple):
            pv = replace(pv, node_affinity=on_nodes(*spec.where))
        elif isinstance(spec.where, str):
            pv = replace(pv, node_affinity=in_zones(spec.where))
        else:
            pv = replace(pv, node_affinity=ANY_NODE)
        pvs.append(pv)
    pvcs = []
    for name, spec in zip(CLAIMS, world.claims, strict=True):
        pvcs.append(make_pvc(
            name, f"{spec.request}Gi", storage_class=spec.storage_class,
            modes=RWX if spec.rwx else RWO, mode="Block" if spec.block else "Filesystem",
            selector=LabelSelector.build({"tier": spec.tier}) if spec.tier else None,
            selected_node=node_name(spec.selected % len(world.nodes))
            if spec.selected is not None else ""))
    assumed: list[Assumption] = []
    for c, v, how in world.links:
        pvc = pvcs[c]
        if how == "provision":  # a claim assumed to be provisioned on some node
            assumed.append(Assumption(pvc.key, "", node_name(v % len(world.nodes))))
            continue
        if not pvs:
            continue
        pv = pvs[v % len(pvs)]
        if how == "assumed":
            assumed.append(Assumption(pvc.key, pv.name, node_name(c % len(world.nodes))))
            continue
        pvs[v % len(pvs)] = replace(pv, claim_ref=ClaimRef("default", pvc.name, ""),
                                    phase="Bound" if how == "bound" else pv.phase)
        if how == "bound":
            pvcs[c] = replace(pvc, volume_name=pv.name, phase="Bound")
    for obj in (*pvs, *pvcs):
        catalog.upsert(obj)
    # Each assumption by a pod of its own (an assumption per claim, as placement makes).
    for n, item in enumerate({a.claim: a for a in assumed}.values()):
        catalog.assume(f"assumer{n}", (item,))
    for n, spec in enumerate(world.placed):
        p = placed_info(spec, n)
        where = node_name(spec.node % len(world.nodes))
        cluster.charge(where, p.uid, p.request,
                       PlacedPod(p.uid, p.namespace, p.labels, p.placement, where,
                                 spec.terminating, p.nonzero))
        catalog.pod_placed(p.uid, p.namespace, p.volumes, where)
    return cluster, [pending_info(spec, n) for n, spec in enumerate(world.pending)]


def names(nodes: Sequence[NodeState]) -> list[str]:
    return [n.node.name for n in nodes]


def sub_list(nodes: Sequence[NodeState], picks: Sequence[int]) -> list[NodeState]:
    """The nodes at ``picks`` (indexes taken modulo, once each), in the order picked."""
    chosen = dict.fromkeys(p % len(nodes) for p in picks)
    return [nodes[i] for i in chosen]


picks_st = st.lists(st.integers(0, 39), max_size=40)

SCORINGS = (Scoring.BINPACK, Scoring.SPREAD)


def cycles(cluster: Cluster, pending: Sequence[PodInfo]
           ) -> Iterator[tuple[PodInfo, Framework, fw.CycleState]]:
    """Each pending pod under each scoring, with its cycle state, when PreFilter lets
    it through."""
    for info in pending:
        for scoring in SCORINGS:
            fwk = cluster.framework(scoring)
            cycle, status = fwk.pre_filter(info, cluster)
            if not status.ok:
                event(f"pre_filter refused: {status.plugin}")
                continue
            yield info, fwk, cycle


# --- 1. batch filters ------------------------------------------------------------------------


def check_batch(plugin: fw.FilterPlugin, batch: fw.BatchFilter, cycle: fw.CycleState,
                info: PodInfo, nodes: list[NodeState]) -> None:
    given_nodes = list(nodes)
    expected = [n for n in nodes if plugin.filter(cycle, info, n).ok]
    got = batch(cycle, info, nodes)
    assert nodes == given_nodes, f"{plugin.name}.filter_nodes changed the list it was given"
    assert names(got) == names(expected), (
        f"{plugin.name}: batch kept {names(got)}, per node {names(expected)} "
        f"(of {names(nodes)})")
    assert all(a is b for a, b in zip(got, expected, strict=True))
    if 0 < len(expected) < len(nodes):
        event(f"{plugin.name}: some nodes kept, some not")


@settings(SETTINGS, max_examples=80)
@given(worlds(), picks_st)
def test_batch_filters_keep_exactly_the_nodes_their_filter_passes(
        world: World, picks: list[int]) -> None:
    cluster, pending = build(world)
    nodes = list(cluster.sorted_nodes())
    some = sub_list(nodes, picks)
    for info, _, cycle in cycles(cluster, pending):
        for plugin, batch in cycle.scan:
            if batch is None:
                continue
            check_batch(plugin, batch, cycle, info, nodes)
            check_batch(plugin, batch, cycle, info, some)
            check_batch(plugin, batch, cycle, info, some[::-1])


# --- 2. volume matching ----------------------------------------------------------------------


# A change to the volumes between two questions: (kind, which volume, which claim or
# node, a size in GiB). Only changes placement and the API make: a volume is assumed or
# bound only while free, for a claim that has none. Most pick among the free volumes,
# whose changes move the hosts a claim's nodes are.
volume_changes = st.lists(st.tuples(
    st.sampled_from(("add", "add", "release", "reopen", "bind", "assume", "forget", "remove",
                     "terminate", "resize")),
    st.integers(0, 40), st.integers(0, 40), st.integers(1, 20)), max_size=8)


def change_volumes(catalog: VolumeCatalog, world: World, step: int,
                   change: tuple[str, int, int, int]) -> None:
    kind, a, b, gib = change
    if kind == "add":
        hosts = sorted({n.host for n in world.nodes if n.host is not None})
        if hosts:
            catalog.upsert(make_pv(f"new{step}", f"{gib}Gi", node=hosts[a % len(hosts)],
                                   modes=RWO if b % 3 == 0 else RWX,
                                   labels={"tier": "gold"} if b % 4 == 0 else {}))
        return
    if kind == "forget":
        catalog.forget_pod(f"assumer{a % 4}" if b % 2 else f"changer{a % (step + 1)}")
        return
    free = sorted(name for name, pv in catalog.volumes.items()
                  if catalog.claimed(pv) is None and pv.phase in ("Available", ""))
    if kind == "reopen":
        free = sorted(name for name, pv in catalog.volumes.items() if pv.phase == "Released")
    if kind == "remove":
        free = sorted(catalog.volumes)
    if not free:
        return
    pv = catalog.volumes[free[a % len(free)]]
    claim = catalog.claims[claim_key("default", CLAIMS[b % len(CLAIMS)])]
    unclaimed = (not claim.volume_name and claim.key not in catalog.claim_refs
                 and claim.key not in catalog.assumed_claim)
    if kind == "release":
        catalog.upsert(replace(pv, phase="Released"))
    elif kind == "reopen":
        catalog.upsert(replace(pv, phase="Available"))
    elif kind == "bind" and unclaimed:
        catalog.upsert(replace(pv, claim_ref=ClaimRef("default", claim.name, ""),
                               phase="Bound"))
    elif kind == "assume" and unclaimed:
        catalog.assume(f"changer{step}", (Assumption(claim.key, pv.name,
                                                     node_name(b % len(world.nodes))),))
    elif kind == "remove":
        catalog.remove("PersistentVolume", pv.name)
    elif kind == "terminate":
        catalog.upsert(replace(pv, terminating=True))
    elif kind == "resize":
        catalog.upsert(replace(pv, capacity=size(f"{gib}Gi")))


def check_match_nodes(catalog: VolumeCatalog, pending: Sequence[PodInfo],
                      states: list[NodeState], picks: list[int]) -> None:
    for info in pending:
        if not info.volumes.claims:
            continue
        claims = binding.prefilter(catalog, info.namespace, info.volumes)
        if isinstance(claims, binding.Blocked):
            event("prefilter blocked")
            continue
        for nodes in (states, sub_list(states, picks), sub_list(states, picks)[::-1]):
            expected = [n for n in nodes if binding.match(catalog, claims, n.node)[0] is None]
            got = binding.match_nodes(catalog, claims, list(nodes), _node_of)
            assert names(got) == names(expected), (claims, names(nodes))
            plain = [n.node for n in nodes]
            assert binding.match_nodes(catalog, claims, plain, _same) == [
                n.node for n in expected]
            if 0 < len(expected) < len(nodes):
                event("match_nodes: some nodes kept, some not")


@settings(SETTINGS, max_examples=150)
@given(worlds(claims_always=True), picks_st, volume_changes)
def test_match_nodes_keeps_exactly_the_nodes_match_finds_a_plan_for(
        world: World, picks: list[int], changes: list[tuple[str, int, int, int]]) -> None:
    """Also after the volumes change (what the catalogue keeps per claim must follow).
    Besides the pending pods, a pod with each claim alone is asked about."""
    cluster, pending = build(world)
    pending += [PodInfo(Resources.ZERO, namespace="default", name=f"alone-{name}",
                        volumes=PodVolumes((PodClaim(name),))) for name in CLAIMS]
    catalog = cluster.volumes
    states = list(cluster.sorted_nodes())
    check_match_nodes(catalog, pending, states, picks)
    for step, change in enumerate(changes):
        change_volumes(catalog, world, step, change)
        check_match_nodes(catalog, pending, states, picks)


def _node_of(state: NodeState) -> Node:
    return state.node


def _same(node: Node) -> Node:
    return node


# --- 3. scoring by usage key -----------------------------------------------------------------


def per_node_scores(cycle: fw.CycleState, info: PodInfo,
                    nodes: Sequence[NodeState]) -> list[int]:
    """What scoring every node one by one gives: each scorer's ``score`` per node, its
    ``normalize``, weighted (a lone scorer unweighted, as ``Framework.score`` does)."""
    totals = [0] * len(nodes)
    for plugin, weight in cycle.scorers:
        scores = [plugin.score(cycle, info, n) for n in nodes]
        plugin.normalize(cycle, info, scores)
        if len(cycle.scorers) == 1:
            return scores
        totals = [t + s * weight for t, s in zip(totals, scores, strict=True)]
    return totals


def feasible(fwk: Framework, cycle: fw.CycleState, info: PodInfo,
             nodes: Sequence[NodeState]) -> list[NodeState]:
    return [n for n in nodes if fwk.static_filter(info, n).ok
            and fwk.filter(cycle, info, n).ok]


@SETTINGS
@given(worlds(), picks_st)
def test_scoring_once_per_usage_key_equals_scoring_every_node(
        world: World, picks: list[int]) -> None:
    cluster, pending = build(world)
    every = list(cluster.sorted_nodes())
    for info, fwk, cycle in cycles(cluster, pending):
        for nodes in (feasible(fwk, cycle, info, every), sub_list(every, picks)):
            if not nodes:
                continue
            fwk.pre_score(cycle, info, cluster, nodes)
            by_usage = cycle.usage_scorers
            got = fwk.score(cycle, info, nodes)
            cycle.usage_scorers = frozenset()
            every_node = fwk.score(cycle, info, nodes)
            cycle.usage_scorers = by_usage
            assert got == every_node, (sorted(by_usage), names(nodes))
            assert got == per_node_scores(cycle, info, nodes), names(nodes)
            for plugin, _ in cycle.scorers:
                one_by_one = [plugin.score(cycle, info, n) for n in nodes]
                if isinstance(plugin, fw.BatchScorePlugin):
                    assert plugin.score_nodes(cycle, info, nodes) == one_by_one, plugin.name
                if isinstance(plugin, fw.NormalizedScorePlugin):
                    plugin.normalize(cycle, info, one_by_one)
                    assert plugin.score_normalized(cycle, info, nodes) == one_by_one, (
                        plugin.name)
            keys = {n.usage_key for n in nodes}
            if by_usage and len(keys) < len(nodes):
                event("scored once per usage key, fewer keys than nodes")
            check_scores_by_orders(fwk, cycle, info, cluster, nodes)


def check_scores_by_orders(fwk: Framework, cycle: fw.CycleState, info: PodInfo,
                           cluster: Cluster, nodes: Sequence[NodeState]) -> None:
    """Scoring the nodes in order with their orders and usage keys known (as a
    bin-packing scan knows them): the scores of every node one by one. Spread reads the
    labels from its columns, and sums per value where it can (whatever the number of
    values: the share that makes it fall back to lists is set aside)."""
    ordered = sorted(nodes, key=lambda n: n.order)
    spread = fwk.plugin(pts.NAME)
    assert isinstance(spread, pts.PodTopologySpread)
    for ratio in (pts_scoring.BY_VALUE_RATIO, 0):
        cycle.orders = [n.order for n in ordered]
        cycle.usage_keys = [n.usage_key for n in ordered]
        kept, pts_scoring.BY_VALUE_RATIO = pts_scoring.BY_VALUE_RATIO, ratio
        try:
            fwk.pre_score(cycle, info, cluster, ordered)
            got = fwk.score(cycle, info, ordered)
            by_value = spread._by_value(cycle, ordered, 1)
        finally:
            pts_scoring.BY_VALUE_RATIO = kept
            cycle.orders = cycle.usage_keys = None
        assert got == per_node_scores(cycle, info, ordered), names(ordered)
        if by_value is not None:
            event(f"spread scored by value ({ratio})")


# --- 4. PodTopologySpread's score ------------------------------------------------------------


def spread_reference(table: tuple[tuple[str, ...], list[tuple[SpreadConstraint,
                                                               dict[str, int], float]]],
                     nodes: Sequence[NodeState]) -> list[int]:
    """The per-node formula: per constraint whose key the node has, ``count * weight +
    maxSkew - 1`` added in constraint order from 0.0, rounded as Go rounds; -1 for a
    node lacking one of the keys every node must have."""
    keys, tables = table
    found = []
    for n in nodes:
        if keys and not all(k in n.labels for k in keys):
            found.append(-1)
            continue
        total = 0.0
        for c, counts, weight in tables:
            value = n.labels.get(c.topology_key)
            if value is not None:
                # kube-scheduler's scoreForCount: float64(cnt)*weight + float64(maxSkew-1)
                total += counts.get(value, 0) * weight + (c.max_skew - 1)
        found.append(go_round(total))
    return found


def go_round(value: float) -> int:
    """Go's ``math.Round``: half away from zero."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


@SETTINGS
@given(worlds(), picks_st)
def test_spread_score_nodes_equals_the_per_node_formula(
        world: World, picks: list[int]) -> None:
    cluster, pending = build(world)
    every = list(cluster.sorted_nodes())
    for info, fwk, cycle in cycles(cluster, pending):
        spread = fwk.plugin(pts.NAME)
        assert isinstance(spread, pts.PodTopologySpread)
        nodes = sub_list(every, picks) or every
        if spread.pre_score(cycle, info, cluster, nodes).code is fw.Code.SKIP:
            continue
        table = cycle.read(pts.NAME + "/score")
        assert isinstance(table, tuple)
        event(f"spread scored with {len(table[1])} constraint(s)")
        for judged in (nodes, every, every[::-1]):
            assert spread.score_nodes(cycle, info, judged) == spread_reference(
                table, judged), names(judged)


RACK = "rack"
table_key = st.sampled_from((HOST, ZONE, RACK))
domains = st.sampled_from(("a", "b", "c", "n00", "n01"))


@st.composite
def spread_tables(draw: st.DrawFn) -> tuple[tuple[str, ...], list[tuple[SpreadConstraint,
                                                                        dict[str, int], float]]]:
    """A PreScore table of any shape: 1 to 4 constraints, counts per domain, weights
    that make halves (0.5, 1.5, 2.5) as well as logarithms; keys required or not."""
    tables = []
    for _ in range(draw(st.integers(1, 4))):
        c = SpreadConstraint(draw(st.integers(1, 3)), draw(table_key),
                             WhenUnsatisfiable.SCHEDULE_ANYWAY)
        counts = draw(st.dictionaries(domains, st.integers(0, 6), max_size=4))
        weight = draw(st.sampled_from((0.5, 1.5, 2.5, math.log(2), math.log(3), math.log(5))))
        tables.append((c, counts, weight))
    every = sorted({c.topology_key for c, _, _ in tables})
    keys = tuple(every) if draw(st.booleans()) else ()
    return keys, tables


@SETTINGS
@given(spread_tables(), st.lists(st.dictionaries(table_key, domains, max_size=3), min_size=1,
                                 max_size=20))
def test_spread_score_nodes_equals_the_per_node_formula_on_any_table(
        table: tuple[tuple[str, ...], list[tuple[SpreadConstraint, dict[str, int], float]]],
        labels: list[dict[str, str]]) -> None:
    spread = pts.PodTopologySpread(pts.SpreadArgs())
    cycle = fw.CycleState()
    cycle.write(pts.NAME + "/score", table)
    nodes = [NodeState(Node(node_name(i), Resources.ZERO, lb)) for i, lb in enumerate(labels)]
    assert spread.score_nodes(cycle, PodInfo(Resources.ZERO), nodes) == spread_reference(
        table, nodes)


# --- what the reference itself must hold -----------------------------------------------------


def test_go_round_rounds_half_away_from_zero() -> None:
    assert [go_round(v) for v in (0.5, 1.5, 2.5, -0.5, -2.5, 2.4999)] == [1, 2, 3, -1, -3, 2]
    assert pts.go_round(2.5) == go_round(2.5)



def test_spread_by_value_leaves_out_a_value_whose_every_node_has_matching_pods() -> None:
    """Default spread, the nodes scored known by their orders. Zone a's two nodes each
    hold a matching pod, so both are scored one by one; zone b holds more matching pods,
    on a node not scored. The sum zone a's nodes would have without their pods (the
    lowest of all) is no node's: counted in the normalization, it would lower every
    score."""
    cluster = Cluster()
    for name, zone in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b"), ("b3", "b")):
        cluster.upsert_node(Node(name, Resources.from_k8s(
            {"cpu": "8", "memory": "16Gi", "pods": 110}), {HOST: name, ZONE: zone}))
    labels = (("app", "web"),)
    placement = Placement(labels=labels, default_spread=True)
    for n, where in enumerate(("a1", "a2", "b3", "b3", "b3")):
        uid = f"placed{n}"
        cluster.charge(where, uid, Resources.ZERO,
                       PlacedPod(uid, "default", dict(labels), placement, where))
    info = PodInfo.of(Resources.ZERO, placement=placement, namespace="default", uid="p")
    fwk = cluster.framework(Scoring.BINPACK)
    cycle, status = fwk.pre_filter(info, cluster)
    assert status.ok
    nodes = [n for n in cluster.sorted_nodes() if n.node.name != "b3"]
    cycle.orders = [n.order for n in nodes]
    cycle.usage_keys = [n.usage_key for n in nodes]
    kept, pts_scoring.BY_VALUE_RATIO = pts_scoring.BY_VALUE_RATIO, 0
    try:
        fwk.pre_score(cycle, info, cluster, nodes)
        spread = fwk.plugin(pts.NAME)
        assert isinstance(spread, pts.PodTopologySpread)
        by_value = spread._by_value(cycle, nodes, 1)
    finally:
        pts_scoring.BY_VALUE_RATIO = kept
    assert by_value is not None
    cycle.orders = cycle.usage_keys = None
    fwk.pre_score(cycle, info, cluster, nodes)
    one_by_one = [spread.score(cycle, info, n) for n in nodes]
    spread.normalize(cycle, info, one_by_one)
    assert by_value == one_by_one
    assert by_value[0] == by_value[1] < by_value[2] == by_value[3]  # a1, a2 below b1, b2

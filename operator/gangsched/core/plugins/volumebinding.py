"""VolumeBinding (PreFilter, Filter, Reserve/Unreserve, PreBind), as kube-scheduler v1.32.

The rules are in :mod:`gangsched.core.volumes.binding`: PreFilter refuses a pod whose
claim is missing, being deleted, Immediate and unbound, or bound to a missing PV, in
kube-scheduler's words (``persistentvolumeclaim "x" not found``); Filter wants every
bound claim's PV to reach the node and every unbound WaitForFirstConsumer claim to have
a static PV there (``FindMatchingVolume``) or a provisioner that may provision for it
(allowed topologies, published storage capacity: ``checkVolumeProvisions``). PreFilter
skips a pod without claims. When every claim is served by local volumes or
provisioned alike everywhere, the verdicts follow from the node's hostname alone, and
their digest (:func:`~gangsched.core.volumes.binding.hosts_digest`) lets a scan carried
over judge again only the hosts whose local volumes changed.

Reserve (assume the chosen bindings in the
:class:`~gangsched.core.volumes.catalog.VolumeCatalog`), Unreserve (give them back) and
PreBind (the writes, :class:`~gangsched.core.values.decisions.BindVolume` and
:class:`~gangsched.core.values.decisions.AnnotateClaim`, before the pod's Binding) are
carried out by the scheduler through :mod:`gangsched.core.placement.volume_assumptions`
once it takes the node; a pod's BindPod carries the writes, and the shell waits for the
claims to be bound before the Binding (:mod:`gangsched.shell.prebind`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.values.model import Node
from gangsched.core.volumes import binding
from gangsched.core.volumes.catalog import HOSTNAME, VolumeCatalog

NAME = "VolumeBinding"
_REJECT = fw.Rejections()


@dataclass(frozen=True, slots=True)
class _State:
    catalog: VolumeCatalog
    claims: binding.Claims
    snapshot: fw.Snapshot


class VolumeBinding:
    name = NAME
    static = False
    scan_cost = 90

    def pre_filter(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot) -> fw.Status:
        if not pod.volumes.claims:
            return fw.SKIP
        catalog = snapshot.volumes
        found = binding.prefilter(catalog, pod.namespace, pod.volumes)
        if isinstance(found, binding.Blocked):
            return fw.unresolvable(found.message)
        state.write(NAME, _State(catalog, found, snapshot))
        return fw.SUCCESS

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        found = state.read(NAME)
        if not isinstance(found, _State):
            return fw.SUCCESS
        reason, _ = binding.match(found.catalog, found.claims, node.node)
        return fw.SUCCESS if reason is None else _REJECT(reason)

    def filter_nodes(self, state: fw.CycleState, pod: PodInfo,
                     nodes: list[NodeState]) -> list[NodeState]:
        """:meth:`filter` over ``nodes`` (the costliest filter: a scan runs it last)."""
        found = state.read(NAME)
        if not isinstance(found, _State):
            return nodes
        return binding.match_nodes(found.catalog, found.claims, nodes, _node_of)

    def verdict_digest(self, state: fw.CycleState, pod: PodInfo) -> object:
        """When the verdicts follow from the node's hostname alone (each claim
        provisioned alike everywhere or served by local volumes): a
        :class:`~gangsched.core.volumes.binding.HostsDigest`; else NO_DIGEST."""
        found = state.read(NAME)
        if not isinstance(found, _State):
            return None
        digest = binding.hosts_digest(found.catalog, found.claims)
        return fw.NO_DIGEST if digest is None else digest

    def changed_domains(self, old: object, new: object) -> dict[str, set[str]] | None:
        """The hostnames whose local volumes changed between the two digests; None
        when the claims differ, the log was forgotten, or a volume names the empty
        hostname (which nodes without the label match as well)."""
        if not (isinstance(old, binding.HostsDigest) and isinstance(new, binding.HostsDigest)):
            return None
        hosts = new.changed_hosts(old)
        if hosts is None or "" in hosts:
            return None
        return {HOSTNAME: hosts} if hosts else {}

    def refused(self, state: fw.CycleState, pod: PodInfo) -> tuple[str, frozenset[str]] | None:
        return None

    def label_verdict(self, state: fw.CycleState,
                      pod: PodInfo) -> tuple[str, frozenset[str]] | None:
        return None

    # Reserve, Unreserve and PreBind stand at their extension points (a profile may list
    # or disable them as in kube-scheduler), but the work is done by the scheduler once it
    # takes the node (:mod:`gangsched.core.placement.volume_assumptions`): the assumption is
    # made for
    # the pod actually charged, and the writes ride on its BindPod, so that a gang's writes
    # all go before any of its Bindings (``BindGang``). Doing it here as well would assume
    # twice and write twice.

    def reserve(self, state: fw.CycleState, pod: PodInfo, node: str) -> fw.Status:
        return fw.SUCCESS

    def unreserve(self, state: fw.CycleState, pod: PodInfo, node: str) -> None:
        return None

    def pre_bind(self, state: fw.CycleState, pod: PodInfo, node: str) -> fw.Status:
        return fw.SUCCESS


_node_of: Callable[[NodeState], Node] = attrgetter("node")


def factory(args: object | None) -> VolumeBinding:
    return VolumeBinding()

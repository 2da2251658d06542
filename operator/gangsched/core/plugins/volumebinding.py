"""VolumeBinding (PreFilter, Filter, Reserve/Unreserve, PreBind), as kube-scheduler v1.32.

The rules are in :mod:`gangsched.core.volumes.binding`: PreFilter refuses a pod whose
claim is missing, being deleted, Immediate and unbound, or bound to a missing PV, in
kube-scheduler's words (``persistentvolumeclaim "x" not found``); Filter wants every
bound claim's PV to reach the node and every unbound WaitForFirstConsumer claim to have
a static PV or a provisioner there. Reserve assumes the chosen bindings in the
:class:`~gangsched.core.volumes.catalog.VolumeCatalog`, Unreserve gives them back,
PreBind adds their writes (:class:`~gangsched.core.decisions.BindVolume`,
:class:`~gangsched.core.decisions.AnnotateClaim`) to the cycle's decisions, before the
pod's Binding. PreFilter skips a pod without claims.

The scheduler's placement reserves through :mod:`gangsched.core.volumes.placing` with the
same functions once a node is chosen, and a pod's BindPod carries the writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.volumes import binding
from gangsched.core.volumes.catalog import VolumeCatalog

NAME = "VolumeBinding"


@dataclass(frozen=True, slots=True)
class _State:
    catalog: VolumeCatalog
    claims: binding.Claims
    snapshot: fw.Snapshot


class VolumeBinding:
    name = NAME
    static = False

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
        return fw.SUCCESS if reason is None else fw.unschedulable(reason)

    def reserve(self, state: fw.CycleState, pod: PodInfo, node: str) -> fw.Status:
        """Assume the bindings for ``node``; refuse when they no longer fit there (an
        earlier pod of the cycle took the volume)."""
        found = state.read(NAME)
        if not isinstance(found, _State) or not pod.uid:
            return fw.SUCCESS
        node_state = found.snapshot.node_state(node)
        if node_state is None:
            return fw.unschedulable(f'node "{node}" not found')
        reason, plan = binding.match(found.catalog, found.claims, node_state.node)
        if reason is not None:
            return fw.unschedulable(reason)
        found.catalog.assume(pod.uid, plan)
        return fw.SUCCESS

    def unreserve(self, state: fw.CycleState, pod: PodInfo, node: str) -> None:
        found = state.read(NAME)
        if isinstance(found, _State) and pod.uid:
            found.catalog.forget_pod(pod.uid)

    def pre_bind(self, state: fw.CycleState, pod: PodInfo, node: str) -> fw.Status:
        found = state.read(NAME)
        if isinstance(found, _State) and pod.uid:
            assumed = found.catalog.by_pod.get(pod.uid, ())
            state.decisions.extend(binding.writes(found.catalog, assumed))
        return fw.SUCCESS


def factory(args: object | None) -> VolumeBinding:
    return VolumeBinding()

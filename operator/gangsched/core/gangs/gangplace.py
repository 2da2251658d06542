"""Where a topology gang's members go: the hooks that reservation, PodGroups and
ordinary placement call.

A gang here is an Application's task group or a PodGroup (each PodGroup of a GangGroup
on its own); its topology is its :class:`~gangsched.core.values.model.TopologyRequest`, or,
for members with required pod affinity to one another, the required key that implies
(:func:`~gangsched.core.placement.domains.effective`). A gang asking for nothing costs one test.

* :func:`app_targets` (reservation) and :func:`group_targets` (PodGroups) plan the whole
  gang (:func:`~gangsched.core.placement.domain_search.plan`): the members to place now,
  then as many copies of the task group's template (or of the first pending member) as
  the minimum still lacks, so that the domain chosen holds the whole minimum. Each member placed now
  gets the node the simulation gave it. The domain is derived from the members already
  holding room (placeholders, members held in memory or assumed, bound members), so it
  survives restarts and later cycles without being stored.
* :func:`fit_alone` places one member on its own (a member recreated, one placed after
  its gang was satisfied, one whose placeholder's node did not take it) inside the
  domain its gang's placed members share.

A refusal is kept per gang until capacity is freed, a node changes, or (for members
whose fit depends on other pods) a pod is placed or goes: a waiting gang costs one
lookup per cycle, not a simulation per domain.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gangsched.core.framework.podinfo import Constraints, PodInfo
from gangsched.core.placement import domain_search as topology
from gangsched.core.placement import domains
from gangsched.core.placement.cluster import ONE_POD
from gangsched.core.placement.domain_search import Plan, Refusal
from gangsched.core.values.model import Scoring, TopologyRequest
from gangsched.core.values.volume_specs import placeholder_volumes

if TYPE_CHECKING:
    from gangsched.core.placement.diagnosis import Diagnosis
    from gangsched.core.state.records import AppRuntime, GroupRuntime, PodState
    from gangsched.core.state.session import Session
    from gangsched.core.values.model import PodUID


@dataclass(slots=True)
class _Gang:
    """One gang of a :class:`Targets`: what to plan, and how to find its placed members."""

    asked: TopologyRequest
    key: str
    """What its refusals are kept under."""
    members: list[PodState]
    """The members to place in this pass, in order."""
    placed: Callable[[], list[str]]
    """The nodes of its members holding room now."""
    minimum: int
    template: PodInfo | None
    """The shape of the members that do not exist yet (None: the first member's)."""
    planned: bool = False


@dataclass(slots=True)
class Targets:
    """The topology gangs of one pass (an Application's task groups, or one PodGroup),
    each planned when its first member is placed (so that a gang planned after another
    of the same pass sees the room the other took), and planned again once if a member
    no longer fits the node planned for it."""

    gangs: dict[str, _Gang] = field(default_factory=dict)
    nodes: dict[str, str] = field(default_factory=dict)
    """Node by member uid."""
    refused: dict[str, Refusal] = field(default_factory=dict)
    """Refusal by task group name (Applications) or PodGroup key."""
    domains: dict[str, domains.Domain] = field(default_factory=dict)
    """The domain chosen, by task group name or PodGroup key."""

    def fit(self, s: Session, ps: PodState, gang: str) -> str | Refusal | None:
        """The node planned for ``ps`` if it fits there, the gang's refusal, or None
        when ``ps`` is placed as usual (no topology, or the plan says anywhere)."""
        found = self.gangs.get(gang)
        if found is None:
            return None
        if not found.planned:
            self._plan(s, gang, found)
        for attempt in (0, 1):
            refusal = self.refused.get(gang)
            if refusal is not None:
                return refusal
            node = self.nodes.get(ps.uid)
            if node is None:
                return None
            if s.cluster.fits(node, ps.request, ps.constraints, pod=ps.info):
                return node
            if attempt == 0:
                self._plan(s, gang, found)
        where = self.domains.get(gang)
        return Refusal(f"no longer fits on node {node} of its gang's domain {where}",
                       ((str(where), f"node {node} no longer takes it"),))

    def refusals(self, s: Session) -> dict[str, Refusal]:
        """The refused gangs, each gang planned first if none of its members asked
        (no member to place yet, or all in backoff): a gang whose placeholders are yet
        to come says at once that no domain holds it."""
        for gang, found in self.gangs.items():
            if not found.planned:
                self._plan(s, gang, found)
        return dict(self.refused)

    def _plan(self, s: Session, gang: str, found: _Gang) -> None:
        found.planned = True
        here = [ps for ps in found.members if ps.node is None]
        placed = found.placed()
        infos = [ps.info for ps in here]
        short = found.minimum - len(placed) - len(infos)
        if short > 0 and (found.template is not None or infos):
            shape = found.template or infos[0]
            infos.extend(_copy(shape, i) for i in range(short))
        result = _plan(s, found.key, found.asked, infos, placed, s.config.gang_scoring)
        self.refused.pop(gang, None)
        self.domains.pop(gang, None)
        for ps in found.members:
            self.nodes.pop(ps.uid, None)
        if isinstance(result, Refusal):
            self.refused[gang] = result
            return
        if result.domain is not None:
            self.domains[gang] = result.domain
        for ps, node in zip(here, result.nodes, strict=False):
            if node is not None:
                self.nodes[ps.uid] = node


def _placed(s: Session, uids: Iterable[PodUID], match: str | None) -> list[str]:
    """Nodes of the members in ``uids`` holding room (of task group ``match`` when
    given), in name order of the pods."""
    found: list[tuple[str, str]] = []
    for uid in uids:
        ps = s.pods.get(uid)
        if ps is None or ps.node is None or not ps.pod.active or ps.release_reason is not None:
            continue
        if match is not None and ps.pod.task_group != match:
            continue
        found.append((ps.pod.name, ps.node))
    return [node for _, node in sorted(found)]


def _plan(s: Session, key: str, asked: TopologyRequest, members: list[PodInfo],
          placed: list[str], scoring: Scoring) -> Plan | Refusal:
    """:func:`topology.plan`, with refusals kept per gang (see the module docstring)."""
    cluster = s.cluster
    neighbours = any(cluster.neighbour_bound(info) for info in members[:1])
    stamp = (asked, tuple(placed), len(members), members[0].request if members else None,
             cluster.free_epoch, cluster.node_epoch, cluster.reserved,
             cluster.pod_index.epoch if neighbours else -1)
    kept = cluster.domains.refusals.get(key)
    if kept is not None and kept[0] == stamp and isinstance(kept[1], Refusal):
        return kept[1]
    found = topology.plan(cluster, asked, members, placed, scoring)
    if isinstance(found, Refusal):
        if len(cluster.domains.refusals) >= 4096:
            cluster.domains.refusals.clear()
        cluster.domains.refusals[key] = (stamp, found)
    else:
        cluster.domains.refusals.pop(key, None)
    return found


def app_targets(s: Session, rt: AppRuntime, members: list[PodState]) -> Targets | None:
    """The task groups of ``rt`` that ask for a topology, to be planned as their members
    are placed: ``members`` are the pods about to be placed (held members then
    placeholders, in that order). None when no task group asks for one."""
    spec = rt.spec
    targets: Targets | None = None
    for group in spec.task_groups:
        if group.topology.empty and not group.placement.affinity:
            continue
        asked = domains.effective(group.topology, group.placement, spec.namespace)
        if asked.empty:
            continue
        targets = targets or Targets()
        template = PodInfo.of(group.min_resource + ONE_POD, Constraints.of_group(group),
                              group.placement, namespace=spec.namespace, owner=spec.key)
        if group.claims:  # each placeholder to come holds devices for its member
            template = dataclasses.replace(template, volumes=placeholder_volumes(
                f"{group.name}-to-come", group.claims))
        uids = s.app_members.get(spec.key, set())
        targets.gangs[group.name] = _Gang(
            asked, f"{spec.key}/{group.name}",
            [ps for ps in members if ps.pod.task_group == group.name],
            functools.partial(_placed, s, uids, group.name), group.min_member, template)
    return targets


def group_targets(s: Session, g: GroupRuntime, pending: list[PodState]) -> Targets | None:
    """PodGroup ``g`` when it asks for a topology, to be planned as its ``pending``
    members (in placement order) are placed; None when it does not."""
    spec = g.spec
    first = pending[0].pod if pending else None
    placement = first.placement if first is not None else None
    if spec.topology.empty and (placement is None or not placement.affinity):
        return None
    asked = (domains.effective(spec.topology, placement, spec.namespace)
             if placement is not None else spec.topology)
    if asked.empty:
        return None
    uids = s.group_members.get(spec.key, set())
    targets = Targets()
    targets.gangs[str(spec.key)] = _Gang(
        asked, str(spec.key), [ps for ps in pending if not ps.pod.invalid],
        functools.partial(_placed, s, uids, None), spec.min_member, None)
    return targets


def _copy(info: PodInfo, index: int) -> PodInfo:
    """A member not created yet, shaped as ``info`` (no uid: the simulation names it)."""
    return PodInfo(info.request, info.constraints, info.placement, info.namespace,
                   f"{info.name}-to-come-{index}", "", info.owner, info.labels, info.volumes)


def fit_alone(s: Session, ps: PodState, scoring: Scoring,
              judged: bool) -> str | Diagnosis | Refusal:
    """Where ``ps`` goes on its own: inside its gang's domain when its gang asks for a
    topology (derived from the gang's placed members; none placed: anywhere the request
    allows), else as :meth:`~gangsched.core.placement.cluster.Cluster.fit` says."""
    asked, key, placed = _gang_of(s, ps)
    if asked is not None and not asked.empty:
        found = _plan(s, f"{key}/{ps.uid}", asked, [ps.info], placed, scoring)
        if isinstance(found, Refusal):
            return found
        node = found.nodes[0] if found.nodes else None
        if node is not None:
            return node
    return s.cluster.fit(ps.info, scoring, judged=judged)


def _gang_of(s: Session, ps: PodState) -> tuple[TopologyRequest | None, str, list[str]]:
    """The topology ``ps``'s gang asks for, its key, and its members' nodes."""
    pod = ps.pod
    if pod.app is not None:
        rt = s.apps.get(pod.app)
        group = rt.spec.group(pod.task_group) if rt is not None else None
        if rt is None or group is None:
            return None, "", []
        if group.topology.empty and not group.placement.affinity:
            return None, "", []
        asked = domains.effective(group.topology, group.placement, rt.spec.namespace)
        members = (u for u in s.app_members.get(pod.app, ()) if u != ps.uid)
        return asked, f"{pod.app}/{group.name}", _placed(s, members, group.name)
    if pod.pod_group is not None:
        g = s.groups.get(pod.pod_group)
        if g is None or (g.spec.topology.empty and not pod.placement.affinity):
            return None, "", []
        asked = domains.effective(g.spec.topology, pod.placement, g.spec.namespace)
        members = (u for u in s.group_members.get(pod.pod_group, ()) if u != ps.uid)
        return asked, str(pod.pod_group), _placed(s, members, None)
    return None, "", []

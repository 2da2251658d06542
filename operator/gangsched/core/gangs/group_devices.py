"""Devices for task groups: placeholders hold them, and a gang that can never have them
waits holding nothing.

A task group says which resource claims its members will have (``TaskGroup.claims``,
the shape of a pod's ``spec.resourceClaims``). Each placeholder of the group carries
them (``PodVolumes.held_claims`` and ``shared_claims``) and is placed with them like any
pod with claims: the DynamicResources plugin allocates the claims made from templates
on the placeholder's node, in memory, and the devices are taken for every other pod
from then on, exactly as its cpu and memory are (:mod:`gangsched.core.volumes.claims`).
Nothing is written to the cluster: the real member's own claims get devices when it
takes the placeholder's place (:mod:`gangsched.core.gangs.swap`).

After a restart a bound placeholder holds its devices again on its node
(:func:`hold_bound`), from its task group's claims: a placeholder observed before the
devices it needs (slices, classes, templates) is tried again, before anything is placed
in each cycle, whenever the devices changed (:func:`rehold`); one that cannot hold them
any more (the devices went to another pod meanwhile) says so in a Warning Event
``DevicesNotHeld`` and holds its cpu and memory only.

A gang is not admitted while a task group's claims can be allocated on no node at all,
even with every device free (:func:`allows`): the template does not exist, a request
names a DeviceClass that does not exist, no node has devices that match, a selector
fails. It then holds nothing, its task groups say ``Unschedulable`` with the claim and
the reason, and a Warning Event ``Unschedulable`` says it once per distinct reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gangsched.core.devices.allocator import Allocator
from gangsched.core.placement import volume_assumptions as volume_placing
from gangsched.core.state.records import AppRuntime, PodState
from gangsched.core.values.decisions import BlockingReason, EventType, ObjectRef
from gangsched.core.values.devices import ResourceClaim
from gangsched.core.values.model import TaskGroup
from gangsched.core.values.volume_specs import claim_key, held_claim_name
from gangsched.core.volumes import claims as resource_claims

if TYPE_CHECKING:
    from gangsched.core.state.session import Session

REASON = "Unschedulable"
NOT_HELD = "DevicesNotHeld"


def hold_bound(s: Session, ps: PodState, node: str) -> None:
    """Placeholder ``ps``, seen bound to ``node`` (after a restart), holds its task
    group's devices there again; if it cannot now, it is tried again in the cycles."""
    if not ps.pod.volumes.held_claims:
        return
    why = volume_placing.hold_claims(s.cluster, s.volumes, ps.uid, ps.pod, node)
    if why is not None:
        s.unheld.setdefault(ps.uid, -1)


def rehold(s: Session) -> None:
    """Try again to hold the devices of bound placeholders that hold none yet, once per
    change of the devices. The first failure in a cycle is said in a Warning Event."""
    if not s.unheld:
        return
    epoch = s.volumes.devices.epoch
    for uid, tried in list(s.unheld.items()):
        ps = s.pods.get(uid)
        if ps is None or ps.node is None or not ps.pod.volumes.held_claims:
            del s.unheld[uid]
            continue
        if tried == epoch:
            continue
        why = volume_placing.hold_claims(s.cluster, s.volumes, uid, ps.pod, ps.node)
        if why is None:
            del s.unheld[uid]
            continue
        s.unheld[uid] = s.volumes.devices.epoch
        if tried < 0:
            pod = ps.pod
            s.event(ObjectRef("Pod", pod.namespace, pod.name, pod.uid), EventType.WARNING,
                    NOT_HELD, f"placeholder {pod.name} on node {ps.node} cannot hold the "
                    f"devices of its task group's claims: {why}; it holds its cpu and "
                    "memory only")


def allows(s: Session, rt: AppRuntime) -> bool:
    """Can every task group of ``rt`` have its claims somewhere? If not, the gang is held
    with the reason (and nothing of it is placed)."""
    found = verdict(s, rt)
    if found is None:
        return True
    _, blocking = found
    changed = False
    for each in rt.spec.task_groups:
        if rt.blocking.get(each.name) != blocking:
            rt.blocking[each.name] = blocking
            changed = True
    if changed:
        rt.dirty = True
    if f"{REASON}:{blocking.message}" not in rt.warned:
        rt.warned.add(f"{REASON}:{blocking.message}")
        s.event(rt.ref, EventType.WARNING, REASON, blocking.message)
    return False


def verdict(s: Session, rt: AppRuntime) -> tuple[str, BlockingReason] | None:
    """(task group, why) for the first task group whose claims can be allocated on no
    node even with every device free; None when each may have them somewhere (or asks
    for none). Kept until the spec, the device inventory or the nodes change."""
    spec = rt.spec
    if not any(group.claims for group in spec.task_groups):
        return None
    devices = s.volumes.devices
    inputs = (spec, devices.inventory, s.volumes.resource_claims_served,
              s.cluster.node_epoch)
    kept = rt.device_verdict
    if kept is not None and kept[0] == inputs:
        return kept[1]
    found = None
    for group in spec.task_groups:
        why = _group_failure(s, spec.namespace, group)
        if why is not None:
            found = (group.name, BlockingReason(REASON, f"task group {group.name}: {why}",
                                                {"taskGroup": group.name}))
            break
    rt.device_verdict = (inputs, found)
    return found


def _group_failure(s: Session, namespace: str, group: TaskGroup) -> str | None:
    """Why a member of ``group`` can have its claims on no node; None when it can."""
    catalog = s.volumes
    if not group.claims or not s.cluster.nodes:
        return None
    if not catalog.resource_claims_served:
        return resource_claims.NOT_SERVED
    made: list[ResourceClaim] = []
    for claim in group.claims:
        if claim.claim:
            if claim_key(namespace, claim.claim) not in catalog.resource_claims:
                return f'claim "{claim.name}": resourceclaim "{claim.claim}" not found'
            continue
        one, why = resource_claims.held_claim(
            catalog, namespace, held_claim_name(f"task group {group.name}", claim.name),
            claim.template)
        if one is None:
            return why
        made.append(one)
    if not made:
        return None
    free = Allocator(catalog.devices, taken={})
    first = ""
    for state in s.cluster.nodes.values():
        reason = free.reason(state.node, made)
        if not reason:
            return None
        first = first or reason
    names = ", ".join(f'"{claim.name}"' for claim in group.claims if claim.template)
    nodes = len(s.cluster.nodes)
    return (f"claims {names} can be allocated on none of the {nodes} nodes, even with "
            f"every device free: {first or 'no node'}")

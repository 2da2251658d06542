"""The volume objects the core knows, the bindings it assumed, and who uses which claim.

Observed objects are kept as they were last seen (level-based). On top of them lie the
core's *assumptions* (kube-scheduler's assume cache): when a pod is placed, the static
PersistentVolume chosen for each of its unbound WaitForFirstConsumer claims is taken at
once, and a claim to provision is marked with its node, so that the next pod placed in
the same cycle (another member of the same gang, say) cannot take the same volume. An
assumption ends when the API shows it done (the PV's ``claimRef`` names the claim, the
claim is bound or carries the selected node), or when its pod's bind fails or the pod
goes (:meth:`VolumeCatalog.forget_pod`): then the volume is free again.

Usage: for every pod holding a node (bound or assumed) with claims or inline CSI volumes,
the claims and drivers it uses there: what ReadWriteOncePod conflicts and per-driver
volume limits are checked against.

``epoch`` grows on every change that may let a waiting pod fit: the scheduler retries
pods then.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Hashable, Iterator
from dataclasses import dataclass

from gangsched.core.devices.catalog import DeviceCatalog
from gangsched.core.values.constraints import NodeAffinity, SelectorOperator
from gangsched.core.values.volume_specs import (
    ClaimKey,
    ClaimRef,
    CSIDriver,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    PodVolumes,
    ResourceClaim,
    StorageCapacity,
    StorageClass,
    VolumeObject,
    claim_key,
)

HOSTNAME = "kubernetes.io/hostname"



@dataclass(frozen=True, slots=True)
class Assumption:
    """One claim of a placed pod: bound to ``volume`` (a static PV), or to be provisioned
    on ``node`` (``volume`` empty)."""

    claim: ClaimKey
    volume: str
    node: str


@dataclass(slots=True)
class _Serving:
    hosts: set[str]
    generation: int
    seen: int


@dataclass(slots=True)
class _Placed:
    node: str
    claims: tuple[ClaimKey, ...]
    inline: tuple[str, ...]


class VolumeCatalog:
    """All volume objects, the assumed bindings and the per-node usage."""

    def __init__(self) -> None:
        self.volumes: dict[str, PersistentVolume] = {}
        self.claims: dict[ClaimKey, PersistentVolumeClaim] = {}
        self.classes: dict[str, StorageClass] = {}
        self.csinodes: dict[str, CSINode] = {}
        self.csidrivers: dict[str, CSIDriver] = {}
        self.capacities: dict[ClaimKey, StorageCapacity] = {}
        """CSIStorageCapacity objects by ``namespace/name``."""
        self.resource_claims: dict[ClaimKey, ResourceClaim] = {}
        self.resource_claims_served = False
        """Whether the shell watches ResourceClaims (the resource.k8s.io API is served)."""
        self.devices = DeviceCatalog()
        """DeviceClasses, ResourceSlices and ResourceClaimTemplates."""
        self._index: dict[str, dict[str, dict[str, PersistentVolume]]] = {}
        """Volumes by ``storageClassName``, then by the hostname their node affinity names
        when that is all it says (local volumes), ``""`` for the others, then by name."""
        self._free: dict[str, dict[str, set[str]]] = {}
        """Class -> hostname -> the local volumes there that are free (no claimRef, not
        assumed, Available): nodes without one are skipped at once."""
        self.claim_refs: dict[ClaimKey, str] = {}
        """Claim -> the PV whose ``claimRef`` names it."""
        self.assumed_volume: dict[str, ClaimKey] = {}
        """PV name -> the claim the core assumed it bound to."""
        self.assumed_claim: dict[ClaimKey, Assumption] = {}
        self.by_pod: dict[str, tuple[Assumption, ...]] = {}
        self._placed: dict[str, _Placed] = {}
        self.users: dict[ClaimKey, set[str]] = {}
        """Claim -> uids of the pods using it on a node."""
        self.node_claims: dict[str, dict[ClaimKey, int]] = {}
        self.node_inline: dict[str, dict[str, int]] = {}
        self.epoch = 0
        self._changed_hosts: list[tuple[str, str]] = []
        """(class, hostname) of the local volumes whose freedom or fields may have
        changed, in order (forgotten past a length: then ``_generation`` moves)."""
        self._generation = 0
        self._serving: dict[tuple[str, Hashable], _Serving] = {}

    # --- observed objects ---------------------------------------------------------------

    def upsert(self, obj: VolumeObject) -> None:
        """Record the latest version of an object; confirm assumptions it shows done."""
        self.epoch += 1
        if isinstance(obj, PersistentVolume):
            old = self.volumes.get(obj.name)
            if old is not None:
                self._unindex(old)
            self.volumes[obj.name] = obj
            self._add_index(obj)
            assumed = self.assumed_volume.get(obj.name)
            if assumed is not None and obj.claim_ref is not None:
                self._confirm(assumed)
        elif isinstance(obj, PersistentVolumeClaim):
            self.claims[obj.key] = obj
            found = self.assumed_claim.get(obj.key)
            if found is not None and (obj.volume_name or (not found.volume
                                                          and obj.selected_node == found.node)):
                self._confirm(obj.key)
        elif isinstance(obj, StorageClass):
            self.classes[obj.name] = obj
        elif isinstance(obj, CSINode):
            self.csinodes[obj.name] = obj
        elif isinstance(obj, CSIDriver):
            self.csidrivers[obj.name] = obj
        elif isinstance(obj, StorageCapacity):
            self.capacities[obj.key] = obj
        else:
            key = claim_key(obj.namespace, obj.name)
            self.resource_claims[key] = obj
            self.devices.claim_seen(obj, key)

    def remove(self, kind: str, key: str) -> None:
        """Forget an object of ``kind`` (PersistentVolume, PersistentVolumeClaim,
        StorageClass, CSINode, CSIDriver, CSIStorageCapacity or ResourceClaim) by name or
        ``namespace/name``. Unknown kinds and names are ignored."""
        self.epoch += 1
        if kind == "PersistentVolume":
            old = self.volumes.pop(key, None)
            if old is not None:
                self._unindex(old)
        elif kind == "PersistentVolumeClaim":
            self.claims.pop(ClaimKey(key), None)
        elif kind == "StorageClass":
            self.classes.pop(key, None)
        elif kind == "CSINode":
            self.csinodes.pop(key, None)
        elif kind == "ResourceClaim":
            self.resource_claims.pop(ClaimKey(key), None)
            self.devices.claim_seen(None, key)
        elif kind == "CSIDriver":
            self.csidrivers.pop(key, None)
        elif kind == "CSIStorageCapacity":
            self.capacities.pop(ClaimKey(key), None)

    def _add_index(self, volume: PersistentVolume) -> None:
        by_host = self._index.setdefault(volume.storage_class, {})
        for host in hosts_of(volume.node_affinity) or ("",):
            by_host.setdefault(host, {})[volume.name] = volume
        if volume.claim_ref is not None:
            self.claim_refs[volume.claim_ref.key] = volume.name
        self._refresh(volume.name)

    def _unindex(self, volume: PersistentVolume) -> None:
        by_host = self._index.get(volume.storage_class, {})
        hosts = hosts_of(volume.node_affinity)
        for host in hosts or ("",):
            by_host.get(host, {}).pop(volume.name, None)
        for host in hosts or ():
            self._free.get(volume.storage_class, {}).get(host, set()).discard(volume.name)
            self._host_changed(volume.storage_class, host)
        ref = volume.claim_ref
        if ref is not None and self.claim_refs.get(ref.key) == volume.name:
            del self.claim_refs[ref.key]

    def _refresh(self, name: str) -> None:
        """Put local volume ``name`` in or out of the free sets, as it is now."""
        volume = self.volumes.get(name)
        if volume is None:
            return
        hosts = hosts_of(volume.node_affinity)
        if not hosts:
            return
        free = (volume.claim_ref is None and name not in self.assumed_volume
                and volume.phase in ("Available", "") and not volume.terminating)
        by_host = self._free.setdefault(volume.storage_class, {})
        for host in hosts:
            if free:
                by_host.setdefault(host, set()).add(name)
            else:
                by_host.get(host, set()).discard(name)
            self._host_changed(volume.storage_class, host)

    def _host_changed(self, storage_class: str, host: str) -> None:
        log = self._changed_hosts
        log.append((storage_class, host))
        if len(log) > 4 * len(self.volumes) + 64:
            log.clear()
            self._generation += 1

    def host_mark(self) -> tuple[int, int]:
        """Where the log of local volumes changed stands now (see
        :meth:`hosts_changed_since`)."""
        return (self._generation, len(self._changed_hosts))

    def hosts_changed_since(self, mark: tuple[int, int],
                            classes: Container[str]) -> set[str] | None:
        """The hostnames whose local volumes of one of ``classes`` changed since
        ``mark`` (freed, taken, added, removed or edited): the only hosts
        :meth:`serving_hosts` may have added or dropped since; None when no longer known."""
        generation, seen = mark
        log = self._changed_hosts
        if generation != self._generation or seen > len(log):
            return None
        return {host for storage_class, host in log[seen:] if storage_class in classes}

    def serving_hosts(self, storage_class: str, signature: Hashable,
                      fits: Callable[[PersistentVolume], bool]) -> set[str]:
        """The hostnames with a free local volume of ``storage_class`` that ``fits`` (a
        test that depends on the volume and on ``signature`` alone: the claim's fields).
        Kept per class and signature, brought up to date host by host as volumes
        change (read-only for the caller)."""
        key = (storage_class, signature)
        found = self._serving.get(key)
        free = self._free.get(storage_class, {})
        volumes = self.volumes
        log = self._changed_hosts
        if found is None or found.generation != self._generation:
            if len(self._serving) >= 64:
                self._serving.clear()
            hosts = {host for host, names in free.items()
                     if any(fits(volumes[name]) for name in names if name in volumes)}
            found = self._serving[key] = _Serving(hosts, self._generation, len(log))
            return hosts
        for changed_class, host in log[found.seen:]:
            if changed_class != storage_class:
                continue
            if any(fits(volumes[name]) for name in free.get(host, ()) if name in volumes):
                found.hosts.add(host)
            else:
                found.hosts.discard(host)
        found.seen = len(log)
        return found.hosts

    def may_have_free(self, storage_class: str, hostname: str) -> bool:
        """Could a free volume of ``storage_class`` reach node ``hostname``? False only when
        the class has no volume without a plain hostname affinity and none free there."""
        reach = self.free_hosts(storage_class)
        return reach is None or bool(reach.get(hostname))

    def free_hosts(self, storage_class: str) -> dict[str, set[str]] | None:
        """The hostnames free volumes of ``storage_class`` may be found on (each with
        those volumes), when every volume of the class names its node alone (local
        volumes); None when some volume may reach other nodes (then any node may have
        one). Empty: the class has no volume at all."""
        by_host = self._index.get(storage_class)
        if by_host is None:
            return {}
        if by_host.get(""):
            return None
        return self._free.get(storage_class, {})

    def candidates(self, storage_class: str, hostname: str) -> Iterator[PersistentVolume]:
        """The volumes of ``storage_class`` that may reach the node ``hostname``: those
        whose node affinity names it alone, and those whose affinity says more (or
        nothing). Callers still check the affinity of the latter."""
        by_host = self._index.get(storage_class)
        if by_host is None:
            return
        yield from by_host.get(hostname, {}).values()
        if hostname:
            yield from by_host.get("", {}).values()

    # --- assumptions --------------------------------------------------------------------

    def volume_of(self, claim: PersistentVolumeClaim) -> str:
        """The PV ``claim`` is bound to, observed or assumed; empty when neither."""
        if claim.volume_name:
            return claim.volume_name
        found = self.assumed_claim.get(claim.key)
        return found.volume if found is not None else ""

    def claimed(self, volume: PersistentVolume) -> ClaimKey | None:
        """The claim ``volume`` is bound or assumed bound to, if any."""
        if volume.claim_ref is not None:
            return volume.claim_ref.key
        return self.assumed_volume.get(volume.name)

    def assume(self, uid: str, assumptions: tuple[Assumption, ...]) -> None:
        """Take these bindings for pod ``uid`` (replacing any it held)."""
        self.forget_pod(uid)
        for item in assumptions:
            self.assumed_claim[item.claim] = item
            if item.volume:
                self.assumed_volume[item.volume] = item.claim
                self._refresh(item.volume)
        if assumptions:
            self.by_pod[uid] = assumptions
            self.epoch += 1

    def forget_pod(self, uid: str, *, devices: bool = True) -> None:
        """Give back what pod ``uid`` assumed and is not yet seen done (volumes and, unless
        ``devices`` is False, devices). Unknown: no-op."""
        if devices and uid in self.devices.by_pod:
            self.devices.forget_pod(uid)
            self.epoch += 1
        for item in self.by_pod.pop(uid, ()):
            if self.assumed_claim.get(item.claim) == item:
                self._confirm(item.claim)
            self.epoch += 1

    def _confirm(self, claim: ClaimKey) -> None:
        item = self.assumed_claim.pop(claim, None)
        if item is not None and item.volume:
            self.assumed_volume.pop(item.volume, None)
            self._refresh(item.volume)

    # --- usage --------------------------------------------------------------------------

    def pod_placed(self, uid: str, namespace: str, volumes: PodVolumes, node: str) -> None:
        """Pod ``uid`` holds ``node`` (bound or assumed) with these volumes."""
        self.pod_left(uid)
        claims = tuple(claim_key(namespace, c.name) for c in volumes.claims)
        if not claims and not volumes.csi_inline:
            return
        self._placed[uid] = _Placed(node, claims, volumes.csi_inline)
        on_node = self.node_claims.setdefault(node, {})
        for key in claims:
            self.users.setdefault(key, set()).add(uid)
            on_node[key] = on_node.get(key, 0) + 1
        inline = self.node_inline.setdefault(node, {})
        for driver in volumes.csi_inline:
            inline[driver] = inline.get(driver, 0) + 1

    def pod_left(self, uid: str) -> None:
        """Pod ``uid`` no longer holds a node. Unknown: no-op."""
        placed = self._placed.pop(uid, None)
        if placed is None:
            return
        self.epoch += 1
        on_node = self.node_claims.get(placed.node, {})
        for key in placed.claims:
            users = self.users.get(key)
            if users is not None:
                users.discard(uid)
                if not users:
                    del self.users[key]
            count = on_node.get(key, 0) - 1
            if count > 0:
                on_node[key] = count
            else:
                on_node.pop(key, None)
        inline = self.node_inline.get(placed.node, {})
        for driver in placed.inline:
            left = inline.get(driver, 0) - 1
            if left > 0:
                inline[driver] = left
            else:
                inline.pop(driver, None)


def claim_ref_of(claim: PersistentVolumeClaim) -> ClaimRef:
    return ClaimRef(claim.namespace, claim.name, claim.uid)


def hosts_of(affinity: NodeAffinity) -> tuple[str, ...] | None:
    """The hostnames a node affinity names when all it says is ``kubernetes.io/hostname
    In [...]`` (in one or several terms), as local volumes' does; else None."""
    terms = affinity.required_terms
    if not terms:
        return None
    hosts: list[str] = []
    for term in terms:
        if term.match_fields or len(term.match_expressions) != 1:
            return None
        requirement = term.match_expressions[0]
        if requirement.key != HOSTNAME or requirement.operator is not SelectorOperator.IN:
            return None
        hosts.extend(requirement.values)
    return tuple(hosts)

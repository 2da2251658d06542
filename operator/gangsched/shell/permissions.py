"""Every API permission the operator uses, and why: the source of its RBAC.

``manifests/clusterrole.yaml`` and ``manifests/role.yaml`` must grant exactly these
(``tests/manifests_tests/test_rbac.py`` compares both ways), and the shell tests record
every request the operator and kopf inside it send to the fake API server and fail on
one not listed here (``tests/shell/conftest.py``); a listed permission that no test
uses fails too. So the code, this table and the manifests cannot drift apart.

``resource`` is ``plural`` or ``plural/subresource``. ``namespaced`` says which of the
two manifests grants it: the Lease is the only namespaced one (the Role in the
operator's namespace); everything else is cluster-wide.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Permission:
    group: str
    resource: str
    verb: str
    why: str
    namespaced: bool = False


def _grant(group: str, resources: tuple[str, ...], verbs: dict[str, str],
           namespaced: bool = False) -> list[Permission]:
    return [Permission(group, r, verb, why, namespaced)
            for r in resources for verb, why in verbs.items()]


GANGSCHED = "gangsched.io"
COSCHEDULING = "scheduling.x-k8s.io"
VOLCANO = "scheduling.volcano.sh"

NEEDED: frozenset[Permission] = frozenset([
    *_grant("", ("pods",), {
        "list": "start-up: every pod uses room on its node and in its queue",
        "watch": "follow pod arrivals, bindings and exits",
        "create": "placeholder pods that reserve room for a gang",
        "delete": "placeholders, with a UID precondition and a short grace period; a "
                  "preemption victim a PodDisruptionBudget protects, as a last resort",
    }),
    *_grant("", ("pods/binding",), {"create": "bind a pod to its node, as kube-scheduler"}),
    *_grant("", ("pods/eviction",), {
        "create": "evict preemption victims, honouring PodDisruptionBudgets"}),
    *_grant("", ("pods/status",), {"patch": "the PodScheduled=False condition and why"}),
    *_grant("", ("nodes",), {
        "list": "start-up: capacity, labels and taints of every node",
        "watch": "follow nodes joining, leaving and changing"}),
    *_grant("events.k8s.io", ("events",), {
        "create": "record why, on the pod, gang, queue or node concerned; the Scheduled "
                  "Event of each pod bound, as kube-scheduler",
        "get": "continue the series of an Event recorded before a restart",
        "patch": "count a repeated Event in its series"}),
    *_grant("apiextensions.k8s.io", ("customresourcedefinitions",), {
        "list": "kopf's scan of the resources it serves",
        "watch": "kopf notices CRDs installed or removed"}),
    *_grant(GANGSCHED, ("applications", "podgroups", "queues"), {
        "list": "start-up, and kopf's initial listing",
        "watch": "kopf follows changes and deletions"}),
    *_grant(GANGSCHED, ("applications", "podgroups"), {
        "create": "pods-first: the gang a pod defines, owned by that pod",
        "patch": "pods-first: each member one more owner, so the gang outlives its first "
                 "pod"}),
    *_grant(GANGSCHED, ("applications/status", "podgroups/status", "queues/status"), {
        "patch": "state, counters, blocking reasons, conditions and timers"}),
    # Not podgroups/finalizers: a PodGroup's members are its own pods, assumed and bound
    # together, never placeholders; and the gangs made pods-first are owned by their pod
    # without blockOwnerDeletion (so no pods/finalizers either).
    *_grant(GANGSCHED, ("applications/finalizers",), {
        "update": "placeholders are owned by their Application with blockOwnerDeletion, "
                  "which OwnerReferencesPermissionEnforcement authorizes this way"}),
    *_grant(COSCHEDULING, ("podgroups",), {
        "list": "start-up: coscheduling gangs (404 while the CRD is not installed)",
        "watch": "follow their changes"}),
    *_grant(COSCHEDULING, ("podgroups/status",), {
        "patch": "the coscheduling status of a PodGroup with pods gangsched schedules"}),
    *_grant(VOLCANO, ("podgroups",), {
        "list": "start-up: Volcano gangs (404 while the CRD is not installed)",
        "watch": "follow their changes"}),
    # Kubernetes' own gangs (the Workload API, feature-gated: its version is asked of
    # discovery, which needs no grant). Not workloads: a PodGroup carries a copy of its
    # template's policy and constraints, so the Workload is never read.
    *_grant("scheduling.k8s.io", ("podgroups",), {
        "list": "start-up: Kubernetes-native gangs (when the Workload API is served)",
        "watch": "follow their changes"}),
    *_grant("scheduling.k8s.io", ("podgroups/status",), {
        "patch": "the PodGroup's scheduling condition, as kube-scheduler writes it"}),
    *_grant("", ("namespaces",), {
        "list": "start-up: namespace labels, which namespaceSelector in pod affinity matches",
        "watch": "follow namespaces created, deleted and relabelled"}),
    *_grant("scheduling.k8s.io", ("priorityclasses",), {
        "list": "start-up: resolve priorityClassName of pods, Applications and PodGroups",
        "watch": "follow classes created and changed (globalDefault included)"}),
    *_grant("", ("persistentvolumes",), {
        "get": "re-read the chosen volume right before binding it to a claim",
        "list": "start-up: every volume's class, capacity, node affinity and claim",
        "watch": "follow volumes created, bound and released",
        "update": "bind a static volume to a claim (spec.claimRef, resourceVersion-checked)"}),
    *_grant("", ("persistentvolumeclaims",), {
        "list": "start-up: every claim's class, request and binding",
        "watch": "follow claims created and bound",
        "patch": "the volume.kubernetes.io/selected-node annotation that starts provisioning"}),
    *_grant("storage.k8s.io", ("storageclasses", "csinodes"), {
        "list": "start-up: binding modes, provisioners and per-node volume limits",
        "watch": "follow their changes"}),
    *_grant("storage.k8s.io", ("csidrivers", "csistoragecapacities"), {
        "list": "start-up: which drivers track capacity, and the capacity they publish",
        "watch": "follow capacity as volumes are created and deleted"}),
    *_grant("resource.k8s.io", ("resourceclaims",), {
        "get": "re-read a claim right before allocating or reserving it",
        "list": "start-up: allocations of pods' resource claims (when the API is served)",
        "watch": "follow allocations",
        "update": "add kube-scheduler's delete-protection finalizer before allocating"}),
    *_grant("resource.k8s.io", ("deviceclasses", "resourceslices", "resourceclaimtemplates"), {
        "list": "start-up: the devices drivers publish, their classes, the claim templates",
        "watch": "follow devices published and withdrawn, classes and templates changed"}),
    *_grant("resource.k8s.io", ("resourceclaims/status",), {
        "update": "write status.allocation and status.reservedFor before the Binding "
                  "(resourceVersion-checked)"}),
    *_grant("coordination.k8s.io", ("leases",), {
        "create": "the first replica creates the leader Lease",
        "get": "read the holder and whether the record changed",
        "update": "acquire, renew and release, with a resourceVersion precondition"},
        namespaced=True),
])
"""What the operator's service account must be allowed, no more."""

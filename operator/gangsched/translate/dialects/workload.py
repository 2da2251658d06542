"""Kubernetes-native gangs: ``spec.schedulingGroup`` on pods and the ``scheduling.k8s.io``
PodGroup of the Workload API (``v1alpha2`` in Kubernetes 1.36, ``v1alpha3`` and
``v1beta1`` after it).

The upstream types are ``staging/src/k8s.io/api/scheduling/<version>/types.go`` (Workload,
PodGroup) and ``staging/src/k8s.io/api/core/v1/types.go`` (``PodSpec.SchedulingGroup``) in
kubernetes/kubernetes; kube-scheduler's side is
``pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go`` (PreEnqueue and
PlacementFeasible) and ``pkg/scheduler/schedule_one_podgroup.go``
(``updatePodGroupCondition``).

What is read:

* a pod with ``spec.schedulingGroup.podGroupName: <name>`` joins the PodGroup ``<name>``
  of its namespace, known to the core as ``<namespace>/workload:<name>``
  (:func:`~.foreign_key`). The name must be a DNS subdomain, and ``schedulingGroup``
  must name it (its one member today): otherwise the pod is invalid, with the path;
* a PodGroup (:func:`podgroup_from_k8s`): ``spec.schedulingPolicy`` is a union, exactly
  one of ``gang`` and ``basic``.

  - ``gang: {minCount: N}`` is a gang of ``minMember`` N, Strict: members are assumed in
    memory and nothing is bound until N pods exist *and* fit together (kube-scheduler's
    PreEnqueue waits for ``minCount`` pods, its PlacementFeasible for ``minCount``
    placed); then all are bound in one cycle, later members one by one.
  - ``basic: {}`` is "standard Kubernetes scheduling": a group of ``minMember`` 1, whose
    pods are placed one by one (the first one satisfies it, the others are ordinary).

  Neither gang has a timeout: kube-scheduler retries a gang for as long as it exists, so
  it never gets gangsched's ``TimedOut`` (:data:`NO_TIMEOUT`).
  ``spec.schedulingConstraints.topology[0].key`` (at most one entry, a label key) is a
  required topology: every member in one domain of that node label
  (:class:`~gangsched.core.values.model.TopologyRequest`). ``spec.priority``, else
  ``spec.priorityClassName`` resolved in the PriorityClasses, is the gang's priority.
  ``spec.resourceClaims`` (feature gate ``DRAWorkloadResourceClaims``, at most 4, each a
  ``name`` and exactly one of ``resourceClaimName`` and ``resourceClaimTemplateName``)
  are the group's claims: the one named, or the one the resourceclaim controller made
  from the template for the group and listed in ``status.resourceClaimStatuses``
  (:func:`group_claims`). A member whose ``spec.resourceClaims`` entry matches one of
  them exactly (same name and source) is given that claim by the controller (in its
  ``status.resourceClaimStatuses``); the claim is allocated once, by the first member
  placed, and reserved for the PodGroup (``reservedFor``: ``scheduling.k8s.io``
  ``podgroups``, name and uid), not for each pod, so no later member writes anything.
  Not read: ``podGroupTemplateRef``/``workloadRef`` (the PodGroup carries a copy of its
  template's policy and constraints, so the Workload is never needed),
  ``disruptionMode``, ``preemptionPolicy``. The queue is ``default``.
* A pod whose PodGroup does not exist yet waits, as kube-scheduler's PreEnqueue, with its
  words (:func:`waiting_message`); a gang with fewer pods than ``minCount`` too
  (:data:`QUORUM_MESSAGE`).

What is written (:func:`status_body`): the PodGroup's scheduling condition, as
kube-scheduler writes it with a status patch, and only that condition (the others,
``DisruptionTarget`` for one, are kept as they are). Its type is ``PodGroupScheduled`` in
``v1alpha2`` and ``PodGroupInitiallyScheduled`` from ``v1alpha3`` on (:data:`CONDITION`):
``True``/``Scheduled`` once the gang is bound, and never ``False`` again after that (as
``updatePodGroupCondition``); ``False``/``Unschedulable`` with the reason the gang does
not fit, after an attempt; ``False``/``SchedulerError`` for a PodGroup gangsched cannot
read. Nothing is written while the gang waits for its pods (kube-scheduler does not
attempt it then either).

The Job controller's Workload integration (``pkg/controller/job/job_scheduling_manager.go``,
feature gate ``WorkloadWithJob``) creates a Workload with one PodGroupTemplate, a PodGroup
from it (controller-owned by the Job, ``minCount`` defaulting to the Job's parallelism)
and pods that name that PodGroup in ``spec.schedulingGroup``: such a Job runs as one gang.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.core.values import decisions, model
from gangsched.core.values.devices import ConsumerRef
from gangsched.translate import conditions, fields, times
from gangsched.translate import group_claims as group_claims_of
from gangsched.translate.dialects import WORKLOAD, Claim, PodMeta, foreign_key
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses

GROUP = "scheduling.k8s.io"
VERSIONS = ("v1beta1", "v1alpha3", "v1alpha2")
"""The versions of the Workload API gangsched reads, newest first: the newest one the
server offers is used."""
VERSION = "v1alpha2"
"""The version of Kubernetes 1.36, the first with the PodGroup API."""
PLURAL = "podgroups"
POD_FIELD = "spec.schedulingGroup"
MAX_MIN_COUNT = 2**31 - 1
MAX_RESOURCE_CLAIMS = 4
"""``spec.resourceClaims`` of a PodGroup holds at most this many entries."""
"""``minCount`` is an int32."""
NO_TIMEOUT = model.NO_TIMEOUT
"""The schedule timeout of a native gang: a century, that is none (kube-scheduler
retries a gang for as long as it exists)."""
CONDITION = {"v1alpha2": "PodGroupScheduled"}
"""The scheduling condition's type per version; later versions call it
:data:`CONDITION_LATER`."""
CONDITION_LATER = "PodGroupInitiallyScheduled"
SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"
QUORUM_MESSAGE = "waiting for minCount pods from a gang to appear in scheduling queue"
"""What kube-scheduler says of a gang member while fewer than ``minCount`` pods exist."""
_SATISFIED_PHASES = frozenset({"Scheduled", "Running", "Finished"})
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def condition_type(version: str) -> str:
    """The scheduling condition's type in ``version`` (an unknown one: the later name)."""
    return CONDITION.get(version, CONDITION_LATER)


def waiting_message(name: str) -> str:
    """kube-scheduler's words for a pod whose PodGroup ``name`` does not exist yet."""
    return f'waiting for pod\'s pod group "{name}" to appear in scheduling queue'


def read(meta: PodMeta) -> Claim | None:
    """The claim of a pod's ``spec.schedulingGroup``, or ``None`` without one. A value
    that is not an object naming a valid PodGroup is a problem (the pod is invalid)."""
    raw = meta.scheduling_group
    if raw is None:
        return None
    path = f"{POD_FIELD}.podGroupName"
    problems = fields.Problems()
    group: Mapping[str, Any] = problems.read(lambda: fields.mapping(raw, POD_FIELD), {})
    name = problems.read(lambda: fields.string(group.get("podGroupName"), path), "")
    if not name and not problems.messages:
        problems.add(f"{path}: required (the name of the PodGroup the pod belongs to)")
    elif name:
        problems.read(lambda: fields.dns_subdomain(name, path, what="PodGroup name"), "")
    if problems.messages:
        return Claim(dialect=WORKLOAD, source=POD_FIELD, problems=tuple(problems.messages))
    return Claim(dialect=WORKLOAD, source=path,
                 pod_group=foreign_key(WORKLOAD, meta.namespace, name))


def _label_key(text: str, path: str) -> str:
    """``text`` when it is a valid label key (an optional DNS-subdomain prefix and ``/``,
    then a name of at most 63 characters), else raise naming ``path``."""
    prefix, _, name = text.rpartition("/")
    if prefix:
        fields.dns_subdomain(prefix, path, what="label key prefix")
    if len(name) > 63 or not _NAME.fullmatch(name):
        raise fields.TranslationError(
            f'{path}: invalid label key "{text}": the name part must be 1 to 63 '
            "characters, alphanumerics, '-', '_' or '.', starting and ending with an "
            "alphanumeric")
    return text


def _policy(spec: Mapping[str, Any], problems: fields.Problems) -> int:
    """``minMember`` from ``spec.schedulingPolicy``: ``gang.minCount``, or 1 for
    ``basic``; 1 (with a problem) when it is not exactly one of the two."""
    path = "spec.schedulingPolicy"
    policy: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(spec.get("schedulingPolicy"), path), {})
    chosen = [name for name in ("basic", "gang") if policy.get(name) is not None]
    if len(chosen) != 1:
        found = " and ".join(chosen) if chosen else "neither"
        problems.add(f"{path}: exactly one of basic and gang must be set, got {found}")
        return 1
    if chosen == ["basic"]:
        empty: Mapping[str, Any] = {}
        problems.read(lambda: fields.mapping(policy.get("basic"), f"{path}.basic"), empty)
        return 1
    before = len(problems.messages)
    gang: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(policy.get("gang"), f"{path}.gang"), {})
    if len(problems.messages) > before:
        return 1
    if gang.get("minCount") is None:
        problems.add(f"{path}.gang.minCount: required")
        return 1
    return problems.read(lambda: fields.integer(
        gang.get("minCount"), f"{path}.gang.minCount", default=1, minimum=1,
        maximum=MAX_MIN_COUNT), 1)


def _topology(spec: Mapping[str, Any], problems: fields.Problems) -> model.TopologyRequest:
    """The required topology of ``spec.schedulingConstraints.topology`` (at most one
    entry, each with a label ``key``); none when absent or wrong (with a problem)."""
    path = "spec.schedulingConstraints"
    constraints: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(spec.get("schedulingConstraints"), path), {})
    items: Sequence[Any] = problems.read(
        lambda: fields.sequence(constraints.get("topology"), f"{path}.topology"), ())
    if len(items) > 1:
        problems.add(f"{path}.topology: must have at most 1 item, got {len(items)}")
        return model.NO_TOPOLOGY
    if not items:
        return model.NO_TOPOLOGY
    item_path = f"{path}.topology[0]"
    entry: Mapping[str, Any] = problems.read(lambda: fields.mapping(items[0], item_path), {})
    key = problems.read(lambda: fields.string(entry.get("key"), f"{item_path}.key"), "")
    if not key:
        problems.add(f"{item_path}.key: required (a node label key)")
        return model.NO_TOPOLOGY
    if problems.read(lambda: _label_key(key, f"{item_path}.key"), "") == "":
        return model.NO_TOPOLOGY
    return model.TopologyRequest(required=key)


def podgroup_from_k8s(obj: Mapping[str, Any], *,
                      priorities: PriorityClasses = NO_CLASSES) -> model.PodGroupSpec:
    """A ``scheduling.k8s.io`` PodGroup (any version of :data:`VERSIONS`) as the core's
    PodGroupSpec, keyed ``namespace/workload:name`` (see the module docstring).

    Missing or wrong values never raise: they are in ``invalid``, each with its path
    (the core then fails the group and its pods say why), and the group is read as a
    gang of 1 meanwhile. ``priority``: ``spec.priority`` when it is an integer, else
    ``spec.priorityClassName`` resolved in ``priorities`` (an unknown class: the default).
    """
    problems = fields.Problems()
    meta: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(obj.get("metadata"), "metadata"), {})
    spec: Mapping[str, Any] = problems.read(lambda: fields.mapping(obj.get("spec"), "spec"), {})
    if obj.get("spec") is None:
        problems.add("spec: required")
    min_member = _policy(spec, problems)
    topology = _topology(spec, problems)
    priority, _unknown = priorities.resolve(spec.get("priorityClassName"))
    priority = problems.read(lambda: fields.integer(
        spec.get("priority"), "spec.priority", default=priority), priority)
    namespace, name, uid = meta.get("namespace"), meta.get("name"), meta.get("uid")
    claims, consumer = group_claims(obj, problems)
    return model.PodGroupSpec(
        key=foreign_key(WORKLOAD, str(namespace or ""), str(name or "")),
        uid=uid if isinstance(uid, str) else "",
        min_member=min_member,
        schedule_timeout=NO_TIMEOUT,
        wait_for_min_member=True,
        mode=model.GangMode.STRICT,
        priority=priority,
        creation=times.parse_time(meta.get("creationTimestamp")) or 0.0,
        invalid=problems.message(),
        topology=topology,
        claims=claims,
        consumer=consumer,
    )


def group_claims(obj: Mapping[str, Any], problems: fields.Problems
                 ) -> tuple[tuple[str, ...], ConsumerRef | None]:
    """(the names of the ResourceClaims of PodGroup ``obj``, the PodGroup as their
    consumer); a template's claim is known once ``status.resourceClaimStatuses`` lists
    it. No ``spec.resourceClaims``: ((), None). Problems are added with their path."""
    spec = obj.get("spec")
    raw = spec.get("resourceClaims") if isinstance(spec, Mapping) else None
    if raw is None:
        return (), None
    path = "spec.resourceClaims"
    entries = group_claims_of.read(raw, path, problems)
    if len(entries) > MAX_RESOURCE_CLAIMS:
        problems.add(f"{path}: Too many: {len(entries)}: must have at most "
                     f"{MAX_RESOURCE_CLAIMS} items")
        return (), None
    status = obj.get("status")
    made: dict[str, str] = {}
    for item in (status.get("resourceClaimStatuses") if isinstance(status, Mapping)
                 else None) or ():
        if isinstance(item, Mapping) and isinstance(item.get("resourceClaimName"), str):
            made[str(item.get("name"))] = item["resourceClaimName"]
    names = tuple(entry.claim or made.get(entry.name, "") for entry in entries)
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    consumer = ConsumerRef(str(meta.get("name") or ""), str(meta.get("uid") or ""),
                           PLURAL, GROUP)
    return tuple(n for n in names if n), consumer if entries else None


def _wanted(d: decisions.SetPodGroupStatus, kind: str) -> conditions.Wanted | None:
    if d.phase in _SATISFIED_PHASES:
        return conditions.Wanted(kind, "True", SCHEDULED,
                                 f"{d.scheduled} pods of the group scheduled")
    if d.reason == "InvalidSpec" or d.phase == "Failed":
        return conditions.Wanted(kind, "False", SCHEDULER_ERROR, d.message)
    blocking = d.blocking
    if blocking.reason not in ("", "None") and blocking.message:
        return conditions.Wanted(kind, "False", UNSCHEDULABLE, blocking.message)
    return None


def status_body(d: decisions.SetPodGroupStatus, obj: Mapping[str, Any], *, now: float,
                version: str) -> dict[str, Any] | None:
    """The ``status`` to merge-patch onto PodGroup ``obj`` (as last seen) for ``d``, or
    ``None`` when nothing is to be written: the gang waits for its pods, or the
    condition is unchanged, or it was True already and ``d`` would make it False.

    The ``conditions`` list is sent whole (a merge patch replaces lists): the other
    conditions of ``obj`` are kept as they are, in their order, this one after them.
    ``lastTransitionTime`` is kept while the status stays, ``observedGeneration`` is the
    object's ``metadata.generation`` (0 when missing)."""
    kind = condition_type(version)
    want = _wanted(d, kind)
    if want is None:
        return None
    raw_status = obj.get("status")
    status: Mapping[str, Any] = raw_status if isinstance(raw_status, Mapping) else {}
    old = conditions.old_condition(status, kind)
    if old is not None and old.get("status") == "True" and want.status != "True":
        return None
    meta = obj.get("metadata")
    generation = meta.get("generation") if isinstance(meta, Mapping) else None
    generation = generation if isinstance(generation, int) else 0
    (mine,) = conditions.render([want], now=now, generation=generation, old_status=status)
    if old is not None and all(old.get(k) == mine[k] for k in mine):
        return None
    raw = status.get("conditions")
    others = [c for c in (raw if isinstance(raw, list) else ())
              if isinstance(c, Mapping) and c.get("type") != kind]
    return {"conditions": [*others, mine]}


def pending_message(reason: str, message: str, name: str, *, members: int,
                    minimum: int) -> str:
    """The message a pending member of PodGroup ``name`` shows, in kube-scheduler's words
    where it has some: the PodGroup does not exist yet (``PodGroupNotFound``), or the
    gang has fewer than ``minimum`` pods (``members``) so far (the same words whatever
    the count, so that a pod's condition is not rewritten as each member arrives). Any
    other ``message`` is returned as it is."""
    if reason == "PodGroupNotFound":
        return waiting_message(name)
    if reason == "WaitingForGang" and members < minimum:
        return f"{QUORUM_MESSAGE} (minCount {minimum})"
    return message

"""Pods: raw API objects to the core's :class:`~gangsched.core.values.model.Pod`, and the
pods-first flow that turns a pod's annotations into an Application manifest.

:func:`pod_from_k8s` never raises on what users wrote. A pod with a bad quantity, a bad
constraint or contradictory gang labels is still returned, with ``invalid`` set to every
problem found (each starting with its JSON path, joined by ``"; "``); the core then keeps
it pending with that message instead of losing it. Requests that cannot be read are zero.

What the scheduler counts as a pod's request follows Kubernetes (``PodRequests``):

* a container's ``limits`` stand in for the ``requests`` it does not give (the API server
  defaults them the same way, so this only matters for hand-written objects);
* init containers are combined with :func:`~gangsched.core.values.resources.effective_pod_request`,
  those with ``restartPolicy: Always`` being sidecars;
* pod-level ``spec.resources`` (cpu, memory, hugepages) replace the containers' sum;
* ``spec.overhead`` is added.

Gang membership comes from the names in :mod:`gangsched.translate.labels`, or from the
names of the other gang schedulers (:mod:`gangsched.translate.dialects`), resolved by
their documented precedence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.core.framework.nodeinfo import DEFAULT_MEMORY, DEFAULT_MILLI_CPU, nonzero
from gangsched.core.values import constraints, model, resources
from gangsched.translate import (
    dialects,
    fields,
    gangspec,
    group_claims,
    k8s_constraints,
    k8s_placement,
    labels,
    times,
)
from gangsched.translate.dialects import native, resolve, topologies
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses
from gangsched.translate.volumes import pod_volumes

__all__ = [
    "TranslationError",
    "app_manifest_from_pod",
    "gang_definition",
    "pod_from_k8s",
    "pod_requests",
    "pod_with_membership",
    "task_groups_from_json",
]

TranslationError = fields.TranslationError
task_groups_from_json = gangspec.task_groups_from_json

DEFAULT_K8S_SCHEDULER = "default-scheduler"
"""What the API server puts in ``spec.schedulerName`` when a pod names none."""

_POD_LEVEL = ("cpu", "memory")


def _requests(raw: object, path: str) -> dict[str, int]:
    """The requests of a ``resources`` object (``path`` is its path), with ``limits``
    standing in for missing requests. Explicit zeros are kept (they matter to pod-level
    resources, which replace the containers' amounts by name)."""
    spec = fields.mapping(raw, path)
    raw_requests = fields.mapping(spec.get("requests"), f"{path}.requests")
    requests = fields.resource_list(raw_requests, f"{path}.requests")
    raw_limits = fields.mapping(spec.get("limits"), f"{path}.limits")
    limits = fields.resource_list(raw_limits, f"{path}.limits")
    result = {name: limits.get(name) for name in raw_limits if name not in raw_requests}
    result.update({name: requests.get(name) for name in raw_requests})
    return result


def _container_requests(raw: object, path: str) -> resources.Resources:
    container = fields.mapping(raw, path)
    return resources.Resources(_requests(container.get("resources"), f"{path}.resources"))


def _is_sidecar(raw: object, path: str) -> bool:
    container = fields.mapping(raw, path)
    policy = fields.string(container.get("restartPolicy"), f"{path}.restartPolicy")
    return policy == "Always"


def _pod_level_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    requests = _requests(spec.get("resources"), "spec.resources")
    return {
        name: amount
        for name, amount in requests.items()
        if name in _POD_LEVEL or name.startswith("hugepages-")
    }


def pod_requests(spec: Mapping[str, Any], problems: fields.Problems) -> resources.Resources:
    """The effective request of a pod ``spec`` (see the module docstring).

    Problems (wrong types, bad or negative quantities) are recorded in ``problems`` with
    their paths, and the result is then :attr:`Resources.ZERO`.
    """
    before = len(problems.messages)
    zero = resources.Resources.ZERO
    containers: list[resources.Resources] = []
    items: Sequence[Any] = problems.read(
        lambda: fields.sequence(spec.get("containers"), "spec.containers"), ()
    )
    for index, item in enumerate(items):
        try:
            containers.append(_container_requests(item, f"spec.containers[{index}]"))
        except TranslationError as error:
            problems.add(str(error))
    inits: list[tuple[resources.Resources, bool]] = []
    items = problems.read(
        lambda: fields.sequence(spec.get("initContainers"), "spec.initContainers"), ()
    )
    for index, item in enumerate(items):
        item_path = f"spec.initContainers[{index}]"
        try:
            inits.append((_container_requests(item, item_path), _is_sidecar(item, item_path)))
        except TranslationError as error:
            problems.add(str(error))
    pod_level: dict[str, int] = problems.read(lambda: _pod_level_requests(spec), {})
    overhead = problems.read(
        lambda: fields.resource_list(spec.get("overhead"), "spec.overhead"), zero
    )
    if len(problems.messages) > before:
        return zero
    total = resources.effective_pod_request(containers, inits)
    if pod_level:
        merged = {name: amount for name, amount in total.items() if name not in pod_level}
        merged.update(pod_level)
        total = resources.Resources(merged)
    return total + overhead


def scoring_requests(spec: Mapping[str, Any]) -> tuple[int, int] | None:
    """(cpu millicores, memory bytes) of a pod ``spec`` as kube-scheduler's scoring
    counts them: ``PodRequests`` with ``NonMissingContainerRequests`` of 100m cpu and
    200Mi memory (noderesources/resource_allocation.go ``calculatePodResourceRequest``;
    component-helpers resource ``applyNonMissing``): every init, sidecar and regular
    container that does not name a cpu (memory) request counts the default, an explicit
    zero stays zero; then the containers combine as :func:`pod_requests` combines them,
    pod-level requests replace the sum, and the overhead is added. None when the spec
    cannot be read (its request is then refused anyway)."""
    defaults = {resources.CPU: DEFAULT_MILLI_CPU, resources.MEMORY: DEFAULT_MEMORY}

    def defaulted(raw: object, path: str) -> resources.Resources:
        found = _requests(fields.mapping(raw, path).get("resources"), f"{path}.resources")
        for name, amount in defaults.items():
            found.setdefault(name, amount)
        return resources.Resources(found)

    problems = fields.Problems()
    containers: list[resources.Resources] = []
    inits: list[tuple[resources.Resources, bool]] = []
    try:
        for i, item in enumerate(fields.sequence(spec.get("containers"), "spec.containers")):
            containers.append(defaulted(item, f"spec.containers[{i}]"))
        for i, item in enumerate(fields.sequence(spec.get("initContainers"),
                                                 "spec.initContainers")):
            path = f"spec.initContainers[{i}]"
            inits.append((defaulted(item, path), _is_sidecar(item, path)))
    except TranslationError:
        return None
    pod_level: dict[str, int] = problems.read(lambda: _pod_level_requests(spec), {})
    overhead = problems.read(
        lambda: fields.resource_list(spec.get("overhead"), "spec.overhead"),
        resources.Resources.ZERO)
    if problems.messages:
        return None
    total = resources.effective_pod_request(containers, inits)
    cpu = pod_level.get(resources.CPU, total.get(resources.CPU)) + overhead.get(resources.CPU)
    memory = (pod_level.get(resources.MEMORY, total.get(resources.MEMORY))
              + overhead.get(resources.MEMORY))
    return cpu, memory


def _phase(raw: object) -> model.PodPhase:
    if raw is None or raw == "":
        return model.PodPhase.PENDING
    for phase in model.PodPhase:
        if phase.value == raw:
            return phase
    return model.PodPhase.UNKNOWN


def _member_index(annotations: Mapping[str, str]) -> int:
    text = annotations.get(labels.ANN_MEMBER_INDEX)
    if text is None:
        return -1
    if not text.isascii() or not text.isdigit():
        path = fields.key_path("metadata.annotations", labels.ANN_MEMBER_INDEX)
        raise TranslationError(f'{path}: expected a non-negative integer, got "{text}"')
    return int(text)


PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def _preempts(spec: Mapping[str, Any]) -> bool:
    """``spec.preemptionPolicy``: False for ``Never``, True when missing or
    ``PreemptLowerPriority``; any other value raises (the pod is invalid, as the API
    server would have refused it)."""
    policy = spec.get("preemptionPolicy")
    if policy is None or policy == "PreemptLowerPriority":
        return True
    if policy == "Never":
        return False
    raise TranslationError(f'spec.preemptionPolicy: unknown value "{policy}" (accepted: '
                           f'{", ".join(PREEMPTION_POLICIES)})')


def _preemptible(annotations: Mapping[str, str]) -> bool | None:
    text = annotations.get(labels.ANN_PREEMPTIBLE)
    if text is None:
        return None
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    path = fields.key_path("metadata.annotations", labels.ANN_PREEMPTIBLE)
    raise TranslationError(f'{path}: expected "true" or "false", got "{text}"')


_app_name = native.app_name
_queue = native.queue


def pod_from_k8s(
    obj: Mapping[str, Any],
    *,
    scheduler_names: frozenset[str] = frozenset({labels.DEFAULT_SCHEDULER_NAME}),
) -> model.Pod:
    """Translate a ``v1/Pod`` object into the core's Pod (see :func:`pod_with_membership`)."""
    return pod_with_membership(obj, scheduler_names=scheduler_names)[0]


def pod_with_membership(
    obj: Mapping[str, Any],
    *,
    scheduler_names: frozenset[str] = frozenset({labels.DEFAULT_SCHEDULER_NAME}),
    priorities: PriorityClasses = NO_CLASSES,
) -> tuple[model.Pod, dialects.Membership]:
    """Translate a ``v1/Pod`` object into the core's Pod, and say how its gang was found.

    ``ours`` is whether ``spec.schedulerName`` (``default-scheduler`` when absent) is one
    of ``scheduler_names``. A missing ``spec.priority`` is ``priorityClassName`` resolved
    in ``priorities`` as the Priority admission plugin would (an unknown class: 0).
    Missing fields take the Kubernetes defaults: phase
    Pending (an unknown phase is Unknown), no node, creation time 0.0 when
    ``creationTimestamp`` is absent or unreadable. A ``deletionTimestamp`` makes the pod
    ``terminating``.

    Membership: label ``gangsched.io/app`` (or the full name in annotation
    ``gangsched.io/app-name``) gives ``app`` as ``namespace/name``, annotation
    ``gangsched.io/task-group`` the task group, label ``gangsched.io/pod-group`` the
    PodGroup (same namespace). A pod naming both an Application and a PodGroup is
    ``invalid``. Queue: label, else annotation ``gangsched.io/queue``. Annotation
    ``gangsched.io/preemptible: "false"`` protects it from preemption.

    The names of other gang schedulers are read too, and one gang is chosen by
    precedence (:func:`gangsched.translate.dialects.resolve.resolve`); their problems are
    in ``invalid``, their disagreements in the returned Membership's ``conflicts``.
    """
    problems = fields.Problems()
    meta: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(obj.get("metadata"), "metadata"), {}
    )
    spec: Mapping[str, Any] = problems.read(lambda: fields.mapping(obj.get("spec"), "spec"), {})
    status: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(obj.get("status"), "status"), {}
    )
    namespace = problems.read(
        lambda: fields.string(meta.get("namespace"), "metadata.namespace"), ""
    )
    name = problems.read(lambda: fields.string(meta.get("name"), "metadata.name"), "")
    uid = problems.read(lambda: fields.string(meta.get("uid"), "metadata.uid"), "")
    pod_labels: dict[str, str] = problems.read(
        lambda: fields.string_map(meta.get("labels"), "metadata.labels"), {}
    )
    annotations: dict[str, str] = problems.read(
        lambda: fields.string_map(meta.get("annotations"), "metadata.annotations"), {}
    )
    requests = pod_requests(spec, problems)
    counted = scoring_requests(spec)
    if counted == nonzero(requests):
        counted = None  # as scoring counts the request: nothing to carry
    default_priority = 0
    if spec.get("priority") is None:
        default_priority = priorities.resolve(spec.get("priorityClassName"))[0]
    priority = problems.read(
        lambda: fields.integer(spec.get("priority"), "spec.priority", default=default_priority),
        default_priority,
    )
    node_name = problems.read(lambda: fields.string(spec.get("nodeName"), "spec.nodeName"), "")
    scheduler = problems.read(
        lambda: fields.string(
            spec.get("schedulerName"), "spec.schedulerName", default=DEFAULT_K8S_SCHEDULER
        ),
        DEFAULT_K8S_SCHEDULER,
    )
    node_selector: dict[str, str] = problems.read(
        lambda: k8s_constraints.node_selector_from_k8s(
            spec.get("nodeSelector"), path="spec.nodeSelector"
        ),
        {},
    )
    tolerations: tuple[constraints.Toleration, ...] = problems.read(
        lambda: k8s_constraints.tolerations_from_k8s(
            spec.get("tolerations"), path="spec.tolerations"
        ),
        (),
    )
    affinity = problems.read(
        lambda: k8s_constraints.node_affinity_from_k8s(spec.get("affinity"), path="spec.affinity"),
        constraints.ANY_NODE,
    )
    pod_placement = k8s_placement.placement_from_k8s(spec, pod_labels, problems)
    if k8s_placement.spread_by_default(meta):
        pod_placement = dataclasses.replace(pod_placement, default_spread=True)
    priority_class = spec.get("priorityClassName")
    membership = resolve.resolve(
        dialects.PodMeta(
            namespace=namespace,
            name=name,
            uid=uid,
            labels=pod_labels,
            annotations=annotations,
            priority_class=priority_class if isinstance(priority_class, str) else "",
            scheduling_group=spec.get("schedulingGroup"),
        )
    )
    for problem in membership.problems:
        problems.add(problem)
    volumes = pod_volumes(name, spec, status, problems)
    if pod_labels.get(labels.LABEL_PLACEHOLDER) == "true":
        held, shared = group_claims.placeholder_claims(name, annotations, problems)
        if held or shared:
            volumes = dataclasses.replace(volumes, held_claims=held, shared_claims=shared)
    nominated = status.get("nominatedNodeName")
    member_index = problems.read(lambda: _member_index(annotations), -1)
    default: bool | None = True
    explicit = problems.read(lambda: _preemptible(annotations), default)
    preemptible = membership.preemptible is not False if explicit is None else explicit
    preempts = problems.read(lambda: _preempts(spec), True)
    pod = model.Pod(
        uid=model.PodUID(uid),
        namespace=namespace,
        name=name,
        requests=requests,
        nonzero=counted,
        priority=priority,
        creation=times.parse_time(meta.get("creationTimestamp")) or 0.0,
        node_name=node_name or None,
        phase=_phase(status.get("phase")),
        terminating=meta.get("deletionTimestamp") is not None,
        ours=scheduler in scheduler_names,
        node_selector=node_selector,
        tolerations=tolerations,
        affinity=affinity,
        app=membership.app,
        task_group=membership.task_group,
        pod_group=membership.pod_group,
        placeholder=pod_labels.get(labels.LABEL_PLACEHOLDER) == "true",
        member_index=member_index,
        queue=membership.queue,
        preemptible=preemptible,
        preempts=preempts,
        invalid=problems.message(),
        volumes=volumes,
        nominated_node=nominated if isinstance(nominated, str) and nominated else None,
        placement=pod_placement,
    )
    return pod, membership


def gang_definition(
    obj: Mapping[str, Any], membership: dialects.Membership
) -> dialects.Definition | None:
    """The gang's custom resource that pod ``obj`` carries the definition of, or ``None``.

    The native pods-first Application is :func:`app_manifest_from_pod`; the other
    dialects' are made by :func:`gangsched.translate.dialects.resolve.define`. Either
    then takes the topology of the pod's Kueue or KAI annotations
    (:func:`gangsched.translate.dialects.topologies.apply`).
    """
    if membership.definer is None:
        return None
    meta = dialects.lenient_meta(obj)
    definition: dialects.Definition | None
    if membership.definer == dialects.NATIVE:
        manifest, error = app_manifest_from_pod(obj)
        if manifest is None and error is None:
            return None
        definition = dialects.Definition(
            dialects.APPLICATION, membership.definition_key, manifest, error
        )
    else:
        definition = resolve.define(meta, membership)
    if definition is None:
        return None
    return topologies.apply(definition, meta.annotations, membership.task_group)


def _lenient_strings(raw: object) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        return {}
    return {key: value for key, value in raw.items() if isinstance(value, str)}


def app_manifest_from_pod(obj: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The Application a pods-first pod asks for, built from its annotations.

    Applies to a pod with label ``gangsched.io/app`` and annotation
    ``gangsched.io/task-groups``; any other pod gives ``(None, None)``. Returns
    ``(manifest, None)``: an ``Application`` named after the app (annotation
    ``gangsched.io/app-name`` when set), in the pod's namespace, owned by the pod (not as
    controller), with queue (label or annotation ``gangsched.io/queue``, else
    ``default``), task groups (see :func:`task_groups_from_json`), scheduling policy
    (annotation ``gangsched.io/scheduling-policy``, see
    :func:`gangspec.scheduling_policy_from_text`) and the pod's ``priorityClassName``.
    Returns ``(None, message)`` when any of that is invalid; the message names every
    problem with its path, for an Event on the pod.
    """
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    pod_labels = _lenient_strings(meta.get("labels"))
    annotations = _lenient_strings(meta.get("annotations"))
    label = pod_labels.get(labels.LABEL_APP)
    groups_text = annotations.get(labels.ANN_TASK_GROUPS)
    if not label or groups_text is None:
        return None, None
    problems = fields.Problems()
    name_key = labels.ANN_APP_NAME if annotations.get(labels.ANN_APP_NAME) else None
    name_path = (
        fields.key_path("metadata.annotations", labels.ANN_APP_NAME)
        if name_key
        else fields.key_path("metadata.labels", labels.LABEL_APP)
    )
    name = problems.read(
        lambda: fields.dns_subdomain(
            _app_name(pod_labels, annotations) or label, name_path, what="Application name"
        ),
        "",
    )
    queue_path = (
        fields.key_path("metadata.labels", labels.LABEL_QUEUE)
        if pod_labels.get(labels.LABEL_QUEUE)
        else fields.key_path("metadata.annotations", labels.ANN_QUEUE)
    )
    queue = problems.read(
        lambda: fields.dns_subdomain(
            _queue(pod_labels, annotations) or model.DEFAULT_QUEUE, queue_path, what="queue name"
        ),
        "",
    )
    groups_path = fields.key_path("metadata.annotations", labels.ANN_TASK_GROUPS)
    task_groups: list[dict[str, Any]] = problems.read(
        lambda: gangspec.task_groups_from_json(groups_text, path=groups_path), []
    )
    policy_text = annotations.get(labels.ANN_SCHEDULING_POLICY)
    policy_path = fields.key_path("metadata.annotations", labels.ANN_SCHEDULING_POLICY)
    policy: dict[str, Any] = problems.read(
        lambda: gangspec.scheduling_policy_from_text(policy_text or "", path=policy_path), {}
    )
    priority_class = spec.get("priorityClassName")
    error = problems.message()
    if error is not None:
        return None, error
    app_spec: dict[str, Any] = {"queue": queue, "taskGroups": task_groups}
    if policy:
        app_spec["schedulingPolicy"] = policy
    if isinstance(priority_class, str) and priority_class:
        app_spec["priorityClassName"] = priority_class
    manifest = {
        "apiVersion": labels.API_VERSION,
        "kind": "Application",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace", ""),
            "labels": {labels.LABEL_MANAGED_BY: labels.MANAGED_BY},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta.get("name", ""),
                    "uid": meta.get("uid", ""),
                    "controller": False,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": app_spec,
    }
    return manifest, None

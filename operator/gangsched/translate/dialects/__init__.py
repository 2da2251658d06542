"""Gang dialects: the labels and annotations other gang schedulers use, read as gangsched's.

A job written for YuniKorn, Koordinator, coscheduling (scheduler-plugins), Volcano or Kueue,
or for Kubernetes' own gang scheduling (the Workload API), runs unchanged: each dialect
module reads its own names from a pod and says which gang the pod belongs to, as a
:class:`Claim`. :mod:`.resolve` then picks one claim by the documented precedence and
reports every disagreement between them.

=============  ====================================  =========================================
dialect        a pod joins                           the gang is defined by
=============  ====================================  =========================================
native         ``gangsched.io/app`` + task group,    the Application / PodGroup; or, pods
               or ``gangsched.io/pod-group``         first, ``gangsched.io/task-groups``
workload       ``spec.schedulingGroup`` names a      that PodGroup (read; its scheduling
               ``scheduling.k8s.io`` PodGroup        condition written back)
yunikorn       Application ``dns_name(app-id)``,     ``yunikorn.apache.org/task-groups`` and
               task group ``task-group-name``        ``schedulingPolicyParameters`` on a pod
koordinator    PodGroup ``dns_name(gang name)``      ``min-available`` (+ ``waiting-time``,
                                                     ``mode``, ``total-number``, ``groups``)
coscheduling   ``scheduling.x-k8s.io`` PodGroup      that PodGroup (read; status written back)
volcano        ``scheduling.volcano.sh`` PodGroup    that PodGroup (read only)
kueue          PodGroup ``dns_name(group name)``     ``pod-group-total-count`` on a pod
=============  ====================================  =========================================

Gangs defined on pods become gangsched custom resources: the shell creates the
Application or PodGroup from the first pod that carries the definition, owned by that pod
(not as controller), exactly like the native pods-first flow. The PodGroups of
coscheduling, Volcano and Kubernetes (``scheduling.k8s.io``) are read where they are;
the core knows them under *foreign keys* (:func:`foreign_key`),
``"<namespace>/<dialect>:<name>"``, which no Kubernetes name can spell, so they never
clash with a gangsched PodGroup of the same name.

Everything here is pure and never raises on what users wrote: wrong values become
``problems`` (the pod is then invalid, with the message), ``definition_error`` (the gang
cannot be made from this pod; the pod waits for it and says why) or ``conflicts`` (two
names disagree; the precedence decides and the pod gets an Event).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from gangsched.core import model, naming
from gangsched.translate import fields, labels

NATIVE = "native"
WORKLOAD = "workload"
YUNIKORN = "yunikorn"
KOORDINATOR = "koordinator"
COSCHEDULING = "coscheduling"
VOLCANO = "volcano"
KUEUE = "kueue"

PRECEDENCE = (NATIVE, WORKLOAD, YUNIKORN, KOORDINATOR, COSCHEDULING, VOLCANO, KUEUE)
"""When a pod speaks several dialects, the first one here decides (see :mod:`.resolve`)."""

APPLICATION = "Application"
PODGROUP = "PodGroup"

LABEL_DIALECT = f"{labels.GROUP}/dialect"
"""Label on the Applications and PodGroups made from a pod: the dialect it spoke."""

_DNS_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_NOT_DNS = re.compile(r"[^a-z0-9.-]+")
_FOREIGN = re.compile(r"([a-z]+):(.*)")


@dataclasses.dataclass(frozen=True, slots=True)
class PodMeta:
    """What the dialects read from a pod: its identity, labels and annotations, and
    ``spec.schedulingGroup`` as it is in the object (``None`` when absent)."""

    namespace: str
    name: str
    uid: str = ""
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    annotations: Mapping[str, str] = dataclasses.field(default_factory=dict)
    priority_class: str = ""
    scheduling_group: object = None


@dataclasses.dataclass(frozen=True, slots=True)
class Claim:
    """What one dialect says about one pod.

    ``app``/``task_group`` or ``pod_group`` name the gang (both ``None``: the dialect only
    gives a queue or a preemption setting). ``source`` says where the gang's name came
    from, for messages. ``terms`` are the gang's definition values this pod states, as
    ``{CRD field: (value, source)}``, so that two dialects can be compared. ``defines``:
    the pod carries a full definition (:func:`resolve.define` builds it).
    """

    dialect: str
    source: str = ""
    app: model.AppKey | None = None
    task_group: str | None = None
    pod_group: model.GroupKey | None = None
    queue: str | None = None
    queue_source: str = ""
    preemptible: bool | None = None
    defines: bool = False
    terms: Mapping[str, tuple[object, str]] = dataclasses.field(default_factory=dict)
    problems: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()

    @property
    def member(self) -> bool:
        return self.app is not None or self.pod_group is not None

    @property
    def gang(self) -> tuple[str, str]:
        """``(kind, name)``: the gang as users name it. Foreign PodGroups count as
        PodGroups of their own name, so Kueue's and coscheduling's ``foo`` agree."""
        if self.app is not None:
            return APPLICATION, self.app.split("/", 1)[1]
        key = self.pod_group or ""
        return PODGROUP, split_foreign_key(key)[2] if is_foreign(key) else key.split("/", 1)[-1]


@dataclasses.dataclass(frozen=True, slots=True)
class Membership:
    """The resolved gang of a pod (see :func:`resolve.resolve`).

    ``dialect`` is the dialect that decided (``None``: an ordinary pod). ``definer`` is
    the dialect whose definition makes the gang's custom resource, ``definition_kind``
    (``Application`` or ``PodGroup``) and ``definition_key`` (``namespace/name``) say which
    one. ``queue_source`` is the path the queue was read from. ``problems`` make the pod
    invalid; ``conflicts`` are reported as an Event.
    """

    dialect: str | None = None
    app: model.AppKey | None = None
    task_group: str | None = None
    pod_group: model.GroupKey | None = None
    queue: str | None = None
    queue_source: str = ""
    preemptible: bool | None = None
    definer: str | None = None
    definition_kind: str = ""
    definition_key: str = ""
    problems: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()


NONE = Membership()


@dataclasses.dataclass(frozen=True, slots=True)
class Definition:
    """A gang's custom resource made from a pod: ``manifest``, or why it cannot be."""

    kind: str
    key: str
    manifest: dict[str, Any] | None
    error: str | None = None


def label_path(key: str) -> str:
    return fields.key_path("metadata.labels", key)


def annotation_path(key: str) -> str:
    return fields.key_path("metadata.annotations", key)


def first(
    meta: PodMeta, keys: tuple[tuple[str, str], ...]
) -> tuple[str | None, str, list[str]]:
    """The first non-empty value among ``keys`` (``("label"|"annotation", key)``, in order
    of precedence), its path, and a message for each later key that disagrees."""
    found: str | None = None
    source = ""
    disagree: list[str] = []
    for where, key in keys:
        value = (meta.labels if where == "label" else meta.annotations).get(key)
        if not value:
            continue
        path = label_path(key) if where == "label" else annotation_path(key)
        if found is None:
            found, source = value, path
        elif value != found:
            disagree.append(f'{path} is "{value}" but {source} is "{found}"')
    return found, source, disagree


def dns_name(text: str) -> str:
    """``text`` when it is a valid object name of at most 63 characters; else a valid,
    deterministic, lower-case form of it with a hash of the original (``Job_1`` ->
    ``job-1-<hash>``), so that every pod naming the same gang finds the same object."""
    if len(text) <= naming.MAX_LABEL and _DNS_NAME.fullmatch(text):
        return text
    digest = naming.short_hash(text)
    cleaned = _NOT_DNS.sub("-", text.lower()).strip("-.")
    cleaned = cleaned[: naming.MAX_LABEL - len(digest) - 1].rstrip("-.")
    return f"{cleaned}-{digest}" if cleaned else f"x-{digest}"


def foreign_key(dialect: str, namespace: str, name: str) -> model.GroupKey:
    """The core's key for another scheduler's PodGroup: ``namespace/dialect:name``."""
    return model.GroupKey(f"{namespace}/{dialect}:{name}")


def is_foreign(key: str) -> bool:
    return ":" in key


def split_foreign_key(key: str) -> tuple[str, str, str]:
    """``(dialect, namespace, name)`` of a :func:`foreign_key`; ``("", ns, name)`` for a
    gangsched key."""
    namespace, _, rest = key.partition("/")
    match = _FOREIGN.fullmatch(rest)
    if match is None:
        return "", namespace, rest
    return match.group(1), namespace, match.group(2)


def owned_metadata(meta: PodMeta, name: str, dialect: str) -> dict[str, Any]:
    """Metadata of a custom resource made from pod ``meta``: in its namespace, labelled
    as managed by gangsched and with the dialect, owned by the pod (not as controller)."""
    return {
        "name": name,
        "namespace": meta.namespace,
        "labels": {labels.LABEL_MANAGED_BY: labels.MANAGED_BY, LABEL_DIALECT: dialect},
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta.name,
                "uid": meta.uid,
                "controller": False,
                "blockOwnerDeletion": False,
            }
        ],
    }


def podgroup_definition(meta: PodMeta, name: str, dialect: str, spec: dict[str, Any],
                        problems: fields.Problems, queue: str | None,
                        queue_path: str) -> Definition:
    """A gangsched PodGroup named ``name``, owned by the pod, with ``spec`` (plus
    ``queue`` when given, checked at ``queue_path``); or every problem found."""
    if queue is not None:
        problems.read(lambda: fields.dns_subdomain(queue, queue_path, what="queue name"), "")
        spec["queue"] = queue
    key = f"{meta.namespace}/{name}"
    error = problems.message()
    if error is not None:
        return Definition(PODGROUP, key, None, error)
    manifest = {
        "apiVersion": labels.API_VERSION,
        "kind": PODGROUP,
        "metadata": owned_metadata(meta, name, dialect),
        "spec": spec,
    }
    return Definition(PODGROUP, key, manifest)


def lenient_meta(obj: Mapping[str, Any]) -> PodMeta:
    """A :class:`PodMeta` from a raw pod, skipping what has the wrong type."""

    def strings(raw: object) -> dict[str, str]:
        if not isinstance(raw, Mapping):
            return {}
        return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}

    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    priority_class = spec.get("priorityClassName")

    def text(raw: object) -> str:
        return raw if isinstance(raw, str) else ""

    return PodMeta(
        namespace=text(meta.get("namespace")),
        name=text(meta.get("name")),
        uid=text(meta.get("uid")),
        labels=strings(meta.get("labels")),
        annotations=strings(meta.get("annotations")),
        priority_class=text(priority_class),
        scheduling_group=spec.get("schedulingGroup"),
    )


_INTEGER = re.compile(r"[+-]?[0-9]+")


def count(text: str, path: str, *, minimum: int = 1, maximum: int = 10000) -> int:
    """A count written as a string (``"5"``, as Go's ``strconv.ParseInt`` reads it) within
    ``[minimum, maximum]``; raises :class:`~gangsched.translate.fields.TranslationError`
    naming ``path`` otherwise."""
    if not _INTEGER.fullmatch(text.strip()):
        raise fields.TranslationError(f'{path}: expected an integer, got "{text}"')
    return fields.integer(int(text), path, default=0, minimum=minimum, maximum=maximum)

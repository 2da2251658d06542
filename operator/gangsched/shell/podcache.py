"""Pod translation with a fast path for the changes a scheduler sees most.

Most pod events after the first only move the pod along: it is bound
(``spec.nodeName``), it starts or ends (``status.phase``), it is being deleted
(``metadata.deletionTimestamp``), preemption nominated a node for it
(``status.nominatedNodeName``). When nothing else that the translation reads has
changed (the rest of the spec, labels, annotations, creation time), the last
translation is reused with those four fields replaced, instead of parsing requests,
constraints and gang membership again. Anything else changed, or anything unusual in
those fields, takes the full translation.

Pods made from one template (a ReplicaSet's, a Job's) differ only in name, uid,
creation time, node, phase and deletion: the first such pod is translated in full, and
the others reuse its translation with those fields replaced (:class:`_Templates`).
Only valid pods in no pods-first gang and with no volumes are templates: nothing else
of such a translation depends on the name or uid (the gang dialects read labels,
annotations and the priority class only, and use the name only to make a gang's custom
resource; a generic ephemeral volume's claim is named after its pod).

Lean: per pod the cache keeps the translation (the core's :class:`Pod`: requests,
constraints, membership, phase, node) and one 64-bit fingerprint of what the
translation read, never the raw object. A pod's raw spec (containers, env, volumes,
probes...) and its annotations can weigh kilobytes; 100,000 of them must not stay in
memory for a comparison.

Fast: this runs for every pod of the first list (100,000 at the scale we measure), so
the fingerprint is a hash of the fields' ``marshal`` serialisation (a quarter of what
``json.dumps`` costs), a moved pod is made from its template's field values in one
constructor call (``dataclasses.replace`` looks its fields up every time), and
creation timestamps, which replicas often share, are parsed once.
"""

from __future__ import annotations

import dataclasses
import json
import marshal
import operator
from collections.abc import Mapping
from typing import Any, TypeGuard

from gangsched.core.values.model import Pod, PodPhase, PodUID
from gangsched.translate import times
from gangsched.translate.dialects import Membership
from gangsched.translate.pods import pod_with_membership
from gangsched.translate.priorities import NO_CLASSES

_PHASES = {phase.value: phase for phase in PodPhase}
_FIELDS = tuple(field.name for field in dataclasses.fields(Pod))
_VALUES = operator.attrgetter(*_FIELDS)
"""All of a pod's field values, in the constructor's order."""
_UID, _NAME, _CREATION, _NODE, _PHASE, _TERMINATING, _NOMINATED = (
    _FIELDS.index(name) for name in ("uid", "name", "creation", "node_name", "phase",
                                     "terminating", "nominated_node"))
_MARSHAL_VERSION = 2
"""The last ``marshal`` format without back-references and interning flags: equal
values serialise alike whatever their identity (the later formats write a repeated
object as a reference, which depends on which objects are shared)."""
_Moved = tuple[str | None, PodPhase, bool, str | None]
"""Node, phase, deletion under way, nominated node."""
_CREATED_LIMIT = 4096
"""Creation timestamps kept parsed (replicas made in the same second share theirs)."""


@dataclasses.dataclass(slots=True)
class _Last:
    fingerprint: int
    pod: Pod
    membership: Membership


def _template(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> int:
    """What the full translation reads but for the fields a template's user replaces: the
    namespace, the spec without ``nodeName``, labels, annotations and owner references
    (the controller decides the default spread constraints; replicas of one controller
    share them). Keys are not
    sorted: the API server writes an object's fields in one fixed order (Go structs, maps
    by key), and a reordering would only cost a full translation. Empty labels or
    annotations are the same as none (``omitempty``: a server may send either). Hashed
    (64 bits): the text can weigh kilobytes. Values that ``marshal`` cannot write (none
    come from JSON) are written as JSON, with ``repr`` for what JSON cannot write."""
    rest = dict(spec)
    rest.pop("nodeName", None)
    read = (meta.get("namespace"), rest, meta.get("labels") or None,
            meta.get("annotations") or None, meta.get("ownerReferences") or None)
    try:
        return hash(marshal.dumps(read, _MARSHAL_VERSION))
    except ValueError:
        return hash(json.dumps(read, separators=(",", ":"), default=repr))


def _fingerprint(template: int, meta: Mapping[str, Any]) -> int:
    """The template and the creation time, hashed: two versions of one pod with equal
    fingerprints translate alike but for node, phase and deletion (a 64-bit collision
    aside)."""
    return hash((template, str(meta.get("creationTimestamp"))))


class _Templates:
    """Translations by template (see :func:`_template`), at most ``limit``; when
    full, it starts over (templates are few; a cluster of unique pods gains nothing)."""

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self.by_text: dict[int, tuple[Pod, Membership]] = {}

    def get(self, text: int) -> tuple[Pod, Membership] | None:
        return self.by_text.get(text)

    def add(self, text: int, pod: Pod, membership: Membership) -> None:
        if (pod.invalid is not None or membership.definer is not None or membership.problems
                or membership.conflicts or pod.volumes.any):
            return  # (a generic ephemeral volume's claim is named after its pod)
        if len(self.by_text) >= self.limit:
            self.by_text.clear()
        self.by_text[text] = (pod, membership)


class PodTranslations:
    """``translate(obj)`` gives what ``pod_with_membership`` gives, faster on repeats."""

    def __init__(self, scheduler_names: frozenset[str]) -> None:
        self.scheduler_names = scheduler_names
        self.priorities = NO_CLASSES
        """For pods without ``spec.priority`` (see :mod:`gangsched.translate.priorities`)."""
        self._last: dict[str, _Last] = {}
        self._templates = _Templates()
        self._created: dict[str, float] = {}
        """Creation timestamps parsed (at most :data:`_CREATED_LIMIT`, then it starts over)."""
        self.fast = 0
        self.full = 0
        self.templated = 0

    def translate(self, obj: Mapping[str, Any]) -> tuple[Pod, Membership]:
        meta = obj.get("metadata")
        spec = obj.get("spec")
        status = obj.get("status") or {}
        if not (_is_map(meta) and _is_map(spec)):
            self.full += 1
            return pod_with_membership(obj, scheduler_names=self.scheduler_names,
                                       priorities=self.priorities)
        template = _template(meta, spec)
        fingerprint = _fingerprint(template, meta)
        uid = meta.get("uid")
        last = self._last.get(uid if isinstance(uid, str) else str(uid or ""))
        if _is_map(status):
            moved = self._moved(meta, spec, status)
            if moved is not None and last is not None and last.fingerprint == fingerprint:
                values = list(_VALUES(last.pod))
                pod = last.pod = _with(values, moved)
                self.fast += 1
                return pod, last.membership
            known = self._templates.get(template)
            name = meta.get("name")
            if (moved is not None and known is not None and isinstance(uid, str) and uid
                    and isinstance(name, str)):
                values = list(_VALUES(known[0]))
                values[_UID], values[_NAME] = PodUID(uid), name
                values[_CREATION] = self._creation(meta.get("creationTimestamp"))
                pod = _with(values, moved)
                self._last[uid] = _Last(fingerprint, pod, known[1])
                self.templated += 1
                return pod, known[1]
        pod, membership = pod_with_membership(obj, scheduler_names=self.scheduler_names,
                                              priorities=self.priorities)
        self.full += 1
        if pod.uid:
            self._last[pod.uid] = _Last(fingerprint, pod, membership)
            self._templates.add(template, pod, membership)
        return pod, membership

    def _creation(self, text: object) -> float:
        """``creationTimestamp`` as the full translation reads it (0 if missing or
        invalid); each text is parsed once."""
        if not isinstance(text, str):
            return times.parse_time(text) or 0.0
        created = self._created.get(text)
        if created is None:
            if len(self._created) >= _CREATED_LIMIT:
                self._created.clear()
            created = self._created[text] = times.parse_time(text) or 0.0
        return created

    @staticmethod
    def _moved(meta: Mapping[str, Any], spec: Mapping[str, Any],
               status: Mapping[str, Any]) -> _Moved | None:
        """Node, phase and deletion as the full translation reads them; None for anything
        unusual there (which takes the full translation)."""
        node = spec.get("nodeName")
        raw_phase = status.get("phase")
        if not (node is None or isinstance(node, str)):
            return None
        if raw_phase is None or raw_phase == "":
            phase = PodPhase.PENDING
        elif isinstance(raw_phase, str):
            phase = _PHASES.get(raw_phase, PodPhase.UNKNOWN)
        else:
            return None
        if status.get("resourceClaimStatuses") is not None:
            return None  # claims made from templates: read them again
        nominated = status.get("nominatedNodeName")
        if not (nominated is None or isinstance(nominated, str)):
            return None
        return (node or None, phase, meta.get("deletionTimestamp") is not None,
                nominated or None)

    def forget(self, uid: str) -> None:
        self._last.pop(uid, None)


def _is_map(value: object) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, at once for the dicts JSON gives."""
    return type(value) is dict or isinstance(value, Mapping)


def _with(values: list[Any], moved: _Moved) -> Pod:
    """The pod of these field values (in the constructor's order), moved along."""
    values[_NODE], values[_PHASE], values[_TERMINATING], values[_NOMINATED] = moved
    return Pod(*values)

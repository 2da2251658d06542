"""Koordinator: gangs from ``gang.scheduling.koordinator.sh/*`` annotations and the
``pod-group.scheduling.sigs.k8s.io`` labels.

Read as Koordinator's gang plugin reads them (its design doc, "Annotation way"):

* the gang's name: label ``pod-group.scheduling.sigs.k8s.io``, label
  ``pod-group.scheduling.sigs.k8s.io/name``, annotation ``gang.scheduling.koordinator.sh/name``,
  the first one set. The pod joins the gangsched PodGroup :func:`~.dns_name` of it, in
  its namespace;
* ``min-available`` (label ``pod-group.scheduling.sigs.k8s.io/min-available`` or the
  annotation) makes the pod carry the gang's definition: the PodGroup is created from it
  with ``minMember``. Without it the pod joins a PodGroup that must exist (Koordinator's
  "CRD way");
* ``waiting-time``, a Go duration (``3600s``, ``1h``), becomes ``scheduleTimeoutSeconds``
  (rounded up to whole seconds; default 600, as Koordinator's), with Koordinator's timer
  (``onTimeout: Requeue``, ``waitForMinMember: true``): no member is placed before
  ``min-available`` pods exist (PreFilter: "gang child pod not collect enough"), and a
  timeout sends the waiting members back to the queue (Unreserve rejects the gang
  group), to be tried again;
* ``total-number`` becomes ``totalNumber`` (at least ``min-available``), ``mode``
  (``Strict``/``NonStrict``) ``mode``, and ``groups`` (a JSON list of
  ``"namespace/name"``, across namespaces) ``gangGroup``;
* ``match-policy`` (``once-satisfied``, ``waiting-and-running``, ``only-waiting``) is
  checked but changes nothing: gangsched counts assumed and bound members, and schedules
  the members after a satisfied gang one by one (Koordinator's ``once-satisfied``).

:func:`options` reads the same annotations on another scheduler's PodGroup object, where
Koordinator's doc puts ``total-number``, ``mode`` and ``groups`` in the CRD way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from gangsched.core.values import model
from gangsched.translate import fields
from gangsched.translate.dialects import (
    KOORDINATOR,
    Claim,
    Definition,
    PodMeta,
    annotation_path,
    count,
    dns_name,
    first,
    goduration,
    podgroup_definition,
)

PREFIX = "gang.scheduling.koordinator.sh/"
ANN_NAME = f"{PREFIX}name"
ANN_MIN_AVAILABLE = f"{PREFIX}min-available"
ANN_WAITING_TIME = f"{PREFIX}waiting-time"
ANN_TOTAL_NUMBER = f"{PREFIX}total-number"
ANN_MODE = f"{PREFIX}mode"
ANN_GROUPS = f"{PREFIX}groups"
ANN_MATCH_POLICY = f"{PREFIX}match-policy"
LABEL_POD_GROUP = "pod-group.scheduling.sigs.k8s.io"
LABEL_POD_GROUP_NAME = f"{LABEL_POD_GROUP}/name"
LABEL_MIN_AVAILABLE = f"{LABEL_POD_GROUP}/min-available"
ANN_ALIAS_MATCH_POLICY = f"{LABEL_POD_GROUP}/match-policy"
SCHEDULER_NAME = "koord-scheduler"

NAME_KEYS = (
    ("label", LABEL_POD_GROUP),
    ("label", LABEL_POD_GROUP_NAME),
    ("annotation", ANN_NAME),
)
MIN_KEYS = (("label", LABEL_MIN_AVAILABLE), ("annotation", ANN_MIN_AVAILABLE))
MATCH_POLICIES = ("once-satisfied", "waiting-and-running", "only-waiting")
MAX_TIMEOUT = 2**31 - 1

_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
GroupRef = Callable[[str, str], str]
"""``(namespace, name) -> "namespace/name"`` of a gangGroup member, as the caller keys it."""


def _mode(text: str, path: str) -> str:
    for mode in model.GangMode:
        if mode.value.casefold() == text.strip().casefold():
            return mode.value
    accepted = ", ".join(mode.value for mode in model.GangMode)
    raise fields.TranslationError(f'{path}: unknown mode "{text}" (accepted: {accepted})')


def _waiting_time(text: str, path: str) -> int:
    try:
        nanoseconds = goduration.parse(text.strip())
    except goduration.DurationError as error:
        raise fields.TranslationError(
            f'{path}: invalid duration "{text}": {error} (a Go duration such as "600s" or "1h")'
        ) from None
    seconds = goduration.to_seconds(nanoseconds)
    if nanoseconds <= 0:
        raise fields.TranslationError(f'{path}: must be a positive duration, got "{text}"')
    return min(seconds, MAX_TIMEOUT)


def _groups(text: str, path: str, ref: GroupRef) -> list[str]:
    if not text.strip():
        return []
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise fields.TranslationError(
            f"{path}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg} "
            '(expected a list such as ["namespace-a/gang-a", "namespace-b/gang-b"])'
        ) from None
    items = fields.sequence(raw, path) if raw is not None else ()
    result: list[str] = []
    for index, item in enumerate(items):
        item_path = f"{path}[{index}]"
        entry = fields.string(item, item_path)
        namespace, sep, name = entry.partition("/")
        if not sep or not name or len(namespace) > 63 or not _NAMESPACE.fullmatch(namespace):
            raise fields.TranslationError(
                f'{item_path}: invalid gang reference "{entry}": expected namespace/name'
            )
        key = ref(namespace, name)
        if key not in result:
            result.append(key)
    return result


def _read(
    problems: fields.Problems, reader: Callable[[str, str], Any], text: str, path: str
) -> Any:
    return problems.read(lambda: reader(text, path), None)


def options(
    annotations: Mapping[str, str],
    problems: fields.Problems,
    ref: GroupRef,
    *,
    waiting_time: bool = True,
) -> dict[str, Any]:
    """The optional gang annotations as CRD fields: ``scheduleTimeoutSeconds`` (only with
    ``waiting_time``), ``totalNumber``, ``mode`` and ``gangGroup`` (each member keyed by
    ``ref``); only those given. Errors go to ``problems`` with their paths; an unknown
    ``match-policy`` is one."""
    spec: dict[str, Any] = {}
    readers: list[tuple[str, str, Callable[[str, str], Any]]] = [
        ("totalNumber", ANN_TOTAL_NUMBER, lambda text, path: count(text, path)),
        ("mode", ANN_MODE, _mode),
        ("gangGroup", ANN_GROUPS, lambda text, path: _groups(text, path, ref)),
    ]
    if waiting_time:
        readers.insert(0, ("scheduleTimeoutSeconds", ANN_WAITING_TIME, _waiting_time))
    for field, key, reader in readers:
        text = annotations.get(key)
        if text is None:
            continue
        value = _read(problems, reader, text, annotation_path(key))
        if value is not None and value != []:
            spec[field] = value
    for key in (ANN_MATCH_POLICY, ANN_ALIAS_MATCH_POLICY):
        text = annotations.get(key)
        if text and text not in MATCH_POLICIES:
            problems.add(
                f'{annotation_path(key)}: unknown match policy "{text}" '
                f"(accepted: {', '.join(MATCH_POLICIES)})"
            )
    return spec


def _spec(meta: PodMeta, problems: fields.Problems) -> dict[str, Any]:
    """The PodGroup spec the pod states (without queue); errors go to ``problems``."""
    text, source, _ = first(meta, MIN_KEYS)
    spec: dict[str, Any] = {}
    if text is not None:
        min_member = problems.read(lambda: count(text, source), None)
        if min_member is not None:
            spec["minMember"] = min_member

    def ref(namespace: str, name: str) -> str:
        return f"{namespace}/{dns_name(name)}"

    spec.update(options(meta.annotations, problems, ref))
    total = spec.get("totalNumber")
    if total is not None and "minMember" in spec and total < spec["minMember"]:
        problems.add(
            f"{annotation_path(ANN_TOTAL_NUMBER)}: must be at least min-available "
            f"({spec['minMember']}), got {total}"
        )
    return spec


_SOURCES = {
    "scheduleTimeoutSeconds": annotation_path(ANN_WAITING_TIME),
    "totalNumber": annotation_path(ANN_TOTAL_NUMBER),
    "mode": annotation_path(ANN_MODE),
    "gangGroup": annotation_path(ANN_GROUPS),
}


def read(meta: PodMeta) -> Claim | None:
    """Koordinator's claim on a pod, or ``None`` when it names no Koordinator gang.

    ``terms`` are the values that could be read, for comparison with other dialects; the
    errors in them are reported when the PodGroup is made (:func:`define`). Conflicts:
    name keys or min-available keys that disagree.
    """
    name, source, name_disagree = first(meta, NAME_KEYS)
    if name is None:
        return None
    min_text, min_source, min_disagree = first(meta, MIN_KEYS)
    spec = _spec(meta, fields.Problems())
    terms = {field: (value, _SOURCES.get(field, min_source)) for field, value in spec.items()}
    conflicts = [f"Koordinator gang name: {text}" for text in name_disagree]
    conflicts += [f"Koordinator min-available: {text}" for text in min_disagree]
    return Claim(
        dialect=KOORDINATOR,
        source=source,
        pod_group=model.GroupKey(f"{meta.namespace}/{dns_name(name)}"),
        defines=min_text is not None,
        terms=terms,
        conflicts=tuple(conflicts),
    )


def define(meta: PodMeta, queue: str | None, queue_path: str) -> Definition:
    """The PodGroup a pod with ``min-available`` asks for: named :func:`dns_name` of the
    gang's name, with ``minMember`` and the optional fields, in ``queue`` (read from
    ``queue_path``; omitted when ``None``, so the CRD's ``default`` applies). ``error``
    names every problem with its path: a min-available that is not an integer from 1 to
    10000, a bad duration, an unknown mode, bad groups JSON, a total below the minimum.
    """
    name, _, _ = first(meta, NAME_KEYS)
    problems = fields.Problems()
    spec = _spec(meta, problems)
    spec.update(onTimeout="Requeue", waitForMinMember=True)  # Koordinator's timer
    return podgroup_definition(meta, dns_name(name or ""), KOORDINATOR, spec, problems,
                               queue, queue_path)

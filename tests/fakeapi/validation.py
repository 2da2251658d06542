"""Object validation with the real API server's rules and messages.

Faithful: DNS-1123 subdomain names (≤253) for most kinds, DNS-1123 labels (≤63)
for namespaces, ``plural.group`` for CRDs; label keys as qualified names
(optional DNS-subdomain prefix ≤253 + ``/`` + name ≤63), label values (≤63, may be
empty), annotation keys (same rules, case-insensitive), annotations ≤ 256 KiB in
total, ownerReferences (required fields, a single controller), finalizer names,
minimal per-kind checks (CRD, Namespace, PriorityClass, PodDisruptionBudget), and
``events.k8s.io/v1`` Events as the real server checks them (required fields, lengths,
the deprecated fields unset, a valid series, immutable fields on update).
Violations come back as ``(field, message)`` pairs that :func:`errors.invalid`
turns into a 422 ``Invalid`` Status. Simplified: no CEL rules, no full schema of
built-in kinds (pods are checked in :mod:`fakeapi.pods`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Causes = list[tuple[str, str]]

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL_RE = re.compile(_LABEL)
_DNS_SUBDOMAIN_RE = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_QUALIFIED_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
MAX_ANNOTATIONS_BYTES = 256 * 1024

DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    r"used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def dns_subdomain_problem(name: str) -> str | None:
    if len(name) > 253:
        return "must be no more than 253 characters"
    if not _DNS_SUBDOMAIN_RE.fullmatch(name):
        return DNS_SUBDOMAIN_MSG
    return None


def dns_label_problem(name: str) -> str | None:
    if len(name) > 63:
        return "must be no more than 63 characters"
    if not _DNS_LABEL_RE.fullmatch(name):
        return DNS_LABEL_MSG
    return None


def qualified_name_problem(key: str) -> str | None:
    """Label/annotation key rules: ``[prefix/]name``; ``None`` when valid."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return "prefix part must be non-empty"
    if prefix:
        problem = dns_subdomain_problem(prefix)
        if problem:
            return f"prefix part {problem}"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_RE.fullmatch(name):
        return QUALIFIED_MSG
    return None


def label_value_problem(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _LABEL_VALUE_RE.fullmatch(value):
        return LABEL_VALUE_MSG
    return None


def _invalid(value: Any, message: str) -> str:
    return f"Invalid value: {_quote(value)}: {message}"


def _quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def name_problem(kind: str, name: str) -> str | None:
    if kind == "Namespace":
        return dns_label_problem(name)
    return dns_subdomain_problem(name)


def validate_metadata(kind: str, obj: dict[str, Any], *, namespaced: bool) -> Causes:
    """Generic ``ObjectMeta`` rules for any kind; an empty list when valid."""
    causes: Causes = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [("metadata", "Required value")]
    name = meta.get("name")
    if not name:
        causes.append(("metadata.name", "Required value: name or generateName is required"))
    elif not isinstance(name, str):
        causes.append(("metadata.name", _invalid(name, "must be a string")))
    else:
        problem = name_problem(kind, name)
        if problem:
            causes.append(("metadata.name", _invalid(name, problem)))
    if namespaced and not meta.get("namespace"):
        causes.append(("metadata.namespace", "Required value"))
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        causes.append(("metadata.labels", _invalid(labels, "must be a map")))
        labels = {}
    for key, value in labels.items():
        problem = qualified_name_problem(key)
        if problem:
            causes.append(("metadata.labels", _invalid(key, problem)))
        if not isinstance(value, str):
            causes.append((f"metadata.labels[{key}]", _invalid(value, "must be a string")))
            continue
        problem = label_value_problem(value)
        if problem:
            causes.append(("metadata.labels", _invalid(value, problem)))
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, dict):
        causes.append(("metadata.annotations", _invalid(annotations, "must be a map")))
        annotations = {}
    total = 0
    for key, value in annotations.items():
        problem = qualified_name_problem(key.lower())
        if problem:
            causes.append(("metadata.annotations", _invalid(key, problem)))
        if not isinstance(value, str):
            causes.append((f"metadata.annotations[{key}]", _invalid(value, "must be a string")))
            continue
        total += len(key) + len(value)
    if total > MAX_ANNOTATIONS_BYTES:
        causes.append(("metadata.annotations",
                       f"Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes"))
    controllers = 0
    for i, ref in enumerate(meta.get("ownerReferences") or ()):
        for field in ("apiVersion", "kind", "name", "uid"):
            if not isinstance(ref, dict) or not ref.get(field):
                causes.append((f"metadata.ownerReferences[{i}].{field}", "Required value"))
        if isinstance(ref, dict) and ref.get("controller"):
            controllers += 1
    if controllers > 1:
        causes.append(("metadata.ownerReferences",
                       "Invalid value: Only one reference can have Controller set to true"))
    for i, fin in enumerate(meta.get("finalizers") or ()):
        problem = qualified_name_problem(fin) if isinstance(fin, str) else "must be a string"
        if problem:
            causes.append((f"metadata.finalizers[{i}]", _invalid(fin, problem)))
    return causes


# --- per-kind rules ------------------------------------------------------------------------


def _crd(obj: dict[str, Any], old: dict[str, Any] | None) -> Causes:
    causes: Causes = []
    spec = obj.get("spec") or {}
    group, names = spec.get("group"), spec.get("names") or {}
    if not group:
        causes.append(("spec.group", "Required value"))
    for field in ("plural", "kind"):
        if not names.get(field):
            causes.append((f"spec.names.{field}", "Required value"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(("spec.scope",
                       _invalid(spec.get("scope"), 'must be "Cluster" or "Namespaced"')))
    versions = spec.get("versions") or []
    if not versions:
        causes.append(("spec.versions", "Invalid value: must have at least one version"))
    if sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(("spec.versions", "Invalid value: must have exactly one version "
                                        "marked as storage version"))
    for i, ver in enumerate(versions):
        if not (ver.get("schema") or {}).get("openAPIV3Schema"):
            causes.append((f"spec.versions[{i}].schema.openAPIV3Schema",
                           "Required value: schemas are required"))
    expected = f"{names.get('plural')}.{group}"
    name = obj["metadata"].get("name")
    if name != expected:
        causes.append(("metadata.name", _invalid(name, 'must be spec.names.plural+"."+spec.group')))
    if old is not None and (old.get("spec") or {}).get("scope") != spec.get("scope"):
        causes.append(("spec.scope", _invalid(spec.get("scope"), "field is immutable")))
    return causes


def _priority_class(obj: dict[str, Any], old: dict[str, Any] | None) -> Causes:
    value = obj.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        return [("value", "Required value")]
    if old is not None and old.get("value") != value:
        return [("value", "Forbidden: may not be changed in an update.")]
    if value > 1_000_000_000 and not obj["metadata"].get("name", "").startswith("system-"):
        return [("value", "Forbidden: maximum allowed value of a user defined priority "
                          "is 1000000000")]
    return []


def _pdb(obj: dict[str, Any], old: dict[str, Any] | None) -> Causes:
    spec = obj.get("spec") or {}
    if "minAvailable" in spec and "maxUnavailable" in spec:
        return [("spec", "Invalid value: minAvailable and maxUnavailable cannot be both set")]
    return []


def _namespace(obj: dict[str, Any], old: dict[str, Any] | None) -> Causes:
    return []


_EVENT_LIMITS = (("reportingInstance", "reportingInstance", 128), ("action", "action", 128),
                 ("reason", "reason", 128))
_EVENT_IMMUTABLE = (("regarding", "involvedObject"), ("reason", "reason"), ("note", "message"),
                    ("deprecatedSource", "source"), ("type", "type"),
                    ("eventTime", "eventTime"), ("action", "action"), ("related", "related"),
                    ("reportingController", "reportingController"),
                    ("reportingInstance", "reportingInstance"))


def _event_v1(obj: dict[str, Any], old: dict[str, Any] | None) -> Causes:
    """``events.k8s.io/v1`` Events as ``ValidateEventCreate`` / ``ValidateEventUpdate``
    check them (field paths as the real server names them, after the internal type)."""
    causes: Causes = []
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    regarding = obj.get("regarding") or {}
    if not regarding.get("namespace") and namespace not in ("default", "kube-system"):
        causes.append(("involvedObject.namespace", "does not match event.namespace"))
    controller = obj.get("reportingController") or ""
    if not controller:
        causes.append(("reportingController", "Required value"))
    else:
        problem = qualified_name_problem(controller)
        if problem:
            causes.append(("reportingController", problem))
    for key, path, limit in _EVENT_LIMITS:
        value = obj.get(key) or ""
        if not value:
            causes.append((path, "Required value"))
        elif len(value) > limit:
            causes.append((path, f"can have at most {limit} characters"))
    if len(obj.get("note") or "") > 1024:
        causes.append(("message", "can have at most 1024 characters"))
    series = obj.get("series")
    if series is not None and (old is None or series != old.get("series")):
        if not isinstance(series, dict) or int(series.get("count") or 0) < 2:
            causes.append(("series.count", "should be at least 2"))
        if not isinstance(series, dict) or not series.get("lastObservedTime"):
            causes.append(("series.lastObservedTime", "Required value"))
    if old is not None:
        for key, path in _EVENT_IMMUTABLE:
            if obj.get(key) != old.get(key):
                causes.append((path, "field is immutable"))
        return causes
    if not obj.get("eventTime"):
        causes.append(("eventTime", "Required value"))
    if obj.get("type") not in ("Normal", "Warning"):
        causes.append(("type", f"has invalid value: {obj.get('type') or ''}"))
    for key, path in (("deprecatedFirstTimestamp", "firstTimestamp"),
                      ("deprecatedLastTimestamp", "lastTimestamp"),
                      ("deprecatedCount", "count"), ("deprecatedSource", "source")):
        if obj.get(key):
            causes.append((path, "needs to be unset"))
    return causes


KIND_RULES: dict[tuple[str, str], Callable[[dict[str, Any], dict[str, Any] | None], Causes]] = {
    ("events.k8s.io", "Event"): _event_v1,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
    ("scheduling.k8s.io", "PriorityClass"): _priority_class,
    ("policy", "PodDisruptionBudget"): _pdb,
    ("", "Namespace"): _namespace,
}

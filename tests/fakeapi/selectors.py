"""Label and field selectors, parsed once per request and matched per object.

Faithful to ``k8s.io/apimachinery`` label selector syntax: ``k=v``, ``k==v``,
``k!=v`` (also matches objects without ``k``), ``k in (a,b)``, ``k notin (a,b)``
(also matches objects without ``k``), ``k``, ``!k``, ``k>n``, ``k<n``; keys and values
are validated like labels (400 ``BadRequest`` otherwise). Field selectors support
``=``, ``==`` and ``!=`` over the fields the real server indexes per kind (400
``field label not supported: ...`` for the rest); a missing field reads as ``""``,
so ``spec.nodeName=`` selects unbound pods. ``LabelSelector`` objects
(``matchLabels`` + ``matchExpressions``) are matched for PodDisruptionBudgets.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from fakeapi import errors, validation

Labels = Mapping[str, str]


@dataclasses.dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Labels) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return present and value in self.values
        if self.op == "in":
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if not present or value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        bound = int(next(iter(self.values)))
        return number > bound if self.op == "gt" else number < bound


@dataclasses.dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False
    """True for a nil ``LabelSelector`` object: it selects nothing."""

    def matches(self, labels: Labels | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.nothing


EVERYTHING = LabelSelector()


def _bad(detail: str) -> errors.ApiError:
    return errors.bad_request(f"unable to parse requirement: {detail}")

_TOKEN = re.compile(r"\s*(?:(!=|==|=|\(|\)|,|!|<|>)|([^\s!=(),<>]+))")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _bad(f"unexpected input {text[pos:]!r}")
        out.append(m.group(1) or m.group(2))
        pos = m.end()
    return out


def _check_key(key: str) -> None:
    problem = validation.qualified_name_problem(key)
    if problem:
        raise _bad(f"invalid label key {key!r}: {problem}")


def _check_value(value: str) -> None:
    problem = validation.label_value_problem(value)
    if problem:
        raise errors.bad_request(
            f"unable to parse requirement: invalid label value: {value!r}: {problem}")


def parse_labels(text: str | None) -> LabelSelector:
    """Parse a ``labelSelector`` query value; 400 ``BadRequest`` on bad syntax."""
    if not text or not text.strip():
        return EVERYTHING
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def take() -> str:
        nonlocal i
        if i >= len(toks):
            raise _bad(f"unexpected end of {text!r}")
        i += 1
        return toks[i - 1]

    def peek() -> str | None:
        return toks[i] if i < len(toks) else None

    while i < len(toks):
        if peek() == "!":
            take()
            key = take()
            _check_key(key)
            reqs.append(Requirement(key, "!"))
        else:
            key = take()
            _check_key(key)
            op = peek()
            if op in (None, ","):
                reqs.append(Requirement(key, "exists"))
            elif op in ("=", "==", "!="):
                take()
                value = "" if peek() in (None, ",") else take()
                _check_value(value)
                reqs.append(Requirement(key, "!=" if op == "!=" else "=", frozenset([value])))
            elif op in ("in", "notin"):
                take()
                if take() != "(":
                    raise _bad(f"expected '(' in {text!r}")
                values: set[str] = set()
                while True:
                    tok = take()
                    if tok == ")":
                        break
                    if tok == ",":
                        continue
                    _check_value(tok)
                    values.add(tok)
                reqs.append(Requirement(key, op, frozenset(values)))
            elif op in ("<", ">"):
                take()
                bound = take()
                if not re.fullmatch(r"-?\d+", bound):
                    raise _bad(f"{bound!r} is not an integer")
                reqs.append(Requirement(key, "gt" if op == ">" else "lt", frozenset([bound])))
            else:
                raise _bad(f"unexpected {op!r} in {text!r}")
        if i < len(toks):
            if take() != ",":
                raise _bad(f"expected ',' in {text!r}")
            if i >= len(toks):
                raise _bad(f"trailing ',' in {text!r}")
    return LabelSelector(tuple(reqs))


def from_object(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``metav1.LabelSelector`` object; ``None`` selects nothing, ``{}`` all."""
    if selector is None:
        return LabelSelector(nothing=True)
    labels = selector.get("matchLabels") or {}
    reqs = [Requirement(k, "=", frozenset([v])) for k, v in labels.items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in selector.get("matchExpressions") or ():
        if expr.get("operator") not in ops:
            raise errors.bad_request(
                f"{expr.get('operator')!r} is not a valid label selector operator")
        values = frozenset(expr.get("values") or ())
        reqs.append(Requirement(expr["key"], ops[expr["operator"]], values))
    return LabelSelector(tuple(reqs))


# --- field selectors ---------------------------------------------------------------------

COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
FIELDS_BY_KIND: dict[str, frozenset[str]] = {
    "Pod": frozenset({
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
    }),
    "Node": frozenset({"spec.unschedulable"}),
    "ResourceSlice": frozenset({"spec.nodeName", "spec.driver"}),
    "Namespace": frozenset({"status.phase"}),
    "Event": frozenset({
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
        "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
        "reportingController",
    }),
}


@dataclasses.dataclass(frozen=True, slots=True)
class FieldSelector:
    terms: tuple[tuple[str, bool, str], ...] = ()
    """(path, equal, value): ``equal`` is False for ``!=``."""

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, path) == value) == equal for path, equal, value in self.terms)

    @property
    def empty(self) -> bool:
        return not self.terms


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a dotted field (``""`` if absent; booleans as ``true``/``false``)."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, escaped = [], [], False
    for ch in text:
        if escaped:
            cur.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_fields(text: str | None, kind: str, extra: tuple[str, ...] = ()) -> FieldSelector:
    """Parse a ``fieldSelector``; 400 for bad syntax or a field the kind does not index."""
    if not text or not text.strip():
        return FieldSelector()
    allowed = COMMON_FIELDS | FIELDS_BY_KIND.get(kind, frozenset()) | frozenset(extra)
    terms = []
    for term in _split_unescaped(text, ","):
        m = re.fullmatch(r"\s*([^!=\s]+)\s*(!=|==|=)(.*)", term)
        if m is None:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        path, op, value = m.group(1), m.group(2), m.group(3).strip()
        if path not in allowed:
            raise errors.bad_request(f'field label not supported: {path}')
        terms.append((path, op != "!=", value))
    return FieldSelector(tuple(terms))


ALL_FIELDS = FieldSelector()
"""The empty field selector: matches every object."""

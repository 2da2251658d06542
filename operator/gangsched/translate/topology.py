"""A gang's topology request: our own ``topology`` field, and the rules every dialect shares.

A topology request names *levels* by node-label keys (``topology.gangsched.io/rack``): a
domain of a level is the set of nodes with one value of that label. The core's value is
:class:`~gangsched.core.values.model.TopologyRequest`; this module reads it from the CRD field
and checks it, so that every dialect (:mod:`gangsched.translate.dialects.kueue`,
:mod:`~gangsched.translate.dialects.kai`, :mod:`~gangsched.translate.dialects.volcano`)
ends in the same checks and the same messages.

Our own field, on an Application's task group and on a PodGroup's ``spec``::

    topology:
      required: topology.gangsched.io/block        # every member in one block, or none
      preferred: [topology.gangsched.io/rack]      # smallest first: a rack if one fits
      sliceKey: kubernetes.io/hostname             # with sliceSize: slices of 4 members
      sliceSize: 4                                 #   that each share one node

The rules (:func:`build`), each broken one a message with its path:

* every key is a valid label key: an optional DNS-subdomain prefix and ``/``, then a name
  of at most 63 characters of alphanumerics, ``-``, ``_`` and ``.``, starting and ending
  with an alphanumeric (what the API server admits as a node label key);
* ``preferred`` has at most :data:`MAX_LEVELS` keys, none repeated, and none equal to
  ``required`` (the escalation stops at ``required`` anyway);
* ``sliceKey`` and ``sliceSize`` come together; ``sliceSize`` is at least 1 and, when the
  gang's size is known, at most that size. Slices are taken in member order; the last one
  holds what remains when the size is not a multiple of ``sliceSize``.

What the levels mean is for the cluster to say: gangsched does not read a Topology
object. A key's order among the others is what the request says (``preferred`` smallest
first; ``sliceKey`` a level inside the gang's domain).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.core.values import model
from gangsched.translate import fields

RACK = "topology.gangsched.io/rack"
"""The node label of a node's rack, as the examples, the simulator and Volcano's tier 1 use
it (any key works in a request; these are the conventional ones)."""
BLOCK = "topology.gangsched.io/block"
"""The node label of a node's block: the racks behind one spine switch."""
ZONE = "topology.kubernetes.io/zone"
"""The well-known zone label."""

MAX_LEVELS = 8
"""At most this many ``preferred`` keys (real hierarchies have three or four levels)."""

MAX_SLICE_SIZE = 10000

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_PREFIX = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def label_key(text: str, path: str) -> str:
    """``text`` when it is a valid node-label key (see the module docstring), else raise
    :class:`~gangsched.translate.fields.TranslationError` naming ``path`` and the rule."""
    prefix, slash, name = text.rpartition("/")
    if not text:
        raise fields.TranslationError(f"{path}: must be a node-label key, got an empty string")
    if slash and (not prefix or len(prefix) > 253 or not _PREFIX.fullmatch(prefix)):
        raise fields.TranslationError(
            f'{path}: invalid label key "{text}": the prefix before "/" must be a DNS '
            "subdomain (lower case alphanumerics, '-' and '.', at most 253 characters)"
        )
    if len(name) > 63 or not _NAME.fullmatch(name):
        raise fields.TranslationError(
            f'{path}: invalid label key "{text}": the name must be at most 63 characters '
            "of alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric"
        )
    return text


def build(
    *,
    required: tuple[str, str] | None = None,
    preferred: Sequence[tuple[str, str]] = (),
    slice_key: tuple[str, str] | None = None,
    slice_size: tuple[int, str] | None = None,
    members: int | None = None,
    problems: fields.Problems,
) -> model.TopologyRequest:
    """The request of the given ``(value, path)`` pairs after the shared checks.

    ``members`` is the gang's size when known (the upper bound of ``slice_size``). Every
    broken rule is added to ``problems``; the result then drops what was wrong (it is
    only used for a gang that is already invalid).
    """
    required_key = _key(required, problems)
    preferred_keys: list[str] = []
    if len(preferred) > MAX_LEVELS:
        problems.add(
            f"{preferred[0][1].rsplit('[', 1)[0]}: too many preferred levels: "
            f"{len(preferred)} (at most {MAX_LEVELS})"
        )
    for value, path in preferred[:MAX_LEVELS]:
        key = _key((value, path), problems)
        if key is None:
            continue
        if key in preferred_keys:
            problems.add(f'{path}: duplicate level "{key}"')
        elif key == required_key:
            problems.add(
                f'{path}: "{key}" is also the required level; list only the levels '
                "below it (smallest first)"
            )
        else:
            preferred_keys.append(key)
    slice_level = _key(slice_key, problems)
    size = 0
    if slice_size is not None:
        size_value, size_path = slice_size
        if size_value < 1:
            problems.add(f"{size_path}: must be at least 1, got {size_value}")
        elif members is not None and size_value > members:
            problems.add(
                f"{size_path}: must not be greater than the gang's size {members}, "
                f"got {size_value}"
            )
        else:
            size = size_value
    if slice_key is not None and slice_size is None:
        problems.add(f"{_size_path(slice_key[1])}: required when a slice level is given")
    if slice_size is not None and slice_key is None:
        problems.add(f"{slice_size[1]}: given without a slice level")
    if slice_level is None or size == 0:
        slice_level, size = None, 0
    return model.TopologyRequest(
        required=required_key,
        preferred=tuple(preferred_keys),
        slice_key=slice_level,
        slice_size=size,
    )


def _size_path(key_path: str) -> str:
    """Where the size of a slice given at ``key_path`` belongs, for messages."""
    if key_path.endswith(".sliceKey"):
        return key_path[: -len("sliceKey")] + "sliceSize"
    return key_path + " (slice size)"


def _key(pair: tuple[str, str] | None, problems: fields.Problems) -> str | None:
    if pair is None:
        return None
    value, path = pair
    return problems.read(lambda: label_key(value, path), None)


def from_k8s(raw: object, path: str, problems: fields.Problems, *,
             members: int | None = None) -> model.TopologyRequest:
    """Our own ``topology`` field at ``path`` (``None``: no request; a field that is
    ``null`` is absent). Wrong JSON types and
    the rules of :func:`build` are recorded in ``problems`` with their paths; unknown
    fields are ignored (the CRD's schema prunes them)."""
    before = len(problems.messages)
    obj: Mapping[str, Any] = problems.read(lambda: fields.mapping(raw, path), {})
    required = problems.read(
        lambda: fields.string(obj.get("required"), f"{path}.required"), ""
    )
    items: Sequence[Any] = problems.read(
        lambda: fields.sequence(obj.get("preferred"), f"{path}.preferred"), ()
    )
    preferred: list[tuple[str, str]] = []
    for index, item in enumerate(items):
        item_path = f"{path}.preferred[{index}]"
        if isinstance(item, str):
            preferred.append((item, item_path))
        else:
            problems.add(str(fields.wrong_type("a string", item, item_path)))
    slice_key = problems.read(lambda: fields.string(obj.get("sliceKey"), f"{path}.sliceKey"), "")
    slice_size: int | None = None
    if obj.get("sliceSize") is not None:
        slice_size = problems.read(
            lambda: fields.integer(obj.get("sliceSize"), f"{path}.sliceSize", default=0), None
        )
    if len(problems.messages) > before:
        return model.NO_TOPOLOGY
    return build(
        required=(required, f"{path}.required") if obj.get("required") is not None else None,
        preferred=preferred,
        slice_key=(slice_key, f"{path}.sliceKey") if obj.get("sliceKey") is not None else None,
        slice_size=(slice_size, f"{path}.sliceSize") if slice_size is not None else None,
        members=members,
        problems=problems,
    )


def to_k8s(request: model.TopologyRequest) -> dict[str, Any]:
    """The CRD's ``topology`` field for ``request`` (only the fields it sets; ``{}`` for
    :data:`~gangsched.core.values.model.NO_TOPOLOGY`)."""
    result: dict[str, Any] = {}
    if request.required is not None:
        result["required"] = request.required
    if request.preferred:
        result["preferred"] = list(request.preferred)
    if request.slice_key is not None:
        result["sliceKey"] = request.slice_key
        result["sliceSize"] = request.slice_size
    return result


def describe(request: model.TopologyRequest) -> str:
    """One line for status, Events and the printer column: ``required block, preferred
    rack, slices of 4 per hostname``; ``""`` for no request."""
    parts: list[str] = []
    if request.required is not None:
        parts.append(f"required {request.required}")
    if request.preferred:
        parts.append("preferred " + " > ".join(request.preferred))
    if request.slice_key is not None:
        parts.append(f"slices of {request.slice_size} per {request.slice_key}")
    return ", ".join(parts)

"""Server-side printing: a ``meta.k8s.io/v1`` Table for custom resources, as kubectl asks.

``kubectl get`` sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` (then
v1beta1, then plain JSON). For a custom resource the real server answers with a Table
built by apiextensions-apiserver's ``tableconvertor``: a ``Name`` column (format
``name``), then the version's ``additionalPrinterColumns`` in order, each with its
``type``, ``format``, ``priority`` and ``description`` (``Custom resource definition column
(in JSONPath format): <path>`` when it has none); a version with no columns gets the
default ``Age`` column (``serveDefaultColumnsIfEmpty``). Cells: the name; for a ``string``
column the value printed as text; ``integer``/``number``/``boolean`` only when the value has
that JSON type; ``date`` as a human duration since the timestamp (kubectl's ``5m``,
``3h10m``...); ``None`` when the path finds nothing. Each row carries the object as
``includeObject`` says: ``PartialObjectMetadata`` (the default), ``Object`` or ``None``.

kubectl itself then shows the columns of priority 0, and all of them with ``-o wide``.

Simplified: only ``v1`` Tables; JSONPath is the simple form CRDs use (``.a.b``,
``.a[0].b``); built-in resources are served as plain objects (kubectl falls back to its
own printing for them), where the real server has a printer per built-in kind.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

from fakeapi.resources import ResourceType

Obj = dict[str, Any]

NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")
"""The ObjectMeta ``name`` description the real server puts on the Name column."""

DEFAULT_COLUMNS = ({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},)
_TOKEN = re.compile(r"\[(\d+)\]|\.?([^.\[\]]+)")


def wants_table(accept: str) -> bool:
    """Does the Accept header ask for a ``meta.k8s.io/v1`` Table (anywhere in its list)?"""
    for media in accept.split(","):
        params = dict(part.strip().partition("=")[::2] for part in media.split(";")[1:])
        if (params.get("as") == "Table" and params.get("g") == "meta.k8s.io"
                and params.get("v") == "v1"):
            return True
    return False


def columns(rtype: ResourceType) -> list[Obj]:
    """The Table's column definitions for ``rtype``."""
    found = list(rtype.printer_columns) or list(DEFAULT_COLUMNS)
    result: list[Obj] = [{"name": "Name", "type": "string", "format": "name",
                          "description": NAME_DESCRIPTION, "priority": 0}]
    for column in found:
        path = column["jsonPath"]
        result.append({
            "name": column["name"],
            "type": column["type"],
            "format": column.get("format", ""),
            "description": column.get("description") or
            f"Custom resource definition column (in JSONPath format): {path}",
            "priority": int(column.get("priority", 0)),
        })
    return result


def table(rtype: ResourceType, objects: list[Obj], *, resource_version: str,
          include: str, now: float, list_meta: Obj | None = None) -> Obj:
    """The Table for ``objects`` (one for a get, all of a list page for a list)."""
    defs = columns(rtype)
    paths = [c["jsonPath"] for c in (list(rtype.printer_columns) or list(DEFAULT_COLUMNS))]
    rows = []
    for obj in objects:
        cells: list[Any] = [obj["metadata"]["name"]]
        for path, column in zip(paths, defs[1:], strict=True):
            cells.append(_cell(column["type"], _find(obj, path), now))
        row: Obj = {"cells": cells}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": obj["metadata"]}
        rows.append(row)
    metadata: Obj = {"resourceVersion": resource_version, **(list_meta or {})}
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
            "columnDefinitions": defs, "rows": rows}


_MISSING = object()


def _find(obj: Any, path: str) -> Any:
    current = obj
    for match in _TOKEN.finditer(path):
        index, key = match.group(1), match.group(2)
        if index is not None:
            if not isinstance(current, list) or int(index) >= len(current):
                return _MISSING
            current = current[int(index)]
        elif isinstance(current, dict) and key in current:
            current = current[key]
        else:
            return _MISSING
    return current


def _cell(kind: str, value: Any, now: float) -> Any:
    if value is _MISSING or value is None:
        return None
    if kind == "string":
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if kind == "integer":
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) \
            else None
    if kind == "number":
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
            else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        if not isinstance(value, str):
            return None
        try:
            then = datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return "<invalid>"
        return human_duration(now - then)
    return None


def human_duration(seconds: float) -> str:
    """kubectl's age: ``45s``, ``5m3s``, ``42m``, ``3h10m``, ``20h``, ``3d4h``, ``90d``,
    ``2y30d``, ``9y`` (apimachinery ``duration.HumanDuration``)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


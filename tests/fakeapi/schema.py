"""Structural schemas of custom resources: prune, default, validate.

Faithful to the order and rules of the apiextensions server for ``openAPIV3Schema``:
unknown fields are pruned (kept under ``x-kubernetes-preserve-unknown-fields``,
``additionalProperties`` and, at the root or in ``x-kubernetes-embedded-resource``,
``apiVersion``/``kind``/``metadata``); ``null`` in a non-``nullable`` field is
dropped; ``default`` values are applied to absent fields (recursively, also in
``items`` and ``additionalProperties``); then the object is validated with
``jsonschema``'s Draft 4 validator (OpenAPI v3.0 is Draft 4 with extensions), with
``nullable`` and ``x-kubernetes-int-or-string`` translated. Simplified: no CEL
(``x-kubernetes-validations``), no ``format`` checks, no list-type/map-type
uniqueness; root ``metadata`` is validated as ``ObjectMeta``, not by the schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema

Schema = dict[str, Any]
Causes = list[tuple[str, str]]
_KEEP_AT_ROOT = ("apiVersion", "kind", "metadata")


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def prune(value: Any, schema: Schema | None, *, root: bool = False) -> Any:
    """A pruned copy of ``value`` (new containers all the way down)."""
    if schema is None:
        return _copy(value)
    if isinstance(value, dict):
        props: dict[str, Schema] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        keep_meta = root or bool(schema.get("x-kubernetes-embedded-resource"))
        out: dict[str, Any] = {}
        for key, item in value.items():
            if keep_meta and key in _KEEP_AT_ROOT:
                out[key] = _copy(item)
            elif key in props:
                if item is None and not props[key].get("nullable"):
                    continue
                out[key] = prune(item, props[key])
            elif isinstance(addl, dict):
                out[key] = prune(item, addl)
            elif addl is True or preserve:
                out[key] = _copy(item)
        return out
    if isinstance(value, list):
        items = schema.get("items")
        return [prune(i, items if isinstance(items, dict) else None) for i in value]
    return value


def apply_defaults(value: Any, schema: Schema | None) -> Any:
    """Fill absent fields with their schema ``default`` in place; returns ``value``."""
    if schema is None:
        return value
    if isinstance(value, dict):
        props: dict[str, Schema] = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in value and "default" in sub:
                value[key] = _copy(sub["default"])
        addl = schema.get("additionalProperties")
        for key in list(value):
            if key in props:
                value[key] = apply_defaults(value[key], props[key])
            elif isinstance(addl, dict):
                value[key] = apply_defaults(value[key], addl)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                value[i] = apply_defaults(item, items)
    return value


def to_jsonschema(schema: Schema, *, root: bool = False) -> Schema:
    """Translate an OpenAPI v3.0 structural schema to plain Draft 4."""
    out: Schema = {}
    for key, value in schema.items():
        if key.startswith("x-kubernetes-") or key in ("nullable", "default", "example"):
            continue
        if key == "properties":
            out[key] = {
                name: to_jsonschema(sub) for name, sub in value.items()
                if not (root and name == "metadata")
            }
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = to_jsonschema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [to_jsonschema(sub) for sub in value]
        else:
            out[key] = value
    if schema.get("x-kubernetes-int-or-string") and "type" not in out:
        out["type"] = ["integer", "string"]
    if schema.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        if isinstance(out.get("enum"), list):
            out["enum"] = [*out["enum"], None]
    return out


def _field(path: Iterator[Any] | Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _render(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else json.dumps(value)


class CompiledSchema:
    """One version's ``openAPIV3Schema``, ready to prune, default and validate objects."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        translated = to_jsonschema(schema, root=True)
        jsonschema.Draft4Validator.check_schema(translated)
        self._validator = jsonschema.Draft4Validator(translated)

    def process(self, obj: dict[str, Any]) -> tuple[dict[str, Any], Causes]:
        """Prune, default and validate: returns the new object and the violations."""
        pruned: dict[str, Any] = prune(obj, self.schema, root=True)
        apply_defaults(pruned, self.schema)
        causes: Causes = []
        for err in sorted(self._validator.iter_errors(pruned), key=lambda e: list(e.absolute_path)):
            field = _field(err.absolute_path)
            if err.validator == "required":
                missing = str(err.message).split("'")[1] if "'" in err.message else "?"
                causes.append((f"{field}.{missing}" if field else missing, "Required value"))
            elif err.validator == "enum":
                allowed = ", ".join(_render(v) for v in err.validator_value)
                causes.append((field, f"Unsupported value: {_render(err.instance)}: "
                                      f"supported values: {allowed}"))
            else:
                causes.append((field, f"Invalid value: {_render(err.instance)}: "
                                      f"{field} in body {err.message}"))
        return pruned, causes

"""PATCH bodies: JSON merge patch, strategic merge patch and JSON patch.

* ``application/merge-patch+json`` — RFC 7386, faithful (``null`` deletes a key,
  lists are replaced whole).
* ``application/strategic-merge-patch+json`` — built-in kinds only (custom resources
  answer 415, as the real server does). Lists of objects merge by their merge key
  where Kubernetes declares one (``containers``/``volumes``/``env`` by ``name``,
  ``conditions`` by ``type``, ``ownerReferences`` by ``uid``, ...), ``finalizers``
  merge as a set, and the ``$patch: delete|replace``, ``$deleteFromPrimitiveList/``,
  ``$setElementOrder/`` and ``$retainKeys`` directives are honoured. Simplified:
  merge keys are looked up by field name, not by the Go struct path.
* ``application/json-patch+json`` — RFC 6902 via the ``jsonpatch`` library; a failed
  ``test`` or a bad path is 422, an undecodable patch is 400 (as in the real server).

None of these mutate their ``target``: untouched subtrees are shared with it.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer

from fakeapi import errors

MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "schedulingGates": "name",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
    "addresses": "type",
}
SET_LISTS = frozenset({"finalizers"})

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 merge of ``patch`` onto ``target``; returns a new value."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge of ``patch`` onto ``target`` (see the module docstring)."""
    if not isinstance(patch, dict):
        return patch
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            drop = set(value or ())
            result[field] = [v for v in result.get(field) or () if v not in drop]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [i for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    if field in SET_LISTS:
        merged = list(current or ())
        merged.extend(v for v in patch if v not in merged)
        return merged
    key = MERGE_KEYS.get(field)
    if key is None or not isinstance(current, list):
        return [i for i in patch if not (isinstance(i, dict) and i.get("$patch") == "delete")]
    merged = list(current)
    index = {item.get(key): pos for pos, item in enumerate(merged) if isinstance(item, dict)}
    deleted: set[Any] = set()
    for item in patch:
        if not isinstance(item, dict):
            merged.append(item)
            continue
        ident = item.get(key)
        if item.get("$patch") == "delete":
            deleted.add(ident)
        elif ident in index:
            merged[index[ident]] = strategic_merge_patch(merged[index[ident]], item)
        else:
            index[ident] = len(merged)
            merged.append(strategic_merge_patch(None, item))
    return [i for i in merged if not (isinstance(i, dict) and i.get(key) in deleted)]


def json_patch(target: dict[str, Any], ops: Any) -> dict[str, Any]:
    """Apply RFC 6902 operations; 400 if undecodable, 422 if they do not apply."""
    if not isinstance(ops, list):
        raise errors.bad_request("json patch must be a list of operations")
    try:
        patch = jsonpatch.JsonPatch(ops)
    except (jsonpatch.InvalidJsonPatch, TypeError, KeyError) as e:
        raise errors.bad_request(str(e)) from e
    try:
        result = patch.apply(target, in_place=False)
    except jsonpatch.JsonPatchTestFailed as e:
        raise errors.ApiError(422, f"the server rejected our request due to an error in our "
                                   f"request: testing value failed: {e}") from e
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException,
            TypeError, KeyError, IndexError) as e:
        raise errors.ApiError(422, f"the server rejected our request due to an error in our "
                                   f"request: {e}") from e
    if not isinstance(result, dict):
        raise errors.ApiError(422, "json patch must leave an object")
    return result


def apply(content_type: str, target: dict[str, Any], body: Any, *, builtin: bool) -> dict[str, Any]:
    """Dispatch on the PATCH ``Content-Type``; 415 for unknown or unsupported types."""
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype == JSON_PATCH:
        return json_patch(target, body)
    if not isinstance(body, dict):
        raise errors.bad_request("the patch body must be a JSON object")
    if ctype == MERGE:
        return dict(merge_patch(target, body))
    if ctype in (STRATEGIC, APPLY) and builtin:
        return dict(strategic_merge_patch(target, body))
    if ctype == APPLY:
        return dict(merge_patch(target, body))
    raise errors.ApiError(
        415,
        f'the body of the request was in an unknown format - accepted media types include: '
        f'{JSON_PATCH}, {MERGE}, {APPLY}' + (f", {STRATEGIC}" if builtin else ""),
    )

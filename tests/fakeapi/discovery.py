"""Discovery documents: ``/version``, ``/api``, ``/apis``, group and resource lists.

Faithful to the legacy (non-aggregated) discovery that kopf's scanner, kubectl's
fallback path and the Python clients read: ``APIVersions``, ``APIGroupList``,
``APIGroup`` and ``APIResourceList`` with ``name``, ``singularName``, ``namespaced``,
``kind``, ``verbs``, ``shortNames``, ``categories`` and one ``<plural>/<sub>`` entry per
subresource (``pods/binding`` is kind ``Binding``; ``pods/eviction`` is
``policy/v1 Eviction``). Simplified: no aggregated discovery (``apidiscovery.k8s.io``)
and no ``storageVersionHash``; the preferred version is the first one registered.
"""

from __future__ import annotations

from typing import Any

from fakeapi import resources

VERSION_INFO: dict[str, str] = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0-fakeapi",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T00:00:00Z",
    "goVersion": "go1.22.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def core_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(registry: resources.Registry, group: str) -> dict[str, Any] | None:
    versions = registry.versions_of(group)
    if not versions:
        return None
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def group_list(registry: resources.Registry) -> dict[str, Any]:
    groups = [_group(registry, g) for g in registry.groups()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [g for g in groups if g]}


def group(registry: resources.Registry, name: str) -> dict[str, Any] | None:
    doc = _group(registry, name)
    return None if doc is None else {"kind": "APIGroup", "apiVersion": "v1", **doc}


def resource_list(
    registry: resources.Registry, group: str, version: str
) -> dict[str, Any] | None:
    """The ``APIResourceList`` of one group/version, or ``None`` if nothing is served there."""
    entries: list[dict[str, Any]] = []
    for rtype in registry:
        if rtype.group != group or rtype.version != version:
            continue
        entry: dict[str, Any] = {
            "name": rtype.plural,
            "singularName": rtype.singular,
            "namespaced": rtype.namespaced,
            "kind": rtype.kind,
            "verbs": list(rtype.verbs),
        }
        if rtype.short_names:
            entry["shortNames"] = list(rtype.short_names)
        if rtype.categories:
            entry["categories"] = list(rtype.categories)
        entries.append(entry)
        for sub in sorted(rtype.subresources):
            sub_group, sub_version, sub_kind, verbs = resources.SUBRESOURCE_KINDS[sub]
            sub_entry: dict[str, Any] = {
                "name": f"{rtype.plural}/{sub}",
                "singularName": "",
                "namespaced": rtype.namespaced,
                "kind": sub_kind or rtype.kind,
                "verbs": list(verbs),
            }
            if sub_group or (sub_version and sub_version != rtype.version):
                sub_entry["group"] = sub_group
                sub_entry["version"] = sub_version
            entries.append(sub_entry)
    if not entries:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }

"""HTTP routing of the fake API server: URL → resource type, verb and store call.

Faithful URL layout: ``/api/v1/...`` and ``/apis/{group}/{version}/...``, with
``namespaces/{ns}/{plural}[/{name}[/{sub}]]`` for namespaced kinds, cluster-wide
collections (``/api/v1/pods``) for list/watch, ``?watch=true|1`` on collections, the
usual query parameters, ``DeleteOptions`` in the body or the query, and ``Status``
bodies for every error. Responses: 201 for creates, 200 otherwise; a delete that
removes a pod or namespace returns the object, other immediate deletes a success
``Status`` (``ReturnDeletedObject``), pending deletes the object. List items of
built-in kinds carry no ``kind``/``apiVersion`` (as from the real server).
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import yaml
from aiohttp import web

from fakeapi import discovery, errors, pods, resources, selectors, tables, watch

if TYPE_CHECKING:
    from fakeapi.server import FakeApiServer

Obj = dict[str, Any]
RETURNS_DELETED = frozenset({("", "pods"), ("", "namespaces")})
TRUE = ("true", "1")


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def respond(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=dumps(obj), status=status, content_type="application/json",
                        headers=headers)


def error_response(error: errors.ApiError) -> web.Response:
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else None
    body = error.status()
    if error.retry_after is not None:
        body.setdefault("details", {})["retryAfterSeconds"] = error.retry_after
    return respond(body, error.code, headers)


@dataclasses.dataclass(slots=True)
class Route:
    group: str
    version: str
    rtype: resources.ResourceType
    ns: str | None
    name: str | None
    sub: str


def _route(server: FakeApiServer, segs: list[str]) -> Route | web.Response:
    """Resolve a path, or answer a discovery document / 404 directly."""
    registry = server.store.registry
    if segs[0] == "api":
        if len(segs) == 1:
            return respond(discovery.core_versions(server.address))
        group, version, rest = "", segs[1], segs[2:]
    else:
        if len(segs) == 1:
            return respond(discovery.group_list(registry))
        if len(segs) == 2:
            doc = discovery.group(registry, segs[1])
            if doc is None:
                raise errors.ApiError(404, "the server could not find the requested resource")
            return respond(doc)
        group, version, rest = segs[1], segs[2], segs[3:]
    if not rest:
        doc = discovery.resource_list(registry, group, version)
        if doc is None:
            raise errors.ApiError(404, "the server could not find the requested resource")
        return respond(doc)
    rtype: resources.ResourceType | None = None
    ns: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        rtype = registry.get(group, version, rest[2])
        if rtype is not None and rtype.namespaced:
            ns, rest = rest[1], rest[2:]
        else:
            rtype = None
    if rtype is None:
        rtype = registry.get(group, version, rest[0])
    if rtype is None or len(rest) > 3:
        raise errors.ApiError(404, "the server could not find the requested resource")
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else ""
    if sub and sub not in rtype.subresources:
        raise errors.ApiError(404, "the server could not find the requested resource")
    return Route(group, version, rtype, ns, name, sub)


async def _body(request: web.BaseRequest) -> Any:
    raw = await request.read()
    if not raw:
        return None
    ctype = request.content_type
    try:
        if "yaml" in ctype:
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as e:
        raise errors.bad_request(f"the body of the request could not be decoded: {e}") from e


def present(rtype: resources.ResourceType, obj: Obj, *, in_list: bool = False) -> Obj:
    if in_list and rtype.builtin:
        return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    if obj.get("apiVersion") != rtype.api_version:
        return {**obj, "apiVersion": rtype.api_version}
    return obj


def verb_of(method: str, route: Route, query: Any) -> str:
    if method == "GET":
        if route.name is not None:
            return "get"
        return "watch" if query.get("watch", "").lower() in TRUE else "list"
    if method == "DELETE":
        return "delete" if route.name is not None else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method)


async def dispatch(server: FakeApiServer, request: web.BaseRequest) -> web.StreamResponse:
    """Serve one API request (faults already applied); raises :class:`errors.ApiError`."""
    path = request.path
    segs = [s for s in path.split("/") if s]
    if not segs:
        raise errors.ApiError(404, "the server could not find the requested resource")
    if segs[0] in ("healthz", "livez", "readyz"):
        return web.Response(text="ok")
    if segs[0] == "version" and len(segs) == 1:
        return respond(discovery.VERSION_INFO)
    if segs[0] not in ("api", "apis"):
        raise errors.ApiError(404, "the server could not find the requested resource")
    routed = _route(server, segs)
    if isinstance(routed, web.StreamResponse):
        server.count("get", "", "discovery")
        return routed
    route = routed
    rtype, store, query, method = route.rtype, server.store, request.query, request.method
    verb = verb_of(method, route, query)
    server.count(verb, rtype.plural, route.sub)
    server.authorize(request.headers.get("User-Agent", ""), rtype.group,
                     rtype.plural + (f"/{route.sub}" if route.sub else ""), verb)
    if query.get("dryRun"):
        raise errors.bad_request("dryRun is not supported by this fake API server")
    if rtype.namespaced and route.ns is None and verb not in ("list", "watch"):
        raise errors.ApiError(405, f"{verb} is not allowed on all namespaces")
    if verb not in rtype.verbs:
        raise errors.ApiError(405, f"{verb} is not supported on {rtype.plural}")

    if verb in ("list", "watch", "deletecollection"):
        labels = selectors.parse_labels(query.get("labelSelector"))
        fields = selectors.parse_fields(query.get("fieldSelector"), rtype.kind,
                                        rtype.selectable_fields)
        if verb == "watch":
            return await _watch(server, request, route, labels, fields)
        if verb == "deletecollection":
            options = await _body(request) or {}
            items, _, _, _ = store.list(rtype, route.ns, labels=labels, fields=fields)
            gone = [store.gc.delete(rtype, route.ns, o["metadata"]["name"], options)
                    for o in items]
            return respond({"kind": rtype.list_kind, "apiVersion": rtype.api_version,
                            "metadata": {},
                            "items": [present(rtype, o, in_list=True) for o in gone]})
        limit_text = query.get("limit")
        limit = int(limit_text) if limit_text and limit_text.isdigit() else None
        items, rv, token, remaining = store.list(rtype, route.ns, labels=labels, fields=fields,
                                                 limit=limit, continue_token=query.get("continue"))
        list_meta: Obj = {"resourceVersion": rv}
        if token:
            list_meta["continue"] = token
            list_meta["remainingItemCount"] = remaining
        if _as_table(rtype, request):
            return respond(tables.table(rtype, items, resource_version=rv,
                                        include=query.get("includeObject", ""),
                                        now=store.clock(), list_meta=list_meta))
        return respond({"kind": rtype.list_kind, "apiVersion": rtype.api_version,
                        "metadata": list_meta,
                        "items": [present(rtype, o, in_list=True) for o in items]})

    if route.name is None:  # create
        body = await _body(request)
        _blocking_owners(server, request, body)
        if rtype.plural == "bindings":
            return respond(pods.bind(store, route.ns or "", None, body), 201)
        return respond(present(rtype, store.create(rtype, route.ns, body)), 201)
    name = route.name
    if method == "POST" and route.sub == "binding":
        return respond(pods.bind(store, route.ns or "", name, await _body(request)), 201)
    if method == "POST" and route.sub == "eviction":
        return respond(pods.evict(store, route.ns or "", name, await _body(request)), 201)
    if route.sub not in ("", "status"):
        raise errors.ApiError(405, f"{method} is not supported on {rtype.plural}/{route.sub}")
    if verb == "get":
        found = present(rtype, store.get(rtype, route.ns, name))
        if _as_table(rtype, request) and not route.sub:
            return respond(tables.table(rtype, [found],
                                        resource_version=found["metadata"]["resourceVersion"],
                                        include=query.get("includeObject", ""),
                                        now=store.clock()))
        return respond(found)
    if verb == "update":
        return respond(present(rtype, store.update(rtype, route.ns, name, await _body(request),
                                                     subresource=route.sub)))
    if verb == "patch":
        body = await _body(request)
        patched = store.patch(rtype, route.ns, name, request.headers.get("Content-Type", ""),
                              body, subresource=route.sub)
        return respond(present(rtype, patched))
    if verb == "delete" and not route.sub:
        options = dict(await _body(request) or {})
        if "propagationPolicy" in query:
            options.setdefault("propagationPolicy", query["propagationPolicy"])
        if "orphanDependents" in query:
            options.setdefault("orphanDependents", query["orphanDependents"].lower() in TRUE)
        result = store.gc.delete(rtype, route.ns, name, options)
        still_there = store.lookup(rtype, route.ns, name) is not None
        if still_there or rtype.storage_key in RETURNS_DELETED:
            return respond(present(rtype, result))
        return respond(errors.status_body(200, details={
            "name": name, "group": rtype.group, "kind": rtype.plural,
            "uid": result["metadata"]["uid"]}))
    raise errors.ApiError(405, f"{method} is not supported here")


def _blocking_owners(server: FakeApiServer, request: web.BaseRequest, body: Any) -> None:
    """OwnerReferencesPermissionEnforcement: setting ``blockOwnerDeletion`` on a reference
    needs ``update`` on the owner's ``finalizers`` subresource. Recorded in the audit as
    the admission plugin asks RBAC for it (nothing is refused)."""
    meta_ = (body or {}).get("metadata") if isinstance(body, dict) else None
    for ref in (meta_ or {}).get("ownerReferences") or ():
        if not isinstance(ref, dict) or not ref.get("blockOwnerDeletion"):
            continue
        try:
            owner = server.resolve(str(ref.get("kind", "")), str(ref.get("apiVersion", "")))
        except KeyError:
            continue
        server.authorize(request.headers.get("User-Agent", ""), owner.group,
                         f"{owner.plural}/finalizers", "update")


def _as_table(rtype: resources.ResourceType, request: web.BaseRequest) -> bool:
    """A Table is asked for and served: custom resources only (see :mod:`fakeapi.tables`)."""
    return not rtype.builtin and tables.wants_table(request.headers.get("Accept", ""))


async def _watch(server: FakeApiServer, request: web.BaseRequest, route: Route,
                 labels: selectors.LabelSelector,
                 fields: selectors.FieldSelector) -> web.StreamResponse:
    query = request.query
    timeout_text = query.get("timeoutSeconds")
    timeout = float(timeout_text) if timeout_text else server.default_watch_timeout
    send_initial = query.get("sendInitialEvents", "").lower() in TRUE
    bookmarks = query.get("allowWatchBookmarks", "").lower() in TRUE
    try:
        req = server.store.watch_request(
            route.rtype, route.ns, labels=labels, fields=fields,
            resource_version=query.get("resourceVersion"), send_initial=send_initial,
            bookmarks=bookmarks, timeout=timeout, bookmark_interval=server.bookmark_interval)
    except errors.ApiError as e:
        if e.code != 410:
            raise
        return web.Response(body=watch.gone_response_line(e), content_type="application/json")
    server.watch_opened(+1)
    try:
        return await watch.stream(request, req)
    finally:
        server.watch_opened(-1)

"""``FakeApiServer``: the aiohttp server, its knobs, and an in-process store API.

Start it, point a client at ``server.url`` (or at ``write_kubeconfig(path)``: plain
HTTP, no auth), and drive or inspect the same state in-process with ``create``,
``get``, ``list``, ``patch``, ``patch_status``, ``delete``, ``bind`` and
``finish_pod``; these raise :class:`fakeapi.errors.ApiError` exactly where an HTTP
client would get the same ``Status``, and return deep copies.

``requests`` counts requests by ``(verb, resource, subresource)`` with Kubernetes
verbs (``get``, ``list``, ``watch``, ``create``, ``update``, ``patch``, ``delete``,
``deletecollection``); ``log_requests = True`` records method, path and status in
the bounded ``request_log``. ``faults`` injects errors, delays and disconnects.

``accepted_tokens`` (None: no authentication) makes the server answer 401
``Unauthorized`` to any request whose ``Authorization: Bearer`` token is not in the
set, as the real authenticator does; change the set to rotate credentials. ``flow``
(a :class:`fakeapi.flowcontrol.FlowLimiter`, None: none) answers 429 to requests over
a per-client rate, as API Priority and Fairness does when a priority level is full.
An unexpected exception inside the fake becomes a 500 ``InternalError`` and is
kept in ``internal_errors`` so that tests can assert there were none.

``timing`` makes the fake kubelet as slow as a real node (:mod:`fakeapi.kubelet`):
graceful pod deletion, a delay before a bound pod runs, late watch events; ``kubelet``
holds its timers (``kubelet.flush()`` fires them now, ``kubelet.errors`` must stay
empty).
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import dataclasses
import logging
import pathlib
import time
from collections.abc import Callable
from typing import Any

import yaml
from aiohttp import web

from fakeapi import (
    errors,
    faults,
    flowcontrol,
    handlers,
    meta,
    patching,
    pods,
    resources,
    selectors,
    store,
    watch,
)
from fakeapi.kubelet import INSTANT, Kubelet, Timing

Obj = dict[str, Any]
logger = logging.getLogger("fakeapi")


@dataclasses.dataclass(frozen=True, slots=True)
class LoggedRequest:
    method: str
    path_qs: str
    status: int


class FakeApiServer:
    """A faithful, fast, in-process Kubernetes API server for tests and benchmarks."""

    def __init__(
        self,
        *,
        history_limit: int = 100_000,
        strict_namespaces: bool = True,
        auto_run: bool = False,
        seed: int | None = None,
        bookmark_interval: float = 10.0,
        default_watch_timeout: float = 1800.0,
        request_log_limit: int = 10_000,
        clock: Callable[[], float] = time.time,
        timing: Timing = INSTANT,
    ) -> None:
        """
        :param history_limit: watch events retained per resource; older versions get 410.
        :param strict_namespaces: refuse creation in missing namespaces (404), as real.
        :param auto_run: the fake kubelet marks bound pods Running/Ready at once.
        :param seed: seeds uids and generated names, for reproducible runs.
        :param bookmark_interval: seconds between BOOKMARKs on idle watches that allow them.
        :param default_watch_timeout: watch duration when ``timeoutSeconds`` is absent.
        :param request_log_limit: how many entries ``request_log`` keeps.
        :param clock: wall clock for timestamps.
        :param timing: the fake kubelet's delays: graceful deletion, start-up, watch lag
            (:mod:`fakeapi.kubelet`); instant by default.
        """
        self.store = store.Store(history_limit=history_limit, strict_namespaces=strict_namespaces,
                                 auto_run=auto_run, seed=seed, clock=clock, timing=timing)
        self.faults = faults.Faults(seed)
        self.requests: collections.Counter[tuple[str, str, str]] = collections.Counter()
        self.log_requests = False
        self.request_log: collections.deque[LoggedRequest] = collections.deque(
            maxlen=request_log_limit)
        self.internal_errors: list[BaseException] = []
        self.bookmark_interval = bookmark_interval
        self.default_watch_timeout = default_watch_timeout
        self.active_watches = 0
        """Watch streams open right now."""
        self.accepted_tokens: set[str] | None = None
        self.tokens_seen: collections.Counter[str] = collections.Counter()
        """Bearer tokens presented, accepted or not (while ``accepted_tokens`` is set)."""
        self.flow: flowcontrol.FlowLimiter | None = None
        self.audit: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
        """(client, group, resource[/subresource], verb) of every resource request, the
        client being the ``User-Agent`` product (``gangsched``, ``kopf``...): what RBAC
        would be asked to authorize."""
        self._watch_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._runner: web.ServerRunner | None = None
        self._host = "127.0.0.1"
        self._port = 0

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        server = web.Server(self._handle, handler_cancellation=True, access_log=None)
        self._runner = web.ServerRunner(server, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, backlog=1024)
        await site.start()
        self._host = host
        self._port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        self.store.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeApiServer:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    @property
    def kubelet(self) -> Kubelet:
        """The fake kubelet: its ``timing``, ``flush()`` to fire pending timers now."""
        return self.store.kubelet

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    @property
    def address(self) -> str:
        return f"{self._host}:{self._port}"

    @property
    def auto_run(self) -> bool:
        return self.store.auto_run

    @auto_run.setter
    def auto_run(self, value: bool) -> None:
        self.store.auto_run = value

    def write_kubeconfig(self, path: str | pathlib.Path, *,
                         namespace: str = "default") -> pathlib.Path:
        """Write a kubeconfig for this server (plain HTTP, no credentials); returns the path."""
        path = pathlib.Path(path)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fakeapi", "cluster": {"server": self.url}}],
            "users": [{"name": "fakeapi", "user": {}}],
            "contexts": [{"name": "fakeapi", "context": {
                "cluster": "fakeapi", "user": "fakeapi", "namespace": namespace}}],
            "current-context": "fakeapi",
            "preferences": {},
        }
        path.write_text(yaml.safe_dump(config))
        return path

    # --- HTTP ---------------------------------------------------------------------------

    def count(self, verb: str, resource: str, subresource: str = "") -> None:
        self.requests[(verb, resource, subresource)] += 1

    def authorize(self, agent: str, group: str, resource: str, verb: str) -> None:
        """Record what RBAC would be asked (nothing is refused: see ``audit``)."""
        client = agent.split("/", 1)[0].split(" ", 1)[0] or "unknown"
        self.audit[(client, group, resource, verb)] += 1

    def request_count(self, verb: str, resource: str, subresource: str = "") -> int:
        return self.requests[(verb, resource, subresource)]

    async def wait_for_watches(self, count: int = 1) -> None:
        """Return once at least ``count`` watch streams are open (no polling)."""
        if self.active_watches >= count:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._watch_waiters.append((count, future))
        await future

    def watch_opened(self, delta: int) -> None:
        """Called by the watch handler when a stream opens (+1) or closes (-1)."""
        self.active_watches += delta
        waiting = []
        for count, future in self._watch_waiters:
            if future.done():
                continue
            if self.active_watches >= count:
                future.set_result(None)
            else:
                waiting.append((count, future))
        self._watch_waiters = waiting

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        response: web.StreamResponse | None = None
        if self.accepted_tokens is not None:
            response = self._authenticate(request)
        if response is None and self.flow is not None:
            agent = request.headers.get("User-Agent", "")
            if not self.flow.admit(agent, watch="watch=true" in request.query_string):
                response = handlers.error_response(errors.ApiError(
                    429, "Too many requests, please try again later.", retry_after=1))
        lose_answer = False
        if response is None and self.faults.active:
            response, lose_answer = await self._apply_faults(request)
        if response is None:
            try:
                response = await handlers.dispatch(self, request)
            except errors.ApiError as e:
                response = handlers.error_response(e)
            except Exception as e:  # a bug in the fake: report it as the real server would
                logger.exception("fakeapi: internal error in %s %s", request.method, request.path)
                self.internal_errors.append(e)
                response = handlers.error_response(errors.ApiError(500, f"fakeapi: {e!r}"))
        if self.log_requests:
            self.request_log.append(LoggedRequest(request.method, request.path_qs, response.status))
        if lose_answer and request.transport is not None:
            request.transport.abort()  # done, but the client never hears it
        return response

    def _authenticate(self, request: web.BaseRequest) -> web.StreamResponse | None:
        """None if the request's bearer token is accepted, else the 401 answer."""
        header = request.headers.get("Authorization", "")
        token = header[7:] if header.startswith("Bearer ") else ""
        self.tokens_seen[token] += 1
        if self.accepted_tokens is not None and token in self.accepted_tokens:
            return None
        return handlers.error_response(errors.ApiError(401, "Unauthorized"))

    async def _apply_faults(self, request: web.BaseRequest,
                            ) -> tuple[web.StreamResponse | None, bool]:
        """The fault's answer (None: serve the request) and whether to lose the answer."""
        rule = self.faults.take(request.method, request.path_qs,
                                request.headers.get("User-Agent", ""))
        delay = self.faults.latency + (rule.delay if rule is not None else 0.0)
        if delay > 0:
            await asyncio.sleep(delay)
        if rule is None:
            return None, False
        if rule.drop_connection:
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500), False
        if rule.status is None:
            return None, rule.lose_answer
        retry_after = rule.retry_after
        if retry_after is None and rule.status == 429:
            retry_after = 1
        message = rule.message or f"fakeapi: injected fault ({rule.status})"
        if rule.in_stream:
            if rule.status == 410 and not rule.message:
                asked = request.query.get("resourceVersion") or "0"
                message = f"too old resource version: {asked} ({self.store.rv})"
            error = errors.ApiError(rule.status, message,
                                    reason="Expired" if rule.status == 410 else None)
            return web.Response(body=watch.gone_response_line(error),
                                content_type="application/json"), False
        return handlers.error_response(errors.ApiError(rule.status, message,
                                                       retry_after=retry_after)), False

    # --- the in-process store API -------------------------------------------------------

    def resolve(self, what: str, api_version: str | None = None) -> resources.ResourceType:
        """A served type by plural, kind, singular or short name (``KeyError`` if none)."""
        return self.store.registry.resolve(what, api_version)

    def create(self, obj: Obj, namespace: str | None = None) -> Obj:
        """Create from a full object (``apiVersion`` + ``kind``); namespace defaults to default."""
        rtype = self.resolve(obj["kind"], obj.get("apiVersion"))
        ns = (obj.get("metadata") or {}).get("namespace") or namespace or "default"
        return meta.copy(self.store.create(rtype, ns if rtype.namespaced else None, meta.copy(obj)))

    def get(self, what: str, namespace: str | None, name: str, *,
            api_version: str | None = None) -> Obj:
        rtype = self.resolve(what, api_version)
        return meta.copy(handlers.present(rtype, self.store.get(rtype, namespace, name)))

    def try_get(self, what: str, namespace: str | None, name: str, *,
                api_version: str | None = None) -> Obj | None:
        """Like :meth:`get`, but ``None`` instead of a 404."""
        rtype = self.resolve(what, api_version)
        found = self.store.lookup(rtype, namespace, name)
        return None if found is None else meta.copy(handlers.present(rtype, found))

    def list(self, what: str, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, api_version: str | None = None) -> list[Obj]:
        rtype = self.resolve(what, api_version)
        items, _, _, _ = self.store.list(
            rtype, namespace, labels=selectors.parse_labels(label_selector),
            fields=selectors.parse_fields(field_selector, rtype.kind, rtype.selectable_fields))
        return [meta.copy(handlers.present(rtype, o)) for o in items]

    def patch(self, what: str, namespace: str | None, name: str, patch: Any, *,
              content_type: str = patching.MERGE, subresource: str = "",
              api_version: str | None = None) -> Obj:
        rtype = self.resolve(what, api_version)
        return meta.copy(self.store.patch(rtype, namespace, name, content_type, meta.copy(patch),
                                          subresource=subresource))

    def patch_status(self, what: str, namespace: str | None, name: str, status: Obj, *,
                     api_version: str | None = None) -> Obj:
        """Merge-patch ``.status`` (through ``/status`` where the kind has that subresource)."""
        rtype = self.resolve(what, api_version)
        sub = "status" if rtype.has_status else ""
        return meta.copy(self.store.patch(rtype, namespace, name, patching.MERGE,
                                          {"status": meta.copy(status)}, subresource=sub))

    def delete(self, what: str, namespace: str | None, name: str, *,
               propagation_policy: str | None = None, preconditions: Obj | None = None,
               grace_period_seconds: int | None = None,
               api_version: str | None = None) -> Obj:
        rtype = self.resolve(what, api_version)
        options: Obj = {}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions is not None:
            options["preconditions"] = preconditions
        return meta.copy(self.store.gc.delete(rtype, namespace, name, options))

    def bind(self, namespace: str, name: str, node: str, *, uid: str | None = None) -> Obj:
        """Bind a pod as ``pods/binding`` would (409 if bound, 404 if missing)."""
        body: Obj = {"apiVersion": "v1", "kind": "Binding",
                     "metadata": {"name": name, **({"uid": uid} if uid else {})},
                     "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        return pods.bind(self.store, namespace, name, body)

    def set_pod_running(self, namespace: str, name: str) -> Obj:
        """The fake kubelet: mark a pod Running and Ready."""
        rtype = self.resolve("pods")
        return meta.copy(pods.set_running(self.store, self.store.get(rtype, namespace, name)))

    def finish_pod(self, namespace: str, name: str, phase: str = "Succeeded") -> Obj:
        """The fake kubelet: the pod's containers exited (``Succeeded`` or ``Failed``)."""
        return meta.copy(pods.finish(self.store, namespace, name, phase))

    def compact(self) -> int:
        """etcd compaction up to now: older ``continue`` tokens and watch versions get 410."""
        return self.store.compact()

    def serve_workload_api(self, *versions: str) -> None:
        """Serve the Workload API (``scheduling.k8s.io`` Workloads and PodGroups) at
        ``versions`` (default ``v1alpha2``), as a cluster with the ``GenericWorkload``
        feature gate on does; :meth:`stop_workload_api` turns it off again."""
        for version in versions or ("v1alpha2",):
            self.store.registry.serve(resources.workload_api(version))

    def stop_workload_api(self, *versions: str) -> None:
        """Stop serving the Workload API at ``versions`` (default ``v1alpha2``)."""
        for version in versions or ("v1alpha2",):
            self.store.registry.unserve(resources.workload_api(version))

    def serve_dra(self, *versions: str) -> None:
        """Serve Dynamic Resource Allocation (``resource.k8s.io`` DeviceClasses,
        ResourceSlices, ResourceClaims, ResourceClaimTemplates) at ``versions`` (default
        ``v1``), as Kubernetes 1.34 and later do, with the resourceclaim controller and the
        kubelet's check of a pod's claims (:mod:`fakeapi.claims`); :meth:`stop_dra` turns
        it off again."""
        for version in versions or ("v1",):
            self.store.registry.serve(resources.dra_api(version))

    def stop_dra(self, *versions: str) -> None:
        """Stop serving ``resource.k8s.io`` at ``versions`` (default ``v1``)."""
        for version in versions or ("v1",):
            self.store.registry.unserve(resources.dra_api(version))

    def install_crds_from_dir(self, path: str | pathlib.Path) -> builtins.list[str]:
        """Create (or replace) every CRD in the ``*.yaml``/``*.yml`` files of a folder."""
        names = []
        rtype = self.resolve("customresourcedefinitions")
        for file in sorted(pathlib.Path(path).glob("*.y*ml")):
            for doc in yaml.safe_load_all(file.read_text()):
                if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                    continue
                name = doc["metadata"]["name"]
                existing = self.store.lookup(rtype, None, name)
                if existing is None:
                    self.store.create(rtype, None, doc)
                else:
                    self.store.update(rtype, None, name, doc)
                names.append(name)
        return names

"""A narrow asynchronous Kubernetes client for the operator's hot paths.

The scheduling loop needs a handful of calls (bind, create and delete pods, patch
status, post events, list and watch) and needs them fast: the bind path is where a
scheduler spends its API budget. Model (de)serialisation costs a quarter of the
throughput there, so this client speaks JSON over one pooled aiohttp session, with the
connection settings (host, TLS, token, client certificates) taken from
kubernetes-asyncio's kubeconfig / in-cluster loaders.

Errors are :class:`ApiError` with the HTTP status and the API server's ``Status``
reason. Callers handle 404 and 409 explicitly; nothing here retries on its own except
where a method says so.
"""

from __future__ import annotations

import asyncio
import collections
import json
import pathlib
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp

from gangsched.shell.credentials import Credentials
from gangsched.shell.prefetch import ReadAhead
from gangsched.shell.ratelimit import TokenBucket

JSON = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class ApiError(Exception):
    """A non-2xx answer. ``code`` is the HTTP status (0 for a transport failure)."""

    def __init__(self, code: int, reason: str = "", message: str = "") -> None:
        super().__init__(f"{code} {reason}: {message}".strip(": "))
        self.code = code
        self.reason = reason
        self.message = message


@dataclass(frozen=True, slots=True)
class Connection:
    """Where and how to reach the API server. ``credentials`` supply the bearer token
    (refreshed as :mod:`gangsched.shell.credentials` says); ``token`` is a static one
    used when there are no credentials."""

    host: str
    token: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify: bool = True
    credentials: Credentials | None = None

    def auth(self) -> Credentials:
        return self.credentials or Credentials(token=self.token)


async def load_connection(kubeconfig: str | None = None, *,
                          token_refresh: float = 60.0) -> Connection:
    """From ``kubeconfig`` (or KUBECONFIG / ~/.kube/config), else the in-cluster config.

    The token is re-read from its file every ``token_refresh`` seconds (the in-cluster
    service-account token, or a kubeconfig ``tokenFile``), and an exec plugin is run
    again before its token expires.

    Plain configs are read without importing a client library (see
    :mod:`gangsched.shell.kubeconfig`: it saves most of a second of start-up); any
    other form (exec plugins among them) goes through ``kubernetes_asyncio``'s loaders.
    """
    from gangsched.shell import kubeconfig as plain

    path = plain.kubeconfig_path(kubeconfig)
    fields = plain.read_kubeconfig(path) if path is not None else plain.read_in_cluster()
    if fields is not None:
        token_file = fields.pop("token_file", None)
        fresh = (Credentials(token=fields.get("token"), token_file=token_file,
                             period=token_refresh) if token_file else None)
        return Connection(**fields, credentials=fresh)
    from kubernetes_asyncio import client as k8s_client
    from kubernetes_asyncio import config as k8s_config
    from kubernetes_asyncio.config import incluster_config

    cfg = k8s_client.Configuration()
    credentials: Credentials
    try:
        loader = await k8s_config.load_kube_config(config_file=kubeconfig,
                                                   client_configuration=cfg)
        # kubernetes-asyncio's own refresh_token() reads the user section the same way.
        user: Any = getattr(loader, "_user", None) or {}
        token = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
        if "exec" in user:
            credentials = Credentials(token=token, loader=loader, period=token_refresh)
        elif "tokenFile" in user and "token" not in user:
            path = pathlib.Path(str(user["tokenFile"]))
            if not path.is_absolute() and getattr(user, "path", None):
                path = pathlib.Path(str(user.path)).parent / path
            credentials = Credentials(token=token, token_file=str(path), period=token_refresh)
        else:
            credentials = Credentials(token=token)
    except (k8s_config.ConfigException, FileNotFoundError, TypeError):
        k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        credentials = Credentials(token_file=incluster_config.SERVICE_TOKEN_FILENAME,
                                  period=token_refresh)
    return Connection(
        host=str(cfg.host).rstrip("/"),
        ca_file=cfg.ssl_ca_cert,
        cert_file=cfg.cert_file,
        key_file=cfg.key_file,
        verify=bool(cfg.verify_ssl),
        credentials=credentials,
    )


def resource_path(
    group: str, version: str, plural: str, namespace: str | None = None, name: str = ""
) -> str:
    base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    if namespace:
        base += f"/namespaces/{quote(namespace)}"
    base += f"/{plural}"
    if name:
        base += f"/{quote(name)}"
    return base


_Page = tuple[list[JSON], str]
"""A page of a list: its items and the list's resourceVersion."""
_ListKey = tuple[str, tuple[tuple[str, str], ...], int]


def _list_key(path: str, params: Mapping[str, str] | None, page: int) -> _ListKey:
    return path, tuple(sorted((params or {}).items())), page


class KubeClient:
    """One pooled session; every method is a single API call (a list: one per page)."""

    def __init__(self, connection: Connection, *, max_connections: int = 64,
                 timeout: float = 30.0, qps: float = 0.0, burst: int = 1,
                 user_agent: str = "gangsched",
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        """``qps``/``burst``: the client-side rate limit of every request but watches (0:
        none), as client-go's; ``user_agent`` names this replica in the API server's
        logs and flow control."""
        self.connection = connection
        self.credentials = connection.auth()
        self._max_connections = max_connections
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self.limiter = TokenBucket(qps, burst, monotonic=monotonic) if qps > 0 else None
        self.user_agent = user_agent
        self.monotonic = monotonic
        self.requests = 0
        self.pushed_back_at: float | None = None
        """Monotonic time of the last 429 (Too Many Requests) answered; None: none yet."""
        self.retry_after = 0.0
        """The ``Retry-After`` seconds of that answer (0: none given)."""
        self.unauthorized = 0
        """Requests answered 401 (each is retried once with a fresh token)."""
        self.answers: collections.Counter[tuple[str, int]] = collections.Counter()
        """(method, status code) -> requests so answered; code 0: no answer (a timeout,
        a connection refused or broken). Watches are not counted."""
        self.watch_activity: dict[str, float] = {}
        """Watch path -> monotonic time a stream of it last opened or delivered."""
        self._prefetched: dict[_ListKey, ReadAhead[_Page]] = {}
        """Lists asked for ahead of their reader (see :meth:`prefetch`)."""

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            ctx: ssl.SSLContext | bool = False
            c = self.connection
            if c.host.startswith("https"):
                context = ssl.create_default_context(cafile=c.ca_file)
                if not c.verify:
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                if c.cert_file and c.key_file:
                    context.load_cert_chain(c.cert_file, c.key_file)
                ctx = context
            headers = {"Accept": "application/json", "User-Agent": self.user_agent}
            self._session = aiohttp.ClientSession(
                base_url=None,
                headers=headers,
                connector=aiohttp.TCPConnector(limit=self._max_connections, ssl=ctx),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            )
        return self._session

    async def close(self) -> None:
        for ahead in self._prefetched.values():
            ahead.cancel()
        self._prefetched.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: object = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        limited: bool = True,
    ) -> JSON:
        """One call; the decoded JSON answer, or ApiError. Waits for the rate limit
        first (unless ``limited`` is False: the caller took its token); a 401 is retried
        once with a freshly obtained token. A 429 is noted (:attr:`pushed_back_at`)."""
        session = self._open()
        url = self.connection.host + path
        if params:
            url += "?" + urlencode(params)
        data = None if body is None else json.dumps(body, separators=(",", ":"))
        for attempt in (0, 1):
            if self.limiter is not None and (limited or attempt):
                await self.limiter.acquire()
            headers = await self._headers()
            if data is not None:
                headers["Content-Type"] = content_type
            self.requests += 1
            try:
                async with session.request(
                    method, url, data=data, headers=headers,
                    timeout=aiohttp.ClientTimeout(total=timeout or self._timeout),
                ) as response:
                    raw = await response.read()
                    status = response.status
                    if status == 429:
                        self._throttled(response.headers.get("Retry-After"))
            except (TimeoutError, aiohttp.ClientError) as err:
                self.answers[method.upper(), 0] += 1
                raise ApiError(0, "Transport", str(err) or type(err).__name__) from err
            self.answers[method.upper(), status] += 1
            if status != 401 or not self._refused() or attempt:
                break
        decoded: JSON = {}
        if raw:
            try:
                loaded = json.loads(raw)
                decoded = loaded if isinstance(loaded, dict) else {"items": loaded}
            except ValueError:
                decoded = {"message": raw[:200].decode(errors="replace")}
        if status >= 400:
            raise ApiError(status, str(decoded.get("reason", "")), str(decoded.get("message", "")))
        return decoded

    async def _headers(self) -> dict[str, str]:
        token = await self.credentials.token()
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _throttled(self, retry_after: str | None) -> None:
        self.pushed_back_at = self.monotonic()
        try:
            self.retry_after = min(60.0, max(0.0, float(retry_after or 0)))
        except ValueError:
            self.retry_after = 0.0

    def _refused(self) -> bool:
        """A 401: count it, and say whether a fresh token may help."""
        self.unauthorized += 1
        if not self.credentials.refreshing:
            return False
        self.credentials.invalidate()
        return True

    # --- the calls the operator makes ----------------------------------------------------

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST pods/<name>/binding with the pod's UID as a precondition.

        409: the pod is already bound (or is another pod with that name); 404: gone.
        """
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        await self.request("POST", resource_path("", "v1", "pods", namespace, name) + "/binding",
                           body=body)

    async def create(self, group: str, version: str, plural: str, namespace: str | None,
                     body: JSON, *, limited: bool = True) -> JSON:
        return await self.request("POST", resource_path(group, version, plural, namespace),
                                  body=body, limited=limited)

    async def delete_pod(self, namespace: str, name: str, uid: str, *,
                         grace_seconds: int | None = None) -> None:
        """Delete with a UID precondition, so a re-created pod of that name is safe.
        ``grace_seconds``: the deletion's grace period (None: the pod's own)."""
        body: JSON = {"apiVersion": "v1", "kind": "DeleteOptions",
                      "preconditions": {"uid": uid}}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        await self.request("DELETE", resource_path("", "v1", "pods", namespace, name), body=body)

    async def evict_pod(self, namespace: str, name: str, uid: str) -> None:
        """POST pods/<name>/eviction (``policy/v1`` Eviction) with a UID precondition.

        The API server deletes the pod unless a PodDisruptionBudget forbids it: 429. 404:
        the pod is gone; 409: the name now belongs to another pod (the UID differs). The
        pod's own termination grace period applies.
        """
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        await self.request("POST", resource_path("", "v1", "pods", namespace, name) + "/eviction",
                           body=body)

    async def patch(self, group: str, version: str, plural: str, namespace: str | None,
                    name: str, body: JSON | list[JSON], *, subresource: str = "",
                    content_type: str = MERGE_PATCH) -> JSON:
        """A merge patch (``body`` an object) or, with ``content_type`` :data:`JSON_PATCH`,
        a JSON patch (``body`` a list of operations; a failed ``test`` is answered 422)."""
        path = resource_path(group, version, plural, namespace, name)
        if subresource:
            path += "/" + subresource
        return await self.request("PATCH", path, body=body, content_type=content_type)

    async def get(self, group: str, version: str, plural: str, namespace: str | None,
                  name: str) -> JSON:
        return await self.request("GET", resource_path(group, version, plural, namespace, name))

    async def replace(self, group: str, version: str, plural: str, namespace: str | None,
                      name: str, body: JSON, *, subresource: str = "") -> JSON:
        path = resource_path(group, version, plural, namespace, name)
        if subresource:
            path += "/" + subresource
        return await self.request("PUT", path, body=body)

    async def list(self, path: str, *, params: Mapping[str, str] | None = None,
                   page: int = 500) -> tuple[list[JSON], str]:
        """Every item (following ``continue``) and the list's resourceVersion. An expired
        ``continue`` (410) is an ApiError: see :class:`gangsched.shell.watch.Reflector`
        for lists that start over."""
        items: list[JSON] = []
        rv = ""
        async for chunk, version in self.pages(path, params=params, page=page):
            items.extend(chunk)
            rv = version
        return items, rv

    def prefetch(self, path: str, *, params: Mapping[str, str] | None = None,
                 page: int = 500, ahead: int = 4, keep: float = 5.0) -> None:
        """Start listing ``path`` now (see :mod:`gangsched.shell.prefetch`), reading at
        most ``ahead`` pages ahead: the next :meth:`pages` (or :meth:`list`) of the same
        path, parameters and page size reads them, and the rest of the list, instead
        of asking again. Not read within ``keep`` seconds, they are dropped. Nothing
        if that list is being prefetched already. Needs a running event loop.

        The reader gets the list as it was when this was called: what may have been
        written since must not matter to it (see the runtime's sync)."""
        key = _list_key(path, params, page)
        if key in self._prefetched:
            return
        ahead_of = self._prefetched[key] = ReadAhead(self._pages(path, params, page), ahead)

        def drop() -> None:
            if self._prefetched.get(key) is ahead_of:
                del self._prefetched[key]
                ahead_of.cancel()

        asyncio.get_running_loop().call_later(keep, drop)

    async def pages(self, path: str, *, params: Mapping[str, str] | None = None,
                    page: int = 500) -> AsyncGenerator[_Page, None]:
        """The list, one page (``limit``) at a time, each with the list's
        resourceVersion (that of the first page's snapshot). ``page`` 0 lists at once.
        A list :meth:`prefetch` started is read from there (once)."""
        ahead = self._prefetched.pop(_list_key(path, params, page), None)
        if ahead is None:
            async for got in self._pages(path, params, page):
                yield got
            return
        try:
            async for got in ahead.items():
                yield got
        finally:
            ahead.cancel()

    async def _pages(self, path: str, params: Mapping[str, str] | None,
                     page: int) -> AsyncGenerator[_Page, None]:
        query = dict(params or {})
        if page > 0:
            query["limit"] = str(page)
        while True:
            answer = await self.request("GET", path, params=query, timeout=120)
            meta = answer.get("metadata") or {}
            token = meta.get("continue")
            yield list(answer.get("items") or []), str(meta.get("resourceVersion", ""))
            if not token:
                return
            query["continue"] = token

    async def watch(self, path: str, resource_version: str, *,
                    params: Mapping[str, str] | None = None,
                    timeout_seconds: int = 300) -> AsyncIterator[JSON]:
        """Stream watch events from ``resource_version``; ends when the server closes it."""
        session = self._open()
        query = dict(params or {})
        query.update(watch="true", resourceVersion=resource_version,
                     allowWatchBookmarks="true", timeoutSeconds=str(timeout_seconds))
        url = self.connection.host + path + "?" + urlencode(query)
        self.requests += 1
        headers = await self._headers()
        try:
            async with session.get(
                url, headers=headers,
                timeout=aiohttp.ClientTimeout(total=None, sock_read=timeout_seconds + 30)
            ) as response:
                if response.status == 401:
                    self._refused()
                if response.status >= 400:
                    raw = await response.read()
                    try:
                        status = json.loads(raw)
                    except ValueError:
                        status = {}
                    raise ApiError(response.status, str(status.get("reason", "")),
                                   str(status.get("message", "")))
                self.watch_activity[path] = self.monotonic()
                buffer = b""
                async for chunk in response.content.iter_any():
                    self.watch_activity[path] = self.monotonic()
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield json.loads(line)
        except (TimeoutError, aiohttp.ClientError) as err:
            raise ApiError(0, "Transport", str(err) or type(err).__name__) from err

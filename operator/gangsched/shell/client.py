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

import builtins
import json
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp

JSON = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
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
    """Where and how to reach the API server."""

    host: str
    token: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify: bool = True


async def load_connection(kubeconfig: str | None = None) -> Connection:
    """From ``kubeconfig`` (or KUBECONFIG / ~/.kube/config), else the in-cluster config.

    Plain configs are read without importing a client library (see
    :mod:`gangsched.shell.kubeconfig`: it saves most of a second of start-up); any
    other form goes through ``kubernetes_asyncio``'s loaders.
    """
    from gangsched.shell import kubeconfig as plain

    path = plain.kubeconfig_path(kubeconfig)
    fields = plain.read_kubeconfig(path) if path is not None else plain.read_in_cluster()
    if fields is not None:
        return Connection(**fields)
    from kubernetes_asyncio import client as k8s_client
    from kubernetes_asyncio import config as k8s_config

    cfg = k8s_client.Configuration()
    try:
        await k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    except (k8s_config.ConfigException, FileNotFoundError, TypeError):
        k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    token = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
    if token and token.lower().startswith("bearer "):
        token = token[7:]
    return Connection(
        host=str(cfg.host).rstrip("/"),
        token=token or None,
        ca_file=cfg.ssl_ca_cert,
        cert_file=cfg.cert_file,
        key_file=cfg.key_file,
        verify=bool(cfg.verify_ssl),
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


class KubeClient:
    """One pooled session; every method is a single API call."""

    def __init__(self, connection: Connection, *, max_connections: int = 64,
                 timeout: float = 30.0) -> None:
        self.connection = connection
        self._max_connections = max_connections
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self.requests = 0

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
            headers = {"Accept": "application/json", "User-Agent": "gangsched"}
            if c.token:
                headers["Authorization"] = f"Bearer {c.token}"
            self._session = aiohttp.ClientSession(
                base_url=None,
                headers=headers,
                connector=aiohttp.TCPConnector(limit=self._max_connections, ssl=ctx),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            )
        return self._session

    async def close(self) -> None:
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
    ) -> JSON:
        """One call; the decoded JSON answer, or ApiError."""
        session = self._open()
        url = self.connection.host + path
        if params:
            url += "?" + urlencode(params)
        data = None if body is None else json.dumps(body, separators=(",", ":"))
        self.requests += 1
        try:
            async with session.request(
                method, url, data=data,
                headers={"Content-Type": content_type} if data is not None else None,
                timeout=aiohttp.ClientTimeout(total=timeout or self._timeout),
            ) as response:
                raw = await response.read()
                status = response.status
        except (TimeoutError, aiohttp.ClientError) as err:
            raise ApiError(0, "Transport", str(err) or type(err).__name__) from err
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
                     body: JSON) -> JSON:
        return await self.request("POST", resource_path(group, version, plural, namespace),
                                  body=body)

    async def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        """Delete with a UID precondition, so a re-created pod of that name is safe."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                "preconditions": {"uid": uid}}
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
                    name: str, body: JSON, *, subresource: str = "",
                    content_type: str = MERGE_PATCH) -> JSON:
        path = resource_path(group, version, plural, namespace, name)
        if subresource:
            path += "/" + subresource
        return await self.request("PATCH", path, body=body, content_type=content_type)

    async def get(self, group: str, version: str, plural: str, namespace: str | None,
                  name: str) -> JSON:
        return await self.request("GET", resource_path(group, version, plural, namespace, name))

    async def replace(self, group: str, version: str, plural: str, namespace: str | None,
                      name: str, body: JSON) -> JSON:
        return await self.request("PUT", resource_path(group, version, plural, namespace, name),
                                  body=body)

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

    async def pages(self, path: str, *, params: Mapping[str, str] | None = None,
                    page: int = 500) -> AsyncGenerator[tuple[builtins.list[JSON], str], None]:
        """The list, one page (``limit``) at a time, each with the list's
        resourceVersion (that of the first page's snapshot). ``page`` 0 lists at once."""
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
        try:
            async with session.get(
                url, timeout=aiohttp.ClientTimeout(total=None, sock_read=timeout_seconds + 30)
            ) as response:
                if response.status >= 400:
                    raw = await response.read()
                    try:
                        status = json.loads(raw)
                    except ValueError:
                        status = {}
                    raise ApiError(response.status, str(status.get("reason", "")),
                                   str(status.get("message", "")))
                buffer = b""
                async for chunk in response.content.iter_any():
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield json.loads(line)
        except (TimeoutError, aiohttp.ClientError) as err:
            raise ApiError(0, "Transport", str(err) or type(err).__name__) from err

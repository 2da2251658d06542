"""A small but faithful fake Kubernetes API server for HTTP-level tests and benchmarks.

Clients talk to it exactly as to a real API server (kopf, kubernetes_asyncio, pykube,
raw aiohttp); tests also drive it in-process. What is faithful and what is simplified
is described in each module's docstring: :mod:`fakeapi.store` (metadata, versions,
conflicts), :mod:`fakeapi.watch`, :mod:`fakeapi.lifecycle` (deletion, finalizers, GC),
:mod:`fakeapi.pods` (admission, binding, eviction, kubelet), :mod:`fakeapi.kubelet`
(graceful deletion, start-up delay, watch lag), :mod:`fakeapi.schema`
(CRDs), :mod:`fakeapi.patching`, :mod:`fakeapi.selectors`, :mod:`fakeapi.validation`,
:mod:`fakeapi.discovery`, :mod:`fakeapi.faults`, :mod:`fakeapi.claims` (the resourceclaim
controller) and :mod:`fakeapi.dra_validation` (resource.k8s.io).
"""

from fakeapi.errors import ApiError
from fakeapi.faults import FaultRule, Faults
from fakeapi.server import FakeApiServer, LoggedRequest

__all__ = ["ApiError", "FakeApiServer", "FaultRule", "Faults", "LoggedRequest"]

"""Other schedulers' PodGroup objects: which are read, how, and what is written back.

=============  ==================================  =================================
dialect        resource                            status
=============  ==================================  =================================
coscheduling   ``scheduling.x-k8s.io/v1alpha1``    written (:func:`coscheduling.status_body`)
volcano        ``scheduling.volcano.sh/v1beta1``   read only (Volcano owns it)
workload       ``scheduling.k8s.io``, the newest   its scheduling condition
               of ``v1beta1``, ``v1alpha3``,       (:func:`workload.status_body`)
               ``v1alpha2`` served
=============  ==================================  =================================

The first two are CRDs, listed at their one version (a 404: not installed). The Workload
API is built in, behind feature gates: which of its versions is served, if any, is asked
of discovery (``/apis/scheduling.k8s.io``), see :attr:`ForeignKind.versions`.

The core knows them under foreign keys (``namespace/dialect:name``), so its decisions
about them come back with those keys: :func:`kind_of` says which resource a key is, and
:func:`retarget_event` points an Event about one at the real object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from gangsched.core import decisions, model
from gangsched.translate.dialects import (
    COSCHEDULING,
    VOLCANO,
    WORKLOAD,
    coscheduling,
    is_foreign,
    split_foreign_key,
    volcano,
    workload,
)

StatusBody = Callable[[decisions.SetPodGroupStatus, Mapping[str, Any], float, str],
                      dict[str, Any] | None]
"""``status(d, obj, now, version)``: the ``status`` to merge-patch for decision ``d`` onto
the object as last seen (``obj``), served at ``version``; ``None``: nothing to write."""


@dataclasses.dataclass(frozen=True, slots=True)
class ForeignKind:
    """One foreign PodGroup resource: where it is, how to read it, how to write status."""

    dialect: str
    group: str
    version: str
    plural: str
    translate: Callable[..., model.PodGroupSpec]
    """``translate(obj, priorities=...)``: the core's PodGroupSpec of one object."""
    status: StatusBody | None
    versions: tuple[str, ...] = ()
    """A built-in API that may not be served: its known versions, newest first, of which
    the newest served is used (empty: a CRD, at ``version`` only)."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def path(self) -> str:
        """The cluster-wide list and watch path (at ``version``)."""
        return self.path_at(self.version)

    def path_at(self, version: str) -> str:
        """The cluster-wide list and watch path at ``version``."""
        return f"/apis/{self.group}/{version}/{self.plural}"

    def served(self, discovery: Mapping[str, Any]) -> str | None:
        """The newest of :attr:`versions` that an ``APIGroup`` discovery document lists
        (``versions[].version``); ``None`` when it lists none of them or is malformed."""
        listed = discovery.get("versions")
        names = {entry.get("version") for entry in listed if isinstance(entry, Mapping)} \
            if isinstance(listed, list) else set()
        return next((version for version in self.versions if version in names), None)


def _whole(body: Callable[[decisions.SetPodGroupStatus], dict[str, Any]]) -> StatusBody:
    """A status that depends on the decision only."""
    return lambda d, _obj, _now, _version: body(d)


def _workload_status(d: decisions.SetPodGroupStatus, obj: Mapping[str, Any], now: float,
                     version: str) -> dict[str, Any] | None:
    return workload.status_body(d, obj, now=now, version=version)


KINDS: tuple[ForeignKind, ...] = (
    ForeignKind(
        COSCHEDULING,
        coscheduling.GROUP,
        coscheduling.VERSION,
        coscheduling.PLURAL,
        coscheduling.podgroup_from_k8s,
        _whole(coscheduling.status_body),
    ),
    ForeignKind(
        VOLCANO, volcano.GROUP, volcano.VERSION, volcano.PLURAL, volcano.podgroup_from_k8s, None
    ),
    ForeignKind(
        WORKLOAD, workload.GROUP, workload.VERSION, workload.PLURAL,
        workload.podgroup_from_k8s, _workload_status, versions=workload.VERSIONS,
    ),
)
_BY_DIALECT = {kind.dialect: kind for kind in KINDS}


def kind_of(key: str) -> ForeignKind | None:
    """The foreign resource a core PodGroup key stands for; ``None`` for gangsched's own."""
    if not is_foreign(key):
        return None
    return _BY_DIALECT.get(split_foreign_key(key)[0])


def retarget_event(body: dict[str, Any],
                   versions: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``body`` (an ``events.k8s.io/v1`` Event) with ``regarding`` pointing at the foreign
    PodGroup it is about: its own ``apiVersion`` (the version ``versions`` gives for its
    dialect, the served one; else the kind's) and name. Other Events are returned
    unchanged."""
    regarding = body.get("regarding")
    if not isinstance(regarding, dict) or regarding.get("kind") != "PodGroup":
        return body
    name = str(regarding.get("name", ""))
    kind = kind_of(f"{regarding.get('namespace', '')}/{name}")
    if kind is None:
        return body
    _, _, real = split_foreign_key(f"x/{name}")
    version = (versions or {}).get(kind.dialect, kind.version)
    return {**body, "regarding": {**regarding, "apiVersion": f"{kind.group}/{version}",
                                  "name": real}}

"""Other schedulers' PodGroup objects: which are read, how, and what is written back.

=============  ==================================  =================================
dialect        resource                            status
=============  ==================================  =================================
coscheduling   ``scheduling.x-k8s.io/v1alpha1``    written (:func:`coscheduling.status_body`)
volcano        ``scheduling.volcano.sh/v1beta1``   read only (Volcano owns it)
=============  ==================================  =================================

The core knows them under foreign keys (``namespace/dialect:name``), so its decisions
about them come back with those keys: :func:`kind_of` says which resource a key is, and
:func:`retarget_event` points an Event about one at the real object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from gangsched.core.values import decisions, model
from gangsched.translate.dialects import (
    COSCHEDULING,
    VOLCANO,
    coscheduling,
    is_foreign,
    split_foreign_key,
    volcano,
)


@dataclasses.dataclass(frozen=True, slots=True)
class ForeignKind:
    """One foreign PodGroup resource: where it is, how to read it, how to write status."""

    dialect: str
    group: str
    version: str
    plural: str
    translate: Callable[..., model.PodGroupSpec]
    """``translate(obj, priorities=...)``: the core's PodGroupSpec of one object."""
    status: Callable[[decisions.SetPodGroupStatus], dict[str, Any]] | None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def path(self) -> str:
        """The cluster-wide list and watch path."""
        return f"/apis/{self.group}/{self.version}/{self.plural}"


KINDS: tuple[ForeignKind, ...] = (
    ForeignKind(
        COSCHEDULING,
        coscheduling.GROUP,
        coscheduling.VERSION,
        coscheduling.PLURAL,
        coscheduling.podgroup_from_k8s,
        coscheduling.status_body,
    ),
    ForeignKind(
        VOLCANO, volcano.GROUP, volcano.VERSION, volcano.PLURAL, volcano.podgroup_from_k8s, None
    ),
)
_BY_DIALECT = {kind.dialect: kind for kind in KINDS}


def kind_of(key: str) -> ForeignKind | None:
    """The foreign resource a core PodGroup key stands for; ``None`` for gangsched's own."""
    if not is_foreign(key):
        return None
    return _BY_DIALECT.get(split_foreign_key(key)[0])


def retarget_event(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` (an ``events.k8s.io/v1`` Event) with ``regarding`` pointing at the foreign
    PodGroup it is about: its own ``apiVersion`` and name. Other Events are returned
    unchanged."""
    regarding = body.get("regarding")
    if not isinstance(regarding, dict) or regarding.get("kind") != "PodGroup":
        return body
    name = str(regarding.get("name", ""))
    kind = kind_of(f"{regarding.get('namespace', '')}/{name}")
    if kind is None:
        return body
    _, _, real = split_foreign_key(f"x/{name}")
    return {**body, "regarding": {**regarding, "apiVersion": kind.api_version, "name": real}}

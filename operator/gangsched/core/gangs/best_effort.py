"""Best-effort pods: the pods the ``backfill`` action places rather than ``allocate``.

The test lives here, below the actions, because allocation asks it too: with
``backfill`` among the actions, ``allocate`` (:mod:`~gangsched.core.gangs.app_allocation`,
:mod:`~gangsched.core.gangs.ordinary`) leaves these pods to
:mod:`~gangsched.core.actions.backfill`. What makes a pod best effort is in that module's
docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gangsched.core.state.records import PodState
    from gangsched.core.state.session import Session

NAME = "backfill"


def enabled(s: Session) -> bool:
    return NAME in s.config.actions


def is_best_effort(s: Session, ps: PodState) -> bool:
    """Is ``ps`` a pod backfill places (see the module docstring)? Invalid pods and pods
    of applications not seen yet are left to ``allocate``, which says why they wait."""
    pod = ps.pod
    if pod.requests or pod.pod_group is not None or pod.invalid or pod.placeholder:
        return False
    if pod.app is None:
        return True
    rt = s.apps.get(pod.app)
    return rt is not None and not rt.spec.gang


def takes(s: Session, ps: PodState) -> bool:
    """Does backfill, rather than allocate, place ``ps`` in this configuration?"""
    return enabled(s) and is_best_effort(s, ps)

"""One gang per pod: the documented precedence between dialects, and their disagreements.

Every dialect reads the pod (:func:`claims`); then, by :data:`~.PRECEDENCE`
(native > workload > yunikorn > koordinator > coscheduling > volcano > kueue):

* the first dialect that names a gang decides which gang the pod joins. Why this order:
  gangsched's own names are explicit; ``spec.schedulingGroup`` is a field of the pod's
  spec that Kubernetes itself schedules by, immutable and set by the workload's
  controller (the Job controller, JobSet, LeaderWorkerSet); YuniKorn's task groups
  are the richest definition (roles, placeholders, a timeout style) and a pod only has
  them when written for it; Koordinator's annotations override a coscheduling PodGroup
  in Koordinator itself; the PodGroups of coscheduling and Volcano live elsewhere and
  may not even exist here; and Kueue is first an admission system, often paired with
  one of the others;
* the gang's custom resource is made from the first dialect naming *that same gang* that
  carries a definition (a Koordinator label without ``min-available`` next to a Kueue
  total count: Kueue's count defines it);
* the queue is the first dialect's that gives one, and ``allow-preemption`` likewise.

A disagreement never stops the pod; it is reported (the shell records a
``GangDialectConflict`` Event): two dialects naming different gangs, the same gang with
different definitions (``minMember`` 3 from Koordinator and 4 from Kueue), different
queues, and keys of one dialect that disagree among themselves. Unreadable values are
``problems`` (the pod is invalid) or definition errors (see :func:`define`).
"""

from __future__ import annotations

from collections.abc import Callable

from gangsched.translate.dialects import (
    APPLICATION,
    KOORDINATOR,
    KUEUE,
    NONE,
    PODGROUP,
    PRECEDENCE,
    YUNIKORN,
    Claim,
    Definition,
    Membership,
    PodMeta,
    coscheduling,
    koordinator,
    kueue,
    native,
    volcano,
    workload,
    yunikorn,
)

READERS: tuple[Callable[[PodMeta], Claim | None], ...] = (
    native.read,
    workload.read,
    yunikorn.read,
    koordinator.read,
    coscheduling.read,
    volcano.read,
    kueue.read,
)
"""One reader per dialect, in the order of :data:`PRECEDENCE`."""

DEFINERS: dict[str, Callable[[PodMeta, str | None, str], Definition]] = {
    YUNIKORN: yunikorn.define,
    KOORDINATOR: koordinator.define,
    KUEUE: kueue.define,
}
"""The dialects whose pods carry a gang's definition (the native one is
:func:`gangsched.translate.pods.app_manifest_from_pod`)."""

ORDER = "precedence " + " > ".join(PRECEDENCE)


def claims(meta: PodMeta) -> list[Claim]:
    """Every dialect's claim on the pod, in order of precedence."""
    return [claim for read in READERS if (claim := read(meta)) is not None]


def _gang_text(claim: Claim) -> str:
    kind, name = claim.gang
    return f'{kind} "{name}" ({claim.dialect}: {claim.source})'


def _term_conflicts(reference: Claim, other: Claim) -> list[str]:
    found = []
    for field, (value, source) in sorted(other.terms.items()):
        if field not in reference.terms:
            continue
        mine, mine_source = reference.terms[field]
        if mine != value:
            kind, name = reference.gang
            found.append(
                f'{kind} "{name}": spec.{field} is {mine!r} from {mine_source} '
                f"({reference.dialect}) but {value!r} from {source} ({other.dialect}); "
                f"following {reference.dialect} ({ORDER})"
            )
    return found


def _key(claim: Claim) -> str | None:
    return claim.app if claim.app is not None else claim.pod_group


def resolve(meta: PodMeta) -> Membership:
    """The pod's gang, queue and preemption setting by precedence, with every problem and
    conflict (see the module docstring). A pod that speaks no dialect gives
    :data:`~.NONE`."""
    found = claims(meta)
    if not found:
        return NONE
    problems = [problem for claim in found for problem in claim.problems]
    conflicts = [conflict for claim in found for conflict in claim.conflicts]
    members = [claim for claim in found if claim.member]
    winner = members[0] if members else None
    definer: Claim | None = None
    if winner is not None:
        same = [claim for claim in members if claim.gang == winner.gang]
        definer = next(
            (claim for claim in same if claim.defines and _key(claim) == _key(winner)), None
        )
        reference = definer or winner
        for other in members[1:]:
            if other.gang != winner.gang:
                conflicts.append(
                    f"the pod names two gangs: {_gang_text(winner)} and {_gang_text(other)}; "
                    f"it joins the {winner.dialect} one ({ORDER})"
                )
            elif other is not reference:
                conflicts.extend(_term_conflicts(reference, other))
    queues = [claim for claim in found if claim.queue]
    queue = queues[0] if queues else None
    for other in queues[1:]:
        if queue is not None and other.queue != queue.queue:
            conflicts.append(
                f'queue "{queue.queue}" from {queue.queue_source} ({queue.dialect}) but '
                f'"{other.queue}" from {other.queue_source} ({other.dialect}); '
                f'using "{queue.queue}" ({ORDER})'
            )
    preemptible = next((c.preemptible for c in found if c.preemptible is not None), None)
    return Membership(
        dialect=winner.dialect if winner is not None else None,
        app=winner.app if winner is not None else None,
        task_group=winner.task_group if winner is not None else None,
        pod_group=winner.pod_group if winner is not None else None,
        queue=queue.queue if queue is not None else None,
        queue_source=queue.queue_source if queue is not None else "",
        preemptible=preemptible,
        definer=definer.dialect if definer is not None else None,
        definition_kind=(APPLICATION if definer.app is not None else PODGROUP)
        if definer is not None
        else "",
        definition_key=str(_key(definer) or "") if definer is not None else "",
        problems=tuple(problems),
        conflicts=tuple(conflicts),
    )


def define(meta: PodMeta, membership: Membership) -> Definition | None:
    """The custom resource ``membership``'s definer makes from the pod, in the resolved
    queue; ``None`` for the native dialect (see :mod:`gangsched.translate.pods`) and when
    nothing defines the gang."""
    if membership.definer is None:
        return None
    make = DEFINERS.get(membership.definer)
    if make is None:
        return None
    return make(meta, membership.queue, membership.queue_source)

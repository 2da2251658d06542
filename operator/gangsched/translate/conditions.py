"""``metav1.Condition`` lists for the status of our custom resources.

A condition's ``lastTransitionTime`` is when its *status* last changed, so it is kept from
the old status while the status stays the same, and set to ``now`` (whole seconds, as
``metav1.Time``) when it flips or first appears. Reasons must match the CRD's pattern
(CamelCase, ``^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$``) and messages fit its maximum
length: :func:`reason_text` and :func:`clip` make sure of it, since a status that breaks
the schema would be refused whole.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.translate import times

MAX_MESSAGE = 32768
MAX_REASON = 1024

_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
_WORD = re.compile(r"[A-Za-z0-9]+")


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``...`` when it was cut."""
    if len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


def reason_text(text: str, fallback: str) -> str:
    """``text`` when it is a valid condition reason; else its words in CamelCase
    (``"queue quota"`` gives ``QueueQuota``); ``fallback`` when nothing is left."""
    if len(text) <= MAX_REASON and _REASON.fullmatch(text):
        return text
    camel = "".join(word[:1].upper() + word[1:] for word in _WORD.findall(text))
    camel = camel.lstrip("0123456789")[:MAX_REASON]
    return camel[:1].upper() + camel[1:] or fallback


@dataclasses.dataclass(frozen=True, slots=True)
class Wanted:
    """One condition as it should be now. ``status`` is ``True``, ``False`` or ``Unknown``."""

    type: str
    status: str
    reason: str
    message: str = ""


def _old(old_status: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    if not isinstance(old_status, Mapping):
        return {}
    conditions = old_status.get("conditions")
    if not isinstance(conditions, list):
        return {}
    return {
        item["type"]: item
        for item in conditions
        if isinstance(item, Mapping) and isinstance(item.get("type"), str)
    }


def old_condition(old_status: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    """The condition of type ``kind`` in ``old_status``, when there is one."""
    return _old(old_status).get(kind)


def render(
    wanted: Sequence[Wanted],
    *,
    now: float,
    generation: int,
    old_status: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """The ``conditions`` list for ``wanted``, in that order.

    ``lastTransitionTime`` comes from the condition of the same type in ``old_status``
    when its status is unchanged and its time is a string; otherwise it is ``now``.
    """
    old = _old(old_status)
    result: list[dict[str, Any]] = []
    for want in wanted:
        previous = old.get(want.type)
        since = previous.get("lastTransitionTime") if previous is not None else None
        if previous is None or previous.get("status") != want.status or not isinstance(since, str):
            since = times.format_time_seconds(now)
        result.append(
            {
                "type": want.type,
                "status": want.status,
                "reason": reason_text(want.reason, "Unknown"),
                "message": clip(want.message),
                "lastTransitionTime": since,
                "observedGeneration": generation,
            }
        )
    return result


def status_word(flag: bool) -> str:
    return "True" if flag else "False"

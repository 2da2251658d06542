"""The swaps under way: each placeholder being replaced, and the room held for its gang.

A ledger of the session's (see :mod:`gangsched.core.gangs.swap` for what is done with
it): a swap's held room is charged on the placeholder's node under a pseudo-pod uid,
:data:`HOLD` followed by the placeholder's uid.
"""

from __future__ import annotations

from dataclasses import dataclass

from gangsched.core.values.model import AppKey, PodUID
from gangsched.core.values.resources import Resources

HOLD = "swap:"
"""Prefix of the pseudo-pod uid under which a swap's held room is charged on its node."""


@dataclass(slots=True)
class Swap:
    """One placeholder being replaced, and the room held on its node meanwhile."""

    placeholder: PodUID
    name: str
    node: str
    app: AppKey
    group: str
    request: Resources
    """The placeholder's request (pods slot included): the room kept for the gang when
    no real pod takes it (at most what was held when its real pod left)."""
    real: PodUID | None
    """The real pod taking its place; None between one that left and the next."""
    there: bool = True
    """The real pod fits on the placeholder's node once it is gone (else it goes
    elsewhere, and the room held is the placeholder's own, for the gang)."""
    held: Resources = Resources.ZERO
    """Charged on ``node`` now, under :data:`HOLD` + the placeholder's uid."""
    keep_until: float = 0.0
    """With neither its real pod nor its placeholder left, the room is still kept for
    the gang until this instant: a real pod whose bind failed after its swap retries
    after its backoff (see :func:`gangsched.core.gangs.swap.bind_failed`)."""

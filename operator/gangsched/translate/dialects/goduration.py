"""Go duration strings (``time.ParseDuration``): ``"600s"``, ``"1h30m"``, ``"1.5h"``.

Koordinator's ``gang.scheduling.koordinator.sh/waiting-time`` is one. The grammar is Go's:
an optional sign, then one or more ``<decimal><unit>`` terms, units ``ns``, ``us``, ``µs``
(U+00B5 or U+03BC), ``ms``, ``s``, ``m``, ``h``; ``"0"`` alone needs no unit. Amounts are
exact (integer nanoseconds, as Go), and at most Go's int64 range.
"""

from __future__ import annotations

import re
from fractions import Fraction

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_ACCEPTED = "ns, us, µs, ms, s, m, h"
_TERM = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]*)")
_MAX = 2**63 - 1


class DurationError(ValueError):
    """Not a Go duration; the message says why, without the value's path."""


def parse(text: str) -> int:
    """Nanoseconds of Go duration ``text`` (may be negative); raises
    :class:`DurationError` for anything Go's ``time.ParseDuration`` refuses."""
    rest = text
    sign = 1
    if rest[:1] in ("+", "-"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise DurationError("empty")
    total = Fraction(0)
    position = 0
    while position < len(rest):
        match = _TERM.match(rest, position)
        number, unit = (match.group(1), match.group(2)) if match else ("", "")
        if number in ("", "."):
            raise DurationError(f'expected a number at "{rest[position:]}"')
        if not unit:
            raise DurationError(f'missing unit after "{number}" (accepted: {_ACCEPTED})')
        if unit not in _UNITS:
            raise DurationError(f'unknown unit "{unit}" (accepted: {_ACCEPTED})')
        total += Fraction(number) * _UNITS[unit]
        position += len(number) + len(unit)
    if total > _MAX:
        raise DurationError("out of range (at most about 2562047h)")
    return sign * int(total)


def to_seconds(nanoseconds: int) -> int:
    """Whole seconds, rounded up: a timeout is never shortened."""
    return -(-nanoseconds // 1_000_000_000)

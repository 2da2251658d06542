"""Kubernetes timestamps to and from epoch seconds.

The core counts time in ``float`` epoch seconds; the API speaks RFC 3339 text. Three
renderings exist because Kubernetes has three time types:

* :func:`format_time` -- free ``date-time`` fields of our own CRDs (``stateSince``, ...):
  microseconds when the time has a fraction, so nothing is lost on a round trip;
* :func:`format_time_seconds` -- ``metav1.Time`` (condition ``lastTransitionTime``), which
  Kubernetes serialises in whole seconds;
* :func:`format_micro_time` -- ``metav1.MicroTime`` (``eventTime`` of an
  ``events.k8s.io/v1`` Event), always six fractional digits.

All of them render UTC with a ``Z``.
"""

from __future__ import annotations

import datetime
import fractions
import math
import re

_RFC3339 = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})[Tt ]"
    r"(?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]{1,9}))?"
    r"(?P<zone>[Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def parse_time(text: object) -> float | None:
    """Parse an RFC 3339 timestamp into epoch seconds.

    Accepts ``2024-05-01T12:00:00Z``, fractional seconds of 1 to 9 digits, and a numeric
    offset (``+02:00``); ``T``/``Z`` may be lower case. Returns ``None`` for ``None``, for
    anything that is not a string, and for text that is not such a timestamp (including
    impossible dates such as February 30th). Never raises.
    """
    if not isinstance(text, str):
        return None
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    zone = match["zone"]
    try:
        if zone in ("Z", "z"):
            tz = datetime.UTC
        else:
            sign = -1 if zone[0] == "-" else 1
            hours, minutes = int(zone[1:3]), int(zone[4:6])
            tz = datetime.timezone(sign * datetime.timedelta(hours=hours, minutes=minutes))
        parsed = datetime.datetime.fromisoformat(f"{match['date']}T{match['time']}")
        whole = parsed.replace(tzinfo=tz)
    except ValueError:
        return None
    seconds = (whole - _EPOCH) // datetime.timedelta(seconds=1)
    fraction = match["fraction"]
    if fraction:
        return float(seconds + fractions.Fraction(int(fraction), 10 ** len(fraction)))
    return float(seconds)


def _split(t: float) -> tuple[int, int]:
    """Whole seconds and microseconds of ``t``, rounded to the nearest microsecond."""
    seconds = math.floor(t)
    micros = round((t - seconds) * 1_000_000)
    if micros == 1_000_000:
        seconds, micros = seconds + 1, 0
    return seconds, micros


def _utc(seconds: int) -> str:
    moment = _EPOCH + datetime.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def format_time(t: float) -> str:
    """RFC 3339 in UTC: ``2024-05-01T12:00:00Z``, or ``...:00.250000Z`` when ``t`` has a
    fraction of a second (to the nearest microsecond).

    Raises ``OverflowError`` or ``ValueError`` for times outside the years 1 to 9999.
    """
    seconds, micros = _split(t)
    if micros:
        return f"{_utc(seconds)}.{micros:06d}Z"
    return f"{_utc(seconds)}Z"


def format_time_seconds(t: float) -> str:
    """RFC 3339 in UTC, in whole seconds (the fraction is dropped, as ``metav1.Time`` does).

    Raises like :func:`format_time`.
    """
    return f"{_utc(math.floor(t))}Z"


def format_micro_time(t: float) -> str:
    """RFC 3339 in UTC with exactly six fractional digits, as ``metav1.MicroTime``.

    Raises like :func:`format_time`.
    """
    seconds, micros = _split(t)
    return f"{_utc(seconds)}.{micros:06d}Z"

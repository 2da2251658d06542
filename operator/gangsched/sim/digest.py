"""The timeline, digested: what happened to many jobs at once said once.

A simulation of sixteen Spark jobs makes sixteen "submitted" entries at the same instant,
sixteen "Accepted", and, under a pod-by-pod scheduler, sixteen "gave up" and sixteen
"resubmitted" per attempt. :func:`group` merges the entries made at the same instant, by
the same source, with the same text, about subjects of the same kind, into one line
naming every subject (``apps spark-1..spark-16``, in natural order). Nothing is dropped:
``--timeline`` prints every entry as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gangsched.core.values.naming import natural_key
from gangsched.sim.timeline import Entry

MAX_PIECES = 4
"""Name ranges listed before "and N more"."""

_NUMBERED = re.compile(r"^(.*?)(\d+)$")
PLURALS = {"app": "apps", "podgroup": "podgroups", "job": "jobs", "node": "nodes",
           "pod": "pods"}


@dataclass(frozen=True, slots=True)
class Line:
    t: float
    kind: str
    """``app``, ``podgroup``, ``job``, ``node``... (the first word of the subjects)."""
    names: tuple[str, ...]
    source: str
    text: str

    @property
    def subject(self) -> str:
        if len(self.names) == 1:
            return f"{self.kind} {self.names[0]}"
        return f"{PLURALS.get(self.kind, self.kind)} {names(self.names)}"


def group(entries: Iterable[Entry]) -> list[Line]:
    """Merge the entries of one instant that say the same about subjects of one kind.

    Lines keep the order of their first entry. Entries are expected in time order (the
    timeline's); an instant's entries are merged wherever they are within that instant.
    """
    result: list[Line] = []
    instant: dict[tuple[str, str, str], list[str]] = {}
    order: list[tuple[str, str, str]] = []
    now: float | None = None

    def flush() -> None:
        assert now is not None or not order
        for key in order:
            kind, source, text = key
            result.append(Line(now or 0.0, kind, tuple(instant[key]), source, text))
        instant.clear()
        order.clear()

    for entry in entries:
        if entry.t != now:
            flush()
            now = entry.t
        kind, _, name = entry.subject.partition(" ")
        key = (kind, entry.source, entry.text)
        if key not in instant:
            instant[key] = []
            order.append(key)
        instant[key].append(name)
    flush()
    return result


def names(found: Sequence[str]) -> str:
    """``spark-1..spark-16``: names in natural order, runs of three or more consecutive
    numbers as a range; after MAX_PIECES pieces, ``and N more`` (N names)."""
    ordered = sorted(dict.fromkeys(found), key=natural_key)
    pieces: list[tuple[str, int]] = []
    run: list[tuple[str, int, str]] = []

    def close() -> None:
        if len(run) >= 3:
            pieces.append((f"{run[0][2]}..{run[-1][2]}", len(run)))
        else:
            pieces.extend((name, 1) for _, _, name in run)
        run.clear()

    for name in ordered:
        match = _NUMBERED.match(name)
        if match is None or (match.group(2).startswith("0") and match.group(2) != "0"):
            close()
            pieces.append((name, 1))
            continue
        prefix, number = match.group(1), int(match.group(2))
        if run and (run[-1][0] != prefix or run[-1][1] + 1 != number):
            close()
        run.append((prefix, number, name))
    close()
    if len(pieces) > MAX_PIECES:
        hidden = sum(count for _, count in pieces[MAX_PIECES - 1:])
        return ", ".join([*(text for text, _ in pieces[:MAX_PIECES - 1]),
                          f"and {hidden} more"])
    return ", ".join(text for text, _ in pieces)

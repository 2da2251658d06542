"""Deterministic, API-server-valid names for the objects the operator creates.

A placeholder's name is a pure function of its application (name and uid), task group and
member index, so that a retry after a crash finds the placeholder it made before (a 409
AlreadyExists) instead of making a second one. Names stay within 63 characters, the DNS
label limit (a pod's hostname comes from its name), by trimming and adding a hash.
"""

from __future__ import annotations

import functools
import hashlib
import re

MAX_LABEL = 63
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


_DIGITS = re.compile(r"(\d+)")


@functools.lru_cache(maxsize=65536)
def natural_key(text: str) -> tuple[tuple[int | str, ...], str]:
    """``text`` ordered as people read it: ``spark-2`` before ``spark-10``.

    Runs of digits compare as numbers, the rest as text; the parts alternate text and
    number, so any two keys compare without mixing types. ``text`` itself comes last, so
    that ``spark-02`` and ``spark-2`` still have a fixed order. Any string is accepted;
    the empty string sorts first.
    """
    parts = _DIGITS.split(text)
    return (tuple(int(part) if index % 2 else part for index, part in enumerate(parts)), text)


def short_hash(text: str, length: int = 5) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _trim(text: str, room: int) -> str:
    text = text[:room].rstrip("-.")
    return text or "x"


def placeholder_name(app_name: str, app_uid: str, task_group: str, index: int) -> str:
    """``<app>-<group>-<hash>-<index>``, trimmed to 63 characters, lower case."""
    digest = short_hash(f"{app_uid}/{app_name}/{task_group}")
    suffix = f"-{digest}-{index}"
    base = f"{app_name}-{task_group}".lower()
    if len(base) + len(suffix) > MAX_LABEL:
        base = _trim(base, MAX_LABEL - len(suffix))
    return base + suffix


def label_value(text: str) -> str:
    """``text`` if it is a valid label value; else a valid, unique, trimmed form of it."""
    if len(text) <= MAX_LABEL and _LABEL_VALUE.match(text):
        return text
    digest = short_hash(text, 10)
    cleaned = re.sub(r"[^-A-Za-z0-9_.]", "-", text)
    cleaned = _trim(cleaned.strip("-_."), MAX_LABEL - len(digest) - 1)
    return f"{cleaned}-{digest}"

"""Structured logs: text by default, one JSON object per line with ``--log-format json``.

Log lines about a gang carry its fields through ``extra=``: ``app`` (an Application,
``namespace/name``), ``podgroup``, ``queue``, ``pod`` (``namespace/name``), ``node``, and
``reason``, ``state``, ``code`` where they apply. In JSON they are keys of the object
(next to ``time``, ``level``, ``logger`` and ``message``, and ``exception`` with the
traceback); in text they follow the message as ``key=value``. Only these keys are taken
from a record, so the JSON schema does not depend on what a library puts in ``extra``.

:class:`Transitions` logs the changes of state of Applications and of phase of PodGroups
from the status decisions (a status changes for many reasons; only the state matters
here).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import IO, Any

from gangsched.core.values.decisions import SetAppStatus, SetPodGroupStatus
from gangsched.translate import times

FIELDS = ("app", "podgroup", "queue", "pod", "node", "reason", "state", "code")
FORMATS = ("text", "json")
ENV_FORMAT = "GANGSCHED_LOG_FORMAT"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

log = logging.getLogger("gangsched.shell.runtime")


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    found = {}
    for name in FIELDS:
        value = record.__dict__.get(name)
        if value is not None and value != "":
            found[name] = value
    return found


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (RFC 3339, UTC, microseconds), level, logger,
    message, the gang fields present, and ``exception``/``stack`` when given."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": times.format_micro_time(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update(_fields(record))
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """The usual text line, then the gang fields present as ``key=value``."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = _fields(record)
        if not fields:
            return text
        pairs = " ".join(f"{key}={value}" for key, value in fields.items())
        head, sep, tail = text.partition("\n")  # a traceback follows the first line
        return f"{head} {pairs}{sep}{tail}"


def log_format(requested: str | None = None) -> str:
    """``requested``, else ``$GANGSCHED_LOG_FORMAT``, else ``text``. Raises ``ValueError``
    naming the accepted values for anything else."""
    value = (requested or os.environ.get(ENV_FORMAT) or "text").strip().lower()
    if value not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, got {value!r}")
    return value


def handler(fmt: str, stream: IO[str] | None = None) -> logging.Handler:
    """A stream handler (stderr by default) with the formatter of ``fmt``."""
    out = logging.StreamHandler(stream or sys.stderr)
    out.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    return out


def configure(level: str | int = "INFO", fmt: str | None = None, *,
              stream: IO[str] | None = None) -> None:
    """Configure the root logger of the process (``gangsched run``): level and format
    (see :func:`log_format`), to ``stream`` (stderr by default), replacing handlers
    configured before."""
    logging.basicConfig(level=level, handlers=[handler(log_format(fmt), stream)], force=True)


class Transitions:
    """Log a line when an Application's state or a PodGroup's phase changes."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.log = logger or log
        self.states: dict[str, str] = {}

    def app(self, d: SetAppStatus) -> None:
        old = self.states.get(d.key)
        if old == d.state:
            return
        self.states[d.key] = d.state
        level = logging.WARNING if d.state in ("Killed", "Rejected", "Failed") else logging.INFO
        why = f" ({d.reason})" if d.reason and d.reason != d.state else ""
        self.log.log(level, "application %s: %s -> %s%s%s", d.key, old or "(new)", d.state,
                     why, f": {d.message}" if d.message else "",
                     extra={"app": d.key, "queue": d.queue, "state": d.state,
                            "reason": d.reason})

    def podgroup(self, d: SetPodGroupStatus) -> None:
        key = f"podgroup:{d.key}"
        old = self.states.get(key)
        if old == d.phase:
            return
        self.states[key] = d.phase
        level = logging.WARNING if d.phase in ("Failed", "TimedOut") else logging.INFO
        self.log.log(level, "podgroup %s: %s -> %s%s", d.key, old or "(new)", d.phase,
                     f": {d.message}" if d.message else "",
                     extra={"podgroup": d.key, "state": d.phase, "reason": d.reason})

    def forget(self, plural: str, key: str) -> None:
        self.states.pop(f"podgroup:{key}" if plural == "podgroups" else key, None)

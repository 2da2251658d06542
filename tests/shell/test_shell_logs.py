"""Structured logs: the JSON and text formats, the format setting, state-change lines."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest
from gangsched.core.values.decisions import SetAppStatus, SetPodGroupStatus
from gangsched.core.values.model import AppKey, GroupKey
from gangsched.shell import logs


def record(message: str = "bound pod %s", *args: object, level: int = logging.INFO,
           **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("gangsched.shell.runtime", level, __file__, 1, message,
                             args or ("default/w-0",), None)
    made.__dict__.update(extra)
    made.created = 1_800_000_000.25
    return made


def test_json_is_one_object_per_line_with_the_gang_fields() -> None:
    line = logs.JsonFormatter().format(record(pod="default/w-0", node="node-1",
                                              app="default/train", queue="", junk="x"))
    assert "\n" not in line
    assert json.loads(line) == {
        "time": "2027-01-15T08:00:00.250000Z", "level": "INFO",
        "logger": "gangsched.shell.runtime", "message": "bound pod default/w-0",
        "app": "default/train", "pod": "default/w-0", "node": "node-1"}


def test_json_carries_the_traceback() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        made = record(level=logging.ERROR)
        made.exc_info = sys.exc_info()
    out = json.loads(logs.JsonFormatter().format(made))
    assert out["level"] == "ERROR"
    assert "RuntimeError: boom" in out["exception"]


def test_text_puts_the_fields_after_the_message() -> None:
    line = logs.TextFormatter().format(record(pod="default/w-0", node="node-1", code=500))
    assert line.endswith("INFO gangsched.shell.runtime: bound pod default/w-0 "
                         "pod=default/w-0 node=node-1 code=500")
    assert logs.TextFormatter().format(record()).endswith("bound pod default/w-0")


@pytest.mark.parametrize(("requested", "env", "expected"), [
    pytest.param(None, None, "text", id="default"),
    pytest.param(None, "json", "json", id="from-env"),
    pytest.param("text", "json", "text", id="flag-wins"),
    pytest.param("JSON", None, "json", id="any-case"),
])
def test_the_format_setting(requested: str | None, env: str | None, expected: str,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    if env is None:
        monkeypatch.delenv(logs.ENV_FORMAT, raising=False)
    else:
        monkeypatch.setenv(logs.ENV_FORMAT, env)
    assert logs.log_format(requested) == expected


def test_an_unknown_format_names_the_accepted_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(logs.ENV_FORMAT, "xml")
    with pytest.raises(ValueError, match="one of text, json, got 'xml'"):
        logs.log_format()


def test_configure_sets_the_root_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    stream = io.StringIO()
    monkeypatch.setenv(logs.ENV_FORMAT, "json")
    try:
        logs.configure("DEBUG", stream=stream)
        logging.getLogger("gangsched.test").debug("hello", extra={"node": "n"})
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    assert json.loads(stream.getvalue())["node"] == "n"


def app(state: str, reason: str = "", queue: str = "q") -> SetAppStatus:
    return SetAppStatus(AppKey("default/a"), state, reason, "why", queue, "0/1", 0, (),
                        None, None, None, None)


def test_transitions_log_only_changes_of_state(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    transitions = logs.Transitions(logging.getLogger("gangsched.test"))
    for d in (app("Accepted", "Accepted"), app("Accepted", "Accepted"),
              app("Killed", "PlaceholderTimeout")):
        transitions.app(d)
    group = SetPodGroupStatus(GroupKey("default/g"), "TimedOut", "ScheduleTimeout", "late",
                              1, 0, 0, 0, 0, 0, None)
    transitions.podgroup(group)
    transitions.podgroup(group)
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert lines == [
        (logging.INFO, "application default/a: (new) -> Accepted: why"),
        (logging.WARNING, "application default/a: Accepted -> Killed (PlaceholderTimeout): why"),
        (logging.WARNING, "podgroup default/g: (new) -> TimedOut: late"),
    ]
    assert caplog.records[1].__dict__["app"] == "default/a"
    assert caplog.records[1].__dict__["queue"] == "q"
    assert caplog.records[2].__dict__["podgroup"] == "default/g"
    transitions.forget("applications", "default/a")
    transitions.app(app("Accepted"))
    assert caplog.records[-1].getMessage().startswith("application default/a: (new) ->")

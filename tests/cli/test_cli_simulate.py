"""gangsched simulate: text, --json, --plot, --generate, errors and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from gangsched import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulations"
DEADLOCK = str(EXAMPLES / "spark-deadlock.yaml")
QUOTA = str(EXAMPLES / "queue-quota.yaml")

NUMBER_OR_NULL = {"type": ["number", "null"]}
STATS = {
    "type": "object",
    "required": ["count", "mean", "p50", "p95", "max"],
    "properties": {"count": {"type": "integer"}, "mean": NUMBER_OR_NULL,
                   "p50": NUMBER_OR_NULL, "p95": NUMBER_OR_NULL, "max": NUMBER_OR_NULL},
}
OUTCOMES = ["completed", "failed", "killed", "rejected", "timedOut", "stalled", "unfinished"]
SCHEMA = {
    "type": "object",
    "required": ["schema", "workload", "runs"],
    "properties": {
        "schema": {"const": "gangsched.sim/v1"},
        "workload": {"type": "string"},
        "runs": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "required": ["scheduler", "summary", "jobs", "timeline"],
            "properties": {
                "scheduler": {"enum": ["gangsched", "naive"]},
                "summary": {
                    "type": "object",
                    "required": ["jobs", "outcomes", "completed", "jobTimeouts", "retries",
                                 "waitToFullGang", "jobMakespan", "makespan", "utilisation",
                                 "reservedIdle", "cycles", "wallSeconds"],
                    "properties": {
                        "jobs": {"type": "integer"},
                        "outcomes": {"type": "object", "propertyNames": {"enum": OUTCOMES},
                                     "additionalProperties": {"type": "integer"}},
                        "waitToFullGang": STATS,
                        "jobMakespan": STATS,
                        "makespan": NUMBER_OR_NULL,
                        "utilisation": {"type": "object", "required": [
                            "cpu", "memory", "cpu.busy", "cpu.idle", "cpu.placeholder"],
                            "additionalProperties": {"type": "number", "minimum": 0}},
                        "reservedIdle": {"type": "object", "required": [
                            "placeholderCpuSeconds", "placeholderMemoryGiBSeconds",
                            "waitingPodsCpuSeconds", "waitingPodsMemoryGiBSeconds"]},
                    },
                },
                "jobs": {"type": "array", "items": {
                    "type": "object",
                    "required": ["name", "kind", "queue", "submittedAt", "gangStartedAt",
                                 "finishedAt", "waitToFullGang", "makespan", "outcome",
                                 "reason", "attempts", "jobTimeouts", "phases"],
                    "properties": {
                        "kind": {"enum": ["application", "podGroup", "pods"]},
                        "outcome": {"enum": OUTCOMES},
                        "phases": {"type": "array", "items": {
                            "type": "object", "required": ["start", "end", "phase"],
                            "properties": {"phase": {"enum": ["queued", "holding",
                                                              "running"]}}}},
                    },
                }},
                "timeline": {"type": "array", "items": {
                    "type": "object", "required": ["t", "subject", "source", "text"]}},
            },
        }},
    },
}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["simulate", QUOTA, "--timeline", "all"], capsys)
    assert code == 0
    for heading in ("Timeline (gangsched)", "Jobs (gangsched)", "Summary (gangsched)"):
        assert heading in out
    assert "Accepted -> Killed" in out and "reserved but idle" in out


def test_json_output_follows_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["simulate", DEADLOCK, "--json", "--compare", "naive"], capsys)
    assert code == 0
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    gang, naive = document["runs"]
    assert (gang["scheduler"], naive["scheduler"]) == ("gangsched", "naive")
    assert gang["summary"]["completed"] == 16 and naive["summary"]["completed"] == 0
    assert naive["summary"]["jobTimeouts"] == 48
    assert all(job["outcome"] == "timedOut" for job in naive["jobs"])


def test_plot_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "chart.png"
    code, _, err = run(["simulate", DEADLOCK, "--compare", "naive", "--plot", str(target),
                        "--timeline", "0", "--jobs", "0"], capsys)
    assert code == 0 and f"wrote {target}" in err
    assert target.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_an_unwritable_plot_is_an_input_error(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["simulate", QUOTA, "--plot", str(tmp_path / "no" / "x.png")], capsys)
    assert code == 2 and "cannot write" in err


def test_workload_errors_name_file_line_and_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "workload.yaml"
    bad.write_text("nodes:\n  - {pool: w, count: 2, cpu: 8, memory: 32Gi}\n"
                   "applications:\n"
                   "  - name: spark\n"
                   "    taskGroups:\n"
                   "      - {name: driver, minMember: 0, minResource: {cpu: 1}}\n"
                   "    pods: [{taskGroup: driver, duration: 60}]\n")
    code, out, err = run(["simulate", str(bad)], capsys)
    assert code == 2 and not out
    assert (f"{bad}:6:35: applications[0].taskGroups[0].minMember: must be an integer ≥ 1, "
            "got 0") in err
    assert "1 problem in" in err


def test_a_missing_file_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["simulate", "/nonexistent.yaml"], capsys)
    assert code == 2 and "/nonexistent.yaml: (top level): cannot read the file" in err


@pytest.mark.parametrize(("workload", "expected"), [(QUOTA, 1), (DEADLOCK, 0)],
                         ids=["killed-and-rejected", "all-complete"])
def test_fail_on_timeout(workload: str, expected: int,
                         capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["simulate", workload, "--fail-on-timeout", "--compare", "naive",
                        "--timeline", "0"], capsys)
    assert code == expected
    assert ("did not complete under gangsched" in err) == (expected == 1)


def test_generate_write_and_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "day.yaml"
    code, out, err = run(["simulate", "--generate", "day", "--nodes", "30", "--pods", "300",
                          "--write-workload", str(saved), "--until", "7200", "--progress",
                          "--json"], capsys)
    assert code == 0
    first = json.loads(out)
    assert first["runs"][0]["summary"]["jobs"] > 0
    assert "jobs ended" in err  # the progress bar, forced on with --progress
    code, out, _ = run(["simulate", str(saved), "--until", "7200", "--json"], capsys)
    assert code == 0
    replay = json.loads(out)
    assert replay["runs"][0]["jobs"] == first["runs"][0]["jobs"]

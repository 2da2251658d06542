"""gangsched simulate: text, --json, --plot, --generate, --explain, errors and exit codes.

Every run here reads a copy of the examples in a temporary folder: the chart is written
beside the workload by default, and no test writes into the checkout.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
from gangsched import cli

SOURCE = Path(__file__).resolve().parents[2] / "examples" / "simulations"


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("examples")
    for path in SOURCE.glob("*.yaml"):
        shutil.copy(path, copy / path.name)
    return copy


@pytest.fixture
def deadlock(examples: Path) -> str:
    return str(examples / "spark-deadlock.yaml")


@pytest.fixture
def quota(examples: Path) -> str:
    return str(examples / "queue-quota.yaml")


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
            "required": ["scheduler", "summary", "jobs", "usage", "timeline"],
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
                                 "reason", "attempts", "jobTimeouts", "phases", "pods"],
                    "properties": {
                        "kind": {"enum": ["application", "podGroup", "pods"]},
                        "outcome": {"enum": OUTCOMES},
                        "phases": {"type": "array", "items": {
                            "type": "object", "required": ["start", "end", "phase"],
                            "properties": {"phase": {"enum": ["queued", "holding",
                                                              "running"]}}}},
                        "pods": {"type": "array", "items": {
                            "type": "object",
                            "required": ["name", "member", "attempt", "node", "createdAt",
                                         "startedAt", "endedAt", "status"],
                            "properties": {
                                "node": {"type": ["string", "null"]},
                                "createdAt": {"type": "number"},
                                "startedAt": NUMBER_OR_NULL, "endedAt": NUMBER_OR_NULL,
                                "status": {"enum": ["pending", "running", "succeeded",
                                                    "failed", "gone"]}}}},
                    },
                }},
                "usage": {"type": "object", "required": ["resource", "series"], "properties": {
                    "series": {"type": "array", "minItems": 1, "items": {
                        "type": "object",
                        "required": ["t", "capacity", "busy", "idle", "placeholder"],
                        "additionalProperties": {"type": "number"}}}}},
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


def test_text_output(quota: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["simulate", quota, "--timeline", "all", "--no-plot"], capsys)
    assert code == 0
    for heading in ("Timeline (gangsched)", "Jobs (gangsched)", "Summary (gangsched)"):
        assert heading in out
    assert "Accepted -> Killed" in out and "reserved but idle" in out


def test_json_output_follows_the_schema(deadlock: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["simulate", deadlock, "--json", "--compare", "naive"], capsys)
    assert code == 0
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    gang, naive = document["runs"]
    assert (gang["scheduler"], naive["scheduler"]) == ("gangsched", "naive")
    assert gang["summary"]["completed"] == 16 and naive["summary"]["completed"] == 0
    assert naive["summary"]["jobTimeouts"] == 48
    assert all(job["outcome"] == "timedOut" for job in naive["jobs"])


def test_plot_writes_a_png(tmp_path: Path, deadlock: str,
                           capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "chart.png"
    code, _, err = run(["simulate", deadlock, "--compare", "naive", "--plot", str(target),
                        "--timeline", "0", "--jobs", "0"], capsys)
    assert code == 0 and f"wrote {target}" in err
    assert target.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_an_unwritable_plot_is_an_input_error(tmp_path: Path, quota: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["simulate", quota, "--plot", str(tmp_path / "no" / "x.png")], capsys)
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
    assert code == 2 and not out and not (tmp_path / "workload.png").exists()
    assert (f"{bad}:6:35: applications[0].taskGroups[0].minMember: must be an integer ≥ 1, "
            "got 0") in err
    assert "1 problem in" in err


def test_a_missing_file_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["simulate", "/nonexistent.yaml"], capsys)
    assert code == 2 and "/nonexistent.yaml: (top level): cannot read the file" in err


@pytest.mark.parametrize(("workload", "expected"),
                         [("queue-quota.yaml", 1), ("spark-deadlock.yaml", 0)],
                         ids=["killed-and-rejected", "all-complete"])
def test_fail_on_timeout(workload: str, expected: int, examples: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["simulate", str(examples / workload), "--fail-on-timeout",
                        "--compare", "naive", "--no-plot"], capsys)
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


# --- the verdict first, a digest, the full timeline behind a flag ---------------------------


def test_the_verdict_and_the_comparison_come_first(deadlock: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["simulate", deadlock, "--compare", "naive", "--no-plot"], capsys)
    assert code == 0
    head = out.splitlines()[:25]
    assert head[0].endswith("16 jobs, 80 pods on 4 nodes (32 cpu), under gangsched and naive")
    assert head[1].split() [:5] == ["gangsched", "16/16", "jobs", "completed", "in"]
    assert "naive      0/16 jobs completed (16 timedOut)" in head[2]
    table = head[head.index(next(h for h in head if h.startswith("Comparison"))):]
    rows = {m.group(1): [m.group(2), m.group(3)] for line in table[2:]
            if (m := re.match(r"\s+(.*?)\s{2,}(\S+)\s+(\S+)$", line))}
    assert rows["jobs completed"] == ["16/16", "0/16"]
    assert rows["driver timeouts"] == ["0", "48"]
    assert "Timeline (gangsched)" not in out  # only with --timeline


def test_repeated_events_are_grouped(deadlock: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(["simulate", deadlock, "--compare", "naive", "--no-plot"], capsys)
    naive = out[out.index("What happened (naive"):]
    assert "apps spark-1..spark-16: submitted: 5 pods" in naive
    assert sum("gave up (driverTimeoutSeconds)" in line for line in naive.splitlines()) == 3
    assert "apps spark-1..spark-16: resubmitted (attempt 2)" in naive
    assert len(out.splitlines()) < 140  # it was about 280 lines


def test_the_full_timeline_is_behind_a_flag(deadlock: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(["simulate", deadlock, "--timeline", "--no-plot"], capsys)
    timeline = out[out.index("Timeline (gangsched)"):out.index("Jobs (gangsched)")]
    assert sum(" submitted: 5 pods" in line for line in timeline.splitlines()) == 16
    assert "What happened" not in out


def test_fifo_ties_start_in_natural_name_order(deadlock: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """All 16 jobs are submitted at 0 in a FIFO queue: spark-1..3 start first, then 4, 5."""
    _, out, _ = run(["simulate", deadlock, "--timeline", "--no-plot"], capsys)
    started = [line.split()[2] for line in out.splitlines()
               if "Accepted -> Starting" in line]
    assert started[:6] == ["spark-1", "spark-2", "spark-3", "spark-4", "spark-5", "spark-6"]


# --- the chart -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "written"),
    [
        pytest.param([], True, id="by-default-beside-the-workload"),
        pytest.param(["--no-plot"], False, id="no-plot"),
        pytest.param(["--json"], False, id="not-with-json"),
    ],
)
def test_the_chart_is_drawn_beside_the_workload_by_default(
        tmp_path: Path, examples: Path, extra: list[str], written: bool,
        capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.yaml"
    shutil.copy(examples / "deadlock.yaml", workload)
    code, _, err = run(["simulate", str(workload), *extra], capsys)
    chart = tmp_path / "w.png"
    assert code == 0 and chart.exists() is written
    if written:
        assert chart.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        assert f"wrote {chart} (--no-plot to skip it)" in err


def test_a_default_chart_that_cannot_be_written_is_only_a_note(
        tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.yaml"
    shutil.copy(examples / "deadlock.yaml", workload)
    (tmp_path / "w.png").mkdir()  # a directory where the chart would go
    code, out, err = run(["simulate", str(workload)], capsys)
    assert code == 0 and "jobs completed" in out and "cannot write" in err


@pytest.mark.parametrize(
    ("name", "magic"),
    [pytest.param("chart.svg", b"<?xml", id="svg"), pytest.param("chart.pdf", b"%PDF", id="pdf"),
     pytest.param("chart.PNG", b"\x89PNG", id="png-any-case")],
)
def test_the_chart_format_follows_the_suffix(tmp_path: Path, quota: str, name: str,
                                             magic: bytes,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / name
    code, _, _ = run(["simulate", quota, "--plot", str(target)], capsys)
    data = target.read_bytes()
    assert code == 0 and data.startswith(magic)
    if name.endswith(".svg"):
        assert b"<svg" in data


# --- --json: pods and the usage curve --------------------------------------------------------


def test_json_has_each_pods_node_and_times_and_the_usage_curve(
        quota: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["simulate", quota, "--json"], capsys)
    assert code == 0
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    (gang,) = document["runs"]
    pods = [pod for job in gang["jobs"] for pod in job["pods"]]
    ran = [pod for pod in pods if pod["startedAt"] is not None]
    assert ran and all(pod["node"] for pod in ran)
    assert all(pod["createdAt"] <= pod["startedAt"] <= pod["endedAt"] for pod in ran)
    series = gang["usage"]["series"]
    assert [point["t"] for point in series] == sorted(point["t"] for point in series)
    assert max(point["busy"] for point in series) > 0
    assert all(point["busy"] + point["idle"] + point["placeholder"] <= point["capacity"]
               for point in series)


# --- --explain and --actions -----------------------------------------------------------------

NEVER_FITS = """\
nodes:
  - {pool: n, count: 2, cpu: 4, memory: 16Gi}
applications:
  - name: huge
    style: Hard
    placeholderTimeoutSeconds: 60
    taskGroups:
      - {name: worker, minMember: 2, minResource: {cpu: 8, memory: 1Gi}}
    pods:
      - {taskGroup: worker, count: 2, duration: 60, cpu: 8, memory: 1Gi}
  - name: small
    taskGroups:
      - {name: worker, minMember: 1, minResource: {cpu: 1, memory: 1Gi}}
    pods:
      - {taskGroup: worker, count: 1, duration: 60, cpu: 1, memory: 1Gi}
"""


def test_a_simulated_job_is_explained(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "never.yaml"
    workload.write_text(NEVER_FITS)
    code, out, _ = run(["simulate", str(workload), "--no-plot", "--explain", "huge"], capsys)
    assert code == 0
    explained = out[out.index("Explain huge"):]
    assert "Application default/huge" in explained
    assert "state:   Accepted" in explained
    assert "blocked by Unsatisfiable" in explained
    assert "largest node allowed: cpu=4" in explained
    assert "Warning Unsatisfiable" in explained  # the event, in its history
    assert "app huge: Unsatisfiable: task group worker needs" in out  # in the timeline too
    assert "stalled" in out  # it waits for nodes; the small job completes
    assert "Application default/small" not in out


def test_explaining_an_unknown_job_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "never.yaml"
    workload.write_text(NEVER_FITS)
    code, out, err = run(["simulate", str(workload), "--explain", "hug"], capsys)
    assert code == 2 and not out
    assert "--explain hug: no such job" in err and "jobs: huge, small" in err


@pytest.mark.parametrize("value", ["", " , ", ","], ids=["empty", "blanks", "comma"])
def test_no_actions_is_refused(value: str, quota: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["simulate", quota, "--actions", value], capsys)
    assert code == 2 and not out
    assert "names no action: give at least one of" in err and "allocate" in err


def test_warnings_go_to_stderr_and_the_run_goes_on(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text("nodes:\n  - {name: n, cpu: 4, memory: 16Gi}\n"
                        "pods:\n  - {name: web, duration: 60, cpu: 1.5Gi, memory: 1Gi}\n")
    code, out, err = run(["simulate", str(workload), "--no-plot"], capsys)
    assert code == 0 and "1 jobs" in out.splitlines()[0]
    assert f"{workload}:4:36: pods[0].cpu: warning: cpu: 1.5Gi is" in err

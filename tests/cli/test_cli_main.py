"""The gangsched command: help, exit codes, and the lazily loaded operator shell."""

from __future__ import annotations

import argparse
import subprocess
import sys
import types

import pytest
from gangsched import cli


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["simulate", "--help"],
                                  ["explain", "--help"]], ids=" ".join)
def test_help_everywhere(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == cli.EXIT_OK
    assert "usage: gangsched" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([], id="no-command"),
        pytest.param(["fly"], id="unknown-command"),
        pytest.param(["simulate", "--bogus"], id="unknown-option"),
        pytest.param(["simulate"], id="no-workload"),
        pytest.param(["simulate", "w.yaml", "--generate", "day"], id="workload-and-generate"),
        pytest.param(["simulate", "w.yaml", "--write-workload", "x.yaml"], id="write-no-gen"),
        pytest.param(["simulate", "--generate", "day", "--nodes", "0"], id="zero-nodes"),
        pytest.param(["simulate", "--generate", "day", "--nodes", "100001"], id="too-many-nodes"),
        pytest.param(["simulate", "w.yaml", "--actions", ""], id="no-actions"),
        pytest.param(["simulate", "w.yaml", "--plot", "x.png", "--no-plot"],
                     id="plot-and-no-plot"),
        pytest.param(["simulate", "w.yaml", "--timeline", "some"], id="bad-limit"),
        pytest.param(["simulate", "w.yaml", "--actions", "allocate,fly"], id="unknown-action"),
        pytest.param(["run", "--actions", "elect,allocate"], id="elect-without-reserve"),
        pytest.param(["run", "--overcommit-factor", "0"], id="zero-overcommit"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == cli.EXIT_USAGE
    assert capsys.readouterr().err


def test_generated_nodes_go_up_to_100000_and_the_refusal_says_why(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli._node_count("100000") == 100_000
    assert cli.main(["simulate", "--generate", "day", "--nodes", "100001"]) == cli.EXIT_USAGE
    assert "must be at most 100000 (the largest clusters run today: EKS's 100,000 nodes), " \
        "got 100001" in capsys.readouterr().err


def _fake_shell(monkeypatch: pytest.MonkeyPatch, calls: list[object]) -> None:
    main = types.ModuleType("gangsched.shell.main")
    explain = types.ModuleType("gangsched.shell.explain")

    def run_operator(args: argparse.Namespace) -> int:
        calls.append(args)
        return 0

    def explain_(namespace: str, name: str, kind: str) -> int:
        calls.append((namespace, name, kind))
        return 1

    main.run_operator = run_operator  # type: ignore[attr-defined]
    explain.explain = explain_  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gangsched.shell.main", main)
    monkeypatch.setitem(sys.modules, "gangsched.shell.explain", explain)


def test_run_hands_its_options_to_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    _fake_shell(monkeypatch, calls)
    code = cli.main(["run", "--liveness=http://0.0.0.0:8080/healthz", "--scheduler-name", "a",
                     "--scheduler-name", "b", "--no-leader-election", "--debug"])
    assert code == 0
    (args,) = calls
    assert isinstance(args, argparse.Namespace)
    assert args.liveness == "http://0.0.0.0:8080/healthz"
    assert args.scheduler_name == ["a", "b"]
    assert args.no_leader_election is True and args.log_level == "DEBUG"
    assert args.kubeconfig is None and args.placeholder_image is None


def test_explain_passes_namespace_name_and_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    _fake_shell(monkeypatch, calls)
    assert cli.main(["explain", "team-a/spark-1"]) == 1  # the shell's own exit code
    assert cli.main(["explain", "mpi", "-n", "ml", "--kind", "podgroup"]) == 1
    assert calls == [("team-a", "spark-1", "Application"), ("ml", "mpi", "PodGroup")]


@pytest.mark.parametrize("argv", [["run"], ["explain", "x"]], ids=" ".join)
def test_without_the_shell_a_clear_error_and_exit_2(
        argv: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # None in sys.modules makes the import fail, as if the module did not exist.
    monkeypatch.setitem(sys.modules, "gangsched.shell.main", None)
    monkeypatch.setitem(sys.modules, "gangsched.shell.explain", None)
    assert cli.main(argv) == cli.EXIT_USAGE
    assert "the operator shell cannot be loaded" in capsys.readouterr().err


def test_an_internal_error_exits_3(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    from gangsched.sim import command

    def broken(*args: object) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(command, "simulate", broken)
    assert cli.main(["simulate", "--generate", "day"]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error: RuntimeError: boom" in err


def test_python_dash_m_gangsched() -> None:
    done = subprocess.run([sys.executable, "-m", "gangsched", "simulate", "--help"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "WORKLOAD.yaml" in done.stdout


def test_python_dash_m_without_arguments_runs_the_operator(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import runpy

    calls: list[object] = []
    _fake_shell(monkeypatch, calls)
    monkeypatch.setattr(sys, "argv", ["gangsched"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module("gangsched", run_name="__main__")
    assert done.value.code == 0
    assert len(calls) == 1 and isinstance(calls[0], argparse.Namespace)


def test_run_hands_the_scheduler_actions_to_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    _fake_shell(monkeypatch, calls)
    code = cli.main(["run", "--actions", "enqueue, elect,allocate,reserve",
                     "--overcommit-factor", "1.5", "--starvation-threshold", "120",
                     "--reservation-timeout", "900", "--deadlock-backoff", "30"])
    assert code == 0
    (args,) = calls
    assert isinstance(args, argparse.Namespace)
    assert args.actions == ("enqueue", "elect", "allocate", "reserve")
    assert (args.overcommit_factor, args.starvation_threshold, args.reservation_timeout,
            args.deadlock_backoff) == (1.5, 120.0, 900.0, 30.0)


def test_run_hands_the_preemption_settings_to_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    _fake_shell(monkeypatch, calls)
    code = cli.main(["run", "--actions", "enqueue,allocate,backfill,preempt,reclaim",
                     "--nomination-timeout", "120", "--eviction-backoff", "10"])
    assert code == 0
    (args,) = calls
    assert isinstance(args, argparse.Namespace)
    assert args.actions == ("enqueue", "allocate", "backfill", "preempt", "reclaim")
    assert (args.nomination_timeout, args.eviction_backoff) == (120.0, 10.0)


@pytest.mark.parametrize(("argv", "expected"), [
    pytest.param(["run", "--demand-placeholders"], True, id="on"),
    pytest.param(["run"], None, id="default-off"),
])
def test_run_hands_demand_placeholders_to_the_shell(monkeypatch: pytest.MonkeyPatch,
                                                    argv: list[str],
                                                    expected: bool | None) -> None:
    calls: list[object] = []
    _fake_shell(monkeypatch, calls)
    assert cli.main(argv) == 0
    (args,) = calls
    assert isinstance(args, argparse.Namespace)
    assert args.demand_placeholders is expected
@pytest.mark.parametrize("value", ["missing", "always", "Always"])
def test_run_hands_the_placeholder_policy_to_the_shell(monkeypatch: pytest.MonkeyPatch,
                                                       value: str) -> None:
    calls: list[object] = []
    _fake_shell(monkeypatch, calls)
    assert cli.main(["run", "--placeholders", value]) == 0
    (args,) = calls
    assert isinstance(args, argparse.Namespace)
    assert args.placeholders == value.lower()


def test_run_refuses_an_unknown_placeholder_policy(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["run", "--placeholders", "sometimes"])
    assert code == 2
    assert "invalid choice: 'sometimes'" in capsys.readouterr().err

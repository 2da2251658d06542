"""The ``gangsched`` command: ``run`` the operator, ``simulate`` a workload, ``explain`` a gang.

Exit codes mean the same for every command:

* 0: done;
* 1: ``simulate --fail-on-timeout`` finished, but some job failed, was killed, rejected,
  timed out or stalled under gangsched; or ``run`` stopped because it must be restarted
  (leadership lost, a supervised task failed);
* 2: bad usage or bad input (unknown option, a workload with errors, a file that cannot be
  written, the operator shell not installed);
* 3: an internal error (a bug: the traceback is printed).

``run`` and ``explain`` live in :mod:`gangsched.shell`, imported only when used, so that
``simulate`` works without the operator's dependencies and the CLI works without the shell.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import pathlib
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import cast

EXIT_OK = 0
EXIT_JOBS_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

PROG = "gangsched"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="A gang scheduler for Kubernetes: all of a job's pods start together, "
                    "or none do.",
        epilog="Exit codes: 0 ok; 1 jobs failed (simulate --fail-on-timeout) or the "
               "operator must be restarted (run); 2 usage or "
               "input error; 3 internal error.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_run(commands)
    _add_simulate(commands)
    _add_explain(commands)
    return parser


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run", help="start the operator (in a cluster, or against your kubeconfig)",
        description="Start the gangsched operator: watch pods, nodes, Applications, PodGroups "
                    "and Queues, and schedule gangs. GANGSCHED_NAMESPACE names the namespace "
                    "of the leader-election Lease.")
    run.add_argument("--liveness", metavar="URL",
                     help="serve a liveness endpoint, e.g. http://0.0.0.0:8080/healthz")
    run.add_argument("--kubeconfig", metavar="FILE",
                     help="run outside the cluster with this kubeconfig (default: in-cluster "
                          "config, else $KUBECONFIG)")
    run.add_argument("--scheduler-name", dest="scheduler_name", action="append",
                     metavar="NAME",
                     help="schedule pods whose spec.schedulerName is NAME (repeatable; "
                          "default gangsched)")
    run.add_argument("--placeholder-image", metavar="IMAGE",
                     help="image of placeholder pods (default registry.k8s.io/pause)")
    run.add_argument("--no-leader-election", action="store_true",
                     help="do not elect a leader (run a single replica only)")
    run.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                     default="INFO", type=str.upper, help="how much to log (default INFO)")
    run.add_argument("--debug", dest="log_level", action="store_const", const="DEBUG",
                     help="same as --log-level DEBUG")
    run.add_argument("--log-format", choices=["text", "json"], type=str.lower,
                     help="text (default), or one JSON object per line with app, queue, pod "
                          "and node fields (default: $GANGSCHED_LOG_FORMAT, else text)")
    run.add_argument("--metrics-port", type=_port, metavar="PORT",
                     help="serve Prometheus metrics on http://0.0.0.0:PORT/metrics "
                          "(default 9090; 0 for none)")
    run.add_argument("--dashboard-port", type=_port, metavar="PORT",
                     help="serve the read-only web dashboard on http://0.0.0.0:PORT/ "
                          "(off unless given; 0 for none)")
    run.add_argument("--kube-api-qps", dest="kube_api_qps", type=_non_negative, metavar="QPS",
                     help="requests per second to the API server, sustained (default 50, as "
                          "kube-scheduler; 0 for no client-side limit)")
    run.add_argument("--kube-api-burst", dest="kube_api_burst", type=int, metavar="N",
                     help="requests that may go at once above --kube-api-qps (default 100)")
    run.add_argument("--no-scheduled-events", dest="no_scheduled_events", action="store_true",
                     help="do not record the Scheduled Event of each pod bound (recorded by "
                          "default, as kube-scheduler does)")
    run.add_argument("--actions", type=_actions, metavar="A,B,...",
                     help="the scheduler's actions, in order (default "
                          "enqueue,allocate,backfill,preempt,reclaim; also elect,reserve)")
    run.add_argument("--overcommit-factor", type=_positive, metavar="X",
                     help="enqueue admits gangs that fit allocatable x X (default 1.0)")
    run.add_argument("--starvation-threshold", type=_non_negative, metavar="SECONDS",
                     help="elect: a gang waiting this long may get nodes reserved "
                          "(default 300)")
    run.add_argument("--reservation-timeout", type=_positive, metavar="SECONDS",
                     help="reserve: nodes are given back after this at the latest "
                          "(default 600)")
    run.add_argument("--deadlock-backoff", type=_non_negative, metavar="SECONDS",
                     help="a deadlock victim is not admitted again before this (default 60)")
    run.add_argument("--nomination-timeout", type=_positive, metavar="SECONDS",
                     help="preempt/reclaim: the room freed is held for the gang this long "
                          "at most (default 300)")
    run.add_argument("--eviction-backoff", type=_positive, metavar="SECONDS",
                     help="preempt/reclaim: wait after a refused eviction; doubles up to 10x "
                          "(default 30)")
    run.add_argument("--demand-placeholders", action="store_const", const=True,
                     help="create the placeholders of a gang held for capacity at once, "
                          "pending (PodScheduled=False, Unschedulable), so that a cluster "
                          "autoscaler scales up for it (default off)")
    run.add_argument("--profile", metavar="FILE",
                     help="scheduler profile: a KubeSchedulerConfiguration (YAML or JSON) "
                          "with one profile, or its plugins/pluginConfig alone; enable, "
                          "disable and weight the placement plugins (default: "
                          "kube-scheduler's default profile)")
    run.add_argument("--gather-window", type=float, metavar="SECONDS",
                     help="how long after a gang's first member no placeholder is made for "
                          "its missing members, so that members created together are bound "
                          "together (default 1.0; 0 turns it off)")
    run.add_argument("--placeholders", choices=["missing", "always"], type=str.lower,
                     help="which gang members get a placeholder pod: missing (default: only "
                          "members whose pod does not exist yet; pending ones are reserved "
                          "in memory) or always (every member, as YuniKorn does)")
    run.set_defaults(func=cmd_run)


def _add_simulate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sim = commands.add_parser(
        "simulate", help="run the scheduling core on a workload file under a simulated clock",
        description="Run the real scheduling core, with no cluster, on a workload of nodes, "
                    "queues and jobs arriving over time (see examples/simulations/README.md). "
                    "Prints the verdict first (and the comparison with --compare), then a "
                    "summary per run (wait to full gang, makespan, timeouts, utilisation, "
                    "resources reserved but idle), what happened (the timeline with "
                    "repeated events grouped) and the jobs. Draws the chart beside the "
                    "workload (WORKLOAD.png) unless --no-plot or --json.")
    sim.add_argument("workload", nargs="?", metavar="WORKLOAD.yaml",
                     help="the workload file (or use --generate)")
    sim.add_argument("--generate", choices=["day"],
                     help="simulate a generated workload instead: 'day' is a day of mixed "
                          "batch and AI jobs")
    sim.add_argument("--nodes", type=_node_count, default=1000,
                     help="nodes of the generated workload (default 1000, at most 100000: "
                          "the largest clusters run today); above 5000, GPU racks and "
                          "blocks and training gangs of 256 to 2048 pods")
    sim.add_argument("--pods", type=_positive_int, default=10_000,
                     help="pods of the generated workload (default 10000)")
    sim.add_argument("--seed", type=int, default=1, help="seed of the generated workload")
    sim.add_argument("--write-workload", metavar="FILE",
                     help="also save the generated workload as a workload file")
    sim.add_argument("--compare", choices=["naive"], action="append", default=[],
                     help="run the same workload under a pod-by-pod scheduler without gangs "
                          "too, and compare")
    plot = sim.add_mutually_exclusive_group()
    plot.add_argument("--plot", metavar="FILE",
                      help="draw a Gantt chart of the jobs over the cluster utilisation: SVG "
                           "or PDF by the suffix, else PNG (default: WORKLOAD.png beside the "
                           "workload file, when matplotlib is installed and not --json)")
    plot.add_argument("--no-plot", action="store_true", help="draw no chart")
    sim.add_argument("--json", action="store_true",
                     help="print machine-readable results (schema gangsched.sim/v1) instead "
                          "of text")
    sim.add_argument("--actions", type=_actions, metavar="A,B,...",
                     help="the scheduler's actions, in order (overrides "
                          "settings.scheduler.actions), e.g. enqueue,elect,allocate,reserve")
    sim.add_argument("--until", type=_non_negative, metavar="SECONDS",
                     help="stop the clock here (overrides settings.until)")
    sim.add_argument("--timeline", type=_limit, nargs="?", const=None, default=0,
                     metavar="N|all",
                     help="print the full timeline, every state change the core made, "
                          "instead of the grouped one (all entries, or the first N per run)")
    sim.add_argument("--explain", metavar="JOB",
                     help="explain the job JOB as 'gangsched explain' would, as the "
                          "gangsched run left it")
    sim.add_argument("--html", metavar="DIR",
                     help="write the dashboard's pages (queues, applications, nodes) for the "
                          "gangsched run, as it ended, into DIR: open DIR/index.html")
    sim.add_argument("--html-at", type=_non_negative, metavar="SECONDS",
                     help="with --html: the run as it was at this simulated time, not at "
                          "its end")
    sim.add_argument("--jobs", type=_limit, default=50, metavar="N|all",
                     help="jobs to list per run (default 50; 0 for none)")
    progress = sim.add_mutually_exclusive_group()
    progress.add_argument("--progress", action="store_true", default=None,
                          help="show a progress bar on stderr (default: when it is a terminal)")
    progress.add_argument("--no-progress", dest="progress", action="store_false")
    sim.add_argument("--fail-on-timeout", action="store_true",
                     help="exit 1 if any job failed, was killed, rejected, timed out or "
                          "stalled under gangsched")
    sim.set_defaults(func=cmd_simulate)


def _add_explain(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    explain = commands.add_parser(
        "explain", help="say why an application or a PodGroup is pending",
        description="Ask the cluster why a gang waits: its state, each task group's "
                    "blocking reason, and the numbers behind it.")
    explain.add_argument("name", metavar="NAME", help="the object's name, or NAMESPACE/NAME")
    explain.add_argument("-n", "--namespace", default=None,
                         help="namespace (default: from NAME, else 'default')")
    explain.add_argument("--kind", choices=["app", "podgroup"], default="app",
                         help="what NAME is (default app, an Application)")
    explain.set_defaults(func=cmd_explain)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _node_count(text: str) -> int:
    from gangsched.sim.parse import MAX_NODES, MAX_NODES_WHY

    value = _positive_int(text)
    if value > MAX_NODES:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_NODES} ({MAX_NODES_WHY}), got {value}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, got {value}")
    return value


def _positive(text: str) -> float:
    value = float(text)
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number ≥ 0, got {text}")
    return value


def _limit(text: str) -> int | None:
    if text == "all":
        return None
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 'all' or a number ≥ 0, got {text}")
    return value


# --- commands ------------------------------------------------------------------------------


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return EXIT_USAGE


def _shell(module: str, name: str, command: str) -> Callable[..., int] | None:
    """``gangsched.shell.<module>.<name>``, or None after saying why it cannot be loaded."""
    try:
        loaded = importlib.import_module(f"gangsched.shell.{module}")
        function: Callable[..., int] = getattr(loaded, name)
    except (ImportError, AttributeError) as error:
        _fail(f"{command}: the operator shell cannot be loaded ({error}); this installation "
              "can only simulate: see 'gangsched simulate --help'")
        return None
    return function


def _actions(text: str) -> tuple[str, ...]:
    """``--actions``: comma-separated action names, each known and none twice."""
    from gangsched.core.actions import factory

    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError(
            f"names no action: give at least one of {', '.join(sorted(factory.ACTIONS))}")
    try:
        return factory.validate(names)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def cmd_run(args: argparse.Namespace) -> int:
    run_operator = _shell("main", "run_operator", "run")
    return EXIT_USAGE if run_operator is None else run_operator(args)


def cmd_explain(args: argparse.Namespace) -> int:
    namespace, _, name = args.name.rpartition("/")
    namespace = args.namespace or namespace or "default"
    if not name:
        return _fail(f"explain: {args.name!r} is not a name")
    kind = {"app": "Application", "podgroup": "PodGroup"}[args.kind]
    explain = _shell("explain", "explain", "explain")
    return EXIT_USAGE if explain is None else explain(namespace, name, kind)


def cmd_simulate(args: argparse.Namespace) -> int:
    from gangsched.sim import command

    if (args.workload is None) == (args.generate is None):
        return _fail("simulate: give a WORKLOAD file or --generate day (one of them)")
    if args.write_workload and args.generate is None:
        return _fail("simulate: --write-workload saves a generated workload; use it with "
                     "--generate")
    progress = args.progress if args.progress is not None else sys.stderr.isatty()
    plot = args.plot if args.plot is not None else _default_plot(args)
    plot_by_default = args.plot is None and plot is not None
    explainer: Callable[..., str] | None = None
    if args.explain is not None or args.html is not None:
        loaded = _shell("explain", "format_explanation",
                        "simulate --explain" if args.explain is not None else "simulate --html")
        if loaded is None:
            return EXIT_USAGE
        explainer = cast(Callable[..., str], loaded)
    options = command.Options(
        workload=args.workload,
        generate=args.generate,
        nodes=args.nodes,
        pods=args.pods,
        seed=args.seed,
        write_workload=args.write_workload,
        compare=tuple(dict.fromkeys(args.compare)),
        plot=plot,
        plot_by_default=plot_by_default,
        json=args.json,
        until=args.until,
        timeline=args.timeline,
        jobs=args.jobs,
        progress=progress,
        fail_on_timeout=args.fail_on_timeout,
        actions=args.actions,
        explain=args.explain,
        explainer=explainer,
        html=args.html,
        html_at=args.html_at,
    )
    return command.simulate(options, sys.stdout, sys.stderr)


def _default_plot(args: argparse.Namespace) -> str | None:
    """WORKLOAD.png beside the workload file, when text is printed and matplotlib is
    installed; else None (no chart)."""
    if args.no_plot or args.json or args.workload is None:
        return None
    if importlib.util.find_spec("matplotlib") is None:
        return None
    return str(pathlib.Path(args.workload).with_suffix(".png"))


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and run the command; return the exit code."""
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exit_:  # argparse: --help (0) or a usage error (2)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        code: int = args.func(args)
        return code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as error:
        traceback.print_exc(file=sys.stderr)
        print(f"{PROG}: internal error: {type(error).__name__}: {error} (this is a bug; "
              "please report it with the traceback above)", file=sys.stderr)
        return EXIT_INTERNAL


"""The operator's start-up: the first lists asked for at once, the collector paused, the
core's cycles off the event loop.

See :mod:`gangsched.shell.main`: every list the runtime starts with is asked for ahead
(before the runtime is imported for a single replica, once leading otherwise) and read
from there, once; the cyclic garbage collector waits for the first cycle. The first cycle
after a large list is the longest; it runs on the core's thread (see
:meth:`gangsched.shell.runtime.Runtime.cycle`), as every cycle does.
"""

from __future__ import annotations

import asyncio
import gc
import pathlib
import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fakeapi import FakeApiServer
from gangsched.shell.client import Connection, KubeClient
from gangsched.shell.main import FIRST_LISTS
from gangsched.shell.runtime import Runtime
from gangsched.shell.settings import OperatorSettings
from shellkit import FakeClock, OperatorUnderTest, condition, new_cluster, pod, wait_for


def lists_of(api: FakeApiServer, path: str) -> list[dict[str, str]]:
    """The query of every list request (not watch) to ``path``, in order."""
    found = []
    for entry in api.request_log:
        url = urlsplit(entry.path_qs)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == path and query.get("watch") != "true":
            found.append(query)
    return found


def test_the_first_lists_are_the_runtimes() -> None:
    """:data:`FIRST_LISTS` (written out so as not to import the core to know them) is
    what the runtime's sync lists, in its order."""
    runtime = Runtime(KubeClient(Connection(host="http://127.0.0.1:1")),
                      OperatorSettings(leader_election=False))
    assert runtime.first_lists() == FIRST_LISTS


@pytest.mark.parametrize("leader_election", [True, False], ids=["elected", "single"])
async def test_the_operator_asks_for_each_first_list_once(
        fake_api_factory: Any, tmp_path: pathlib.Path, leader_election: bool) -> None:
    """Asked for ahead (at start without leader election, once leading with it), every
    first list is read from there: nothing is listed twice, and the pods are all seen."""
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path)
    for i in range(3):
        api.create(pod(f"p-{i}"))
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(),
                                 leader_election=leader_election).start()
    try:
        assert op.runtime is not None
        assert len(op.runtime.scheduler.pods) == 3
        for path in FIRST_LISTS:
            asked = lists_of(api, path)
            assert len(asked) == 1, (path, asked)
    finally:
        await op.kill()


@pytest.mark.parametrize("before", [True, False], ids=["collecting", "not-collecting"])
async def test_the_collector_waits_for_the_first_cycle(
        fake_api_factory: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
        before: bool) -> None:
    """Paused from the start to the first cycle, then as it was: on again if it was on,
    still off if something else had turned it off."""
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path)
    api.create(pod("p-0"))
    seen: list[bool] = []
    cycle = Runtime.cycle

    def noting(runtime: Runtime) -> Any:
        seen.append(gc.isenabled())
        return cycle(runtime)

    monkeypatch.setattr(Runtime, "cycle", noting)
    was = gc.isenabled()
    (gc.enable if before else gc.disable)()
    try:
        op = await OperatorUnderTest(api, kubeconfig, FakeClock(),
                                     leader_election=False).start()
        try:
            await wait_for(lambda: seen, what="the first cycle")
            await wait_for(lambda: gc.isenabled() is before, what="the collector as before")
            assert seen[0] is False
        finally:
            await op.kill()
        assert gc.isenabled() is before
    finally:
        (gc.enable if was else gc.disable)()


def _node_of(api: FakeApiServer, name: str) -> str | None:
    obj = api.try_get("pods", "default", name)
    return None if obj is None else obj["spec"].get("nodeName")


async def test_the_event_loop_goes_on_while_the_core_decides(
        fake_api_factory: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cycle under way (held here until the test lets it go) does not hold the event
    loop: a pod created meanwhile reaches the inbox, for the next cycle, which binds it."""
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path)
    api.create(pod("p-0"))
    decide = Runtime.decide
    inside, go = threading.Event(), threading.Event()
    held: list[bool] = []

    def held_once(runtime: Runtime, batch: Any, now: float) -> Any:
        if not held:
            inside.set()
            held.append(go.wait(timeout=5))  # False if the loop could not let it go
        return decide(runtime, batch, now)

    monkeypatch.setattr(Runtime, "decide", held_once)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), leader_election=False).start()
    try:
        assert op.runtime is not None
        runtime = op.runtime
        await wait_for(inside.is_set, what="the first cycle under way")
        api.create(pod("p-1"))
        await wait_for(lambda: runtime.inbox, what="p-1 observed while the core decides")
        assert not held and _node_of(api, "p-0") is None
        go.set()
        await wait_for(lambda: _node_of(api, "p-0") and _node_of(api, "p-1"),
                       what="both bound")
        assert held == [True]
    finally:
        go.set()
        await op.kill()


async def test_a_cycle_that_ends_after_the_lease_is_lost_binds_nothing(
        fake_api_factory: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Leadership lost while the core worked: its decisions are dropped, and the loop
    stops (another replica lists everything again and decides afresh)."""
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path)
    api.create(pod("p-0"))
    decide = Runtime.decide
    decided: list[int] = []

    def losing(runtime: Runtime, batch: Any, now: float) -> Any:
        decisions = decide(runtime, batch, now)
        decided.append(len(decisions))
        lost = threading.Event()

        def lose() -> None:
            runtime.leading.clear()
            lost.set()
        loop.call_soon_threadsafe(lose)
        lost.wait(timeout=5)
        return decisions

    loop = asyncio.get_running_loop()
    monkeypatch.setattr(Runtime, "decide", losing)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), leader_election=False).start()
    try:
        assert op.runtime is not None
        await wait_for(lambda: op.task is not None and op.task.done(), what="the loop stops")
        assert decided and decided[0] > 0  # the core did decide (the bind, at least)
        assert _node_of(api, "p-0") is None
        assert op.runtime.binds.done == 0 and op.runtime.cycles == 0
    finally:
        await op.kill()


async def test_a_long_cycles_first_binds_do_not_wait_for_its_end(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """The binds a cycle has decided are carried out while it still works (see
    :mod:`gangsched.shell.early`): here the first cycle is held after its allocation,
    and its bind is served meanwhile; the pending report after it too. A placeholder
    creation stops that: what follows it waits for the cycle's end."""
    from gangsched.core.actions import factory

    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=1)
    api.create(pod("fits", cpu="1"))
    api.create(pod("too-big", cpu="64"))
    inside, go = threading.Event(), threading.Event()
    held: list[bool] = []
    allocate = factory.ACTIONS["allocate"]

    def holding(s: Any, now: float) -> None:
        allocate(s, now)
        if not held:
            inside.set()
            held.append(go.wait(timeout=10))

    def prepare(runtime: Runtime) -> None:
        runtime.scheduler.actions = {**factory.ACTIONS, "allocate": holding}

    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), prepare=prepare,
                                 leader_election=False).start()
    try:
        await wait_for(inside.is_set, what="the first cycle held after allocate")
        await wait_for(lambda: _node_of(api, "fits"), what="the bind served mid-cycle")
        await wait_for(lambda: condition(api.try_get("pods", "default", "too-big"),
                                         "PodScheduled").get("reason") == "Unschedulable",
                       what="the pending report written mid-cycle")
        assert not held  # the cycle is still under way
        go.set()
        await wait_for(lambda: held, what="the cycle let go")
        assert held == [True]
    finally:
        go.set()
        await op.kill()


def test_early_decisions_stop_at_the_first_that_must_wait() -> None:
    """Only a prefix of binds (without volume writes) and pending reports is given out
    early; everything from the first other decision on waits, and the rest of the
    cycle's list is what was not given out, in order."""
    from gangsched.core.state.outbox import Outbox
    from gangsched.core.values.decisions import BindPod, CreatePlaceholder, PodPending
    from gangsched.core.values.resources import Resources
    from gangsched.shell.early import Early

    bind = BindPod("u1", "default", "a", "n1", "Scheduled", ())
    pending = PodPending("u2", "default", "b", "Capacity", "no room", True)
    create = CreatePlaceholder("default/app", "g", 0, "ph-0", "default", Resources.ZERO)
    later = BindPod("u3", "default", "c", "n1", "Scheduled", ())
    out = Outbox()
    out.append(bind)
    early = Early(out)
    assert early.ready() == [bind]
    out.extend([pending, create, later])
    assert early.ready() == [pending]
    assert early.ready() == []  # stopped at the creation: ``later`` waits too
    assert out.retract(lambda d: d is create) == [create]  # the core takes a creation back
    assert early.ready() == []
    decisions = out.take()
    assert early.rest(decisions) == [later]
    assert Early(Outbox()).rest(decisions) == decisions


def test_the_outbox_never_changes_its_committed_prefix() -> None:
    """The decisions before the first placeholder creation or event are committed: they
    cannot be retracted nor rewritten, and another reader sees them all, in order."""
    from gangsched.core.state.outbox import Outbox
    from gangsched.core.values.decisions import (
        BindPod,
        CreatePlaceholder,
        EventType,
        ObjectRef,
        RecordEvent,
    )
    from gangsched.core.values.resources import Resources

    bind = BindPod("u1", "default", "a", "n1", "Scheduled", ())
    event = RecordEvent(ObjectRef("Pod", "default", "a", "u1"), EventType.NORMAL, "Seen", "x")
    create = CreatePlaceholder("default/app", "g", 0, "ph-0", "default", Resources.ZERO)
    out = Outbox()
    out.extend([bind, event, create, bind])
    assert out.committed_since(0) == [bind]
    with pytest.raises(ValueError, match="committed"):
        out.retract(lambda d: d is bind)
    with pytest.raises(ValueError, match="event"):
        out.rewrite(0, event)
    out.rewrite(1, event)
    assert out.retract(lambda d: d is create) == [create]
    assert list(out) == [bind, event, bind]
    assert out.take() == [bind, event, bind]
    assert len(out) == 0 and out.committed_since(0) == []

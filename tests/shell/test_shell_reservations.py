"""Elect, reserve and enqueue through the real operator and the fake API server.

A starving gang gets nodes reserved: each node gets a ``NodeReserved`` Event (never a
patch of the node: the operator may not rewrite nodes), the Application's status names
them and when they are given back, and Events say so; once the gang fits, each node gets
a ``NodeReservationReleased`` Event.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from gangsched.core.actions.elect import ANNOTATION
from gangsched.core.values.model import SchedulerConfig
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    application,
    events,
    group,
    new_cluster,
    pod,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio

ELECT = SchedulerConfig(actions=("enqueue", "elect", "allocate", "backfill", "reserve"),
                        starvation_threshold=10, reservation_timeout=600)


def node_events(api: Any, reason: str) -> dict[str, str]:
    """node -> the note of its Event ``reason``."""
    return {e["regarding"]["name"]: e["note"] for e in events(api, reason=reason)
            if e["regarding"]["kind"] == "Node"}


def annotations(api: Any) -> dict[str, str]:
    """Nodes carrying the reservation annotation (none ever: nodes are not patched)."""
    return {n["metadata"]["name"]: n["metadata"]["annotations"][ANNOTATION]
            for n in api.list("nodes", None)
            if ANNOTATION in ((n.get("metadata") or {}).get("annotations") or {})}


async def test_nodes_reserved_for_a_starving_gang_are_told_and_given_back(
    fake_api_factory: Any, tmp_path: pathlib.Path
) -> None:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=2)
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock, core=ELECT).start()
    try:
        api.create(pod("hog", cpu="3"))
        await wait_for(lambda: api.get("pods", "default", "hog")["spec"].get("nodeName"),
                       what="hog bound")
        api.create(application("big", [group("w", 2, cpu="3")]))
        await wait_for(lambda: (status_of(api, "applications", "default", "big")
                                .get("taskGroups") or [{}])[0].get("blockingReason", {})
                       .get("reason") == "Capacity", what="big held by enqueue")
        assert annotations(api) == {}
        await op.advance(11)
        await wait_for(lambda: set(node_events(api, "NodeReserved")) == {"node-0", "node-1"},
                       what="both nodes told")
        assert all("reserved for gang default/big" in note
                   for note in node_events(api, "NodeReserved").values())
        status = await wait_for(lambda: status_of(api, "applications", "default", "big")
                                if status_of(api, "applications", "default", "big")
                                .get("reservedNodes") else None, what="reservedNodes")
        assert status["reservedNodes"] == ["node-0", "node-1"]
        assert status["reservationExpiry"]
        [event] = events(api, reason="NodesReserved", regarding="big")
        assert "node-0, node-1 are reserved for this gang" in event["note"]
        api.finish_pod("default", "hog")  # the node drains: the gang fits
        await wait_for(lambda: status_of(api, "applications", "default", "big")
                       .get("reserved") == "2/2", what="big reserved")
        await op.settle()
        await wait_for(lambda: set(node_events(api, "NodeReservationReleased"))
                       == {"node-0", "node-1"}, what="both nodes given back")
        assert annotations(api) == {}
        assert api.request_count("patch", "nodes") == 0
        # the status writer flushes on its own interval: wait for it, do not race it
        await wait_for(lambda: "reservedNodes" not in {
            k for k, v in status_of(api, "applications", "default", "big").items()
            if v is not None}, what="reservedNodes cleared from the status")
        await wait_for(lambda: events(api, reason="ReservationReleased", regarding="big"),
                       what="ReservationReleased")
    finally:
        await op.kill()

"""``events.k8s.io/v1`` Events: created, patched into a series, and refused (422) where
the real server's ``ValidateEventCreate`` / ``ValidateEventUpdate`` refuse them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from fakeapi import FakeApiServer
from fakeapi.client import RawClient

EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


@pytest_asyncio.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[RawClient]:
    async with RawClient(fake_api.url) as client:
        yield client


def scheduled(**changes: Any) -> dict[str, Any]:
    """A Scheduled Event as kube-scheduler writes it, with ``changes`` (None removes)."""
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "default"},
        "eventTime": "2026-12-07T22:00:00.000000Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-host",
        "action": "Binding", "reason": "Scheduled", "type": "Normal",
        "note": "Successfully assigned default/p to node-0",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": "p",
                      "uid": "u-1"},
    }
    for key, value in changes.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


async def test_a_valid_event_is_created(api: RawClient) -> None:
    status, created = await api.post(EVENTS, scheduled())
    assert status == 201, created
    assert created["reason"] == "Scheduled" and created["metadata"]["uid"]


@pytest.mark.parametrize("changes, field", [
    pytest.param({"eventTime": None}, "eventTime", id="no-event-time"),
    pytest.param({"reportingController": None}, "reportingController", id="no-controller"),
    pytest.param({"reportingController": "bad name"}, "reportingController",
                 id="controller-not-qualified"),
    pytest.param({"reportingInstance": None}, "reportingInstance", id="no-instance"),
    pytest.param({"reportingInstance": "i" * 129}, "reportingInstance", id="instance-129"),
    pytest.param({"action": None}, "action", id="no-action"),
    pytest.param({"reason": None}, "reason", id="no-reason"),
    pytest.param({"reason": "r" * 129}, "reason", id="reason-129"),
    pytest.param({"note": "n" * 1025}, "message", id="note-1025"),
    pytest.param({"type": "Info"}, "type", id="bad-type"),
    pytest.param({"deprecatedCount": 3}, "count", id="deprecated-count-set"),
    pytest.param({"series": {"count": 1, "lastObservedTime": "2026-12-07T22:00:01.000000Z"}},
                 "series.count", id="series-of-one"),
    pytest.param({"series": {"count": 2}}, "series.lastObservedTime", id="series-no-time"),
])
async def test_what_the_real_server_refuses_is_422(api: RawClient, changes: dict[str, Any],
                                                   field: str) -> None:
    status, err = await api.post(EVENTS, scheduled(**changes))
    assert status == 422, err
    assert err["details"]["kind"] == "Event"
    assert field in [c["field"] for c in err["details"]["causes"]], err


async def test_a_series_may_grow_but_what_the_event_says_is_immutable(
        api: RawClient) -> None:
    assert (await api.post(EVENTS, scheduled()))[0] == 201
    series = {"series": {"count": 2, "lastObservedTime": "2026-12-07T22:00:05.000000Z"}}
    status, patched = await api.patch(EVENTS + "/p.1", series)
    assert status == 200, patched
    assert patched["series"]["count"] == 2
    status, err = await api.patch(EVENTS + "/p.1", {"reason": "Other"})
    assert status == 422, err
    assert "reason" in [c["field"] for c in err["details"]["causes"]]


async def test_an_event_about_a_cluster_scoped_object_belongs_in_default(
        api: RawClient) -> None:
    await api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "other"}})
    node = {"apiVersion": "v1", "kind": "Node", "name": "n"}
    status, err = await api.post(EVENTS.replace("default", "other"), scheduled(
        regarding=node, metadata={"name": "n.1", "namespace": "other"}))
    assert status == 422, err
    assert "involvedObject.namespace" in [c["field"] for c in err["details"]["causes"]]
    status, created = await api.post(EVENTS, scheduled(
        regarding=node, metadata={"name": "n.1", "namespace": "default"}))
    assert status == 201, created

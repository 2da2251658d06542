"""PreBind's wait for the claims a pod's volume writes asked for (binder.go checkBindings,
BindPodVolumes), driven by watch events and an explicit monotonic clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gangsched.core.values.decisions import AnnotateClaim, BindVolume, VolumeWrite
from gangsched.shell.client import ApiError
from gangsched.shell.prebind import BindingState

SELECTED = "volume.kubernetes.io/selected-node"
STATIC: tuple[VolumeWrite, ...] = (BindVolume("pv", "7", "ns", "data", "uid-data"),)
PROVISION: tuple[VolumeWrite, ...] = (AnnotateClaim("ns", "data", "n1"),)


def pvc(rv: str, *, volume: str = "", completed: bool = False,
        node: str | None = "n1") -> dict[str, Any]:
    annotations = {"pv.kubernetes.io/bind-completed": "yes"} if completed else {}
    if node is not None:
        annotations[SELECTED] = node
    return {"metadata": {"namespace": "ns", "name": "data", "resourceVersion": rv,
                         "annotations": annotations}, "spec": {"volumeName": volume}}


def pv(rv: str, uid: str = "uid-data") -> dict[str, Any]:
    ref = {"namespace": "ns", "name": "data", "uid": uid} if uid else None
    return {"metadata": {"name": "pv", "resourceVersion": rv}, "spec": {"claimRef": ref}}


def state(claim: dict[str, Any] | None, volume: dict[str, Any] | None = None) -> BindingState:
    found = BindingState()
    if claim is not None:
        found.claim_event("MODIFIED", claim)
    if volume is not None:
        found.volume_event("MODIFIED", volume)
    return found


@pytest.mark.parametrize(("seen", "writes", "written", "bound"), [
    pytest.param(state(pvc("12", volume="pv", completed=True), pv("11")), STATIC,
                 {"pv/pv": "11"}, True, id="static-fully-bound"),
    pytest.param(state(pvc("12", volume="pv"), pv("11")), STATIC, {"pv/pv": "11"}, False,
                 id="static-volume-name-without-bind-completed"),
    pytest.param(state(pvc("12", volume="pv", completed=True), pv("9")), STATIC,
                 {"pv/pv": "11"}, False, id="static-pv-older-than-the-write"),
    pytest.param(state(pvc("12", volume="pvc-1", completed=True, node="n1")), PROVISION,
                 {"pvc/ns/data": "12"}, True, id="provisioned-and-bound"),
    pytest.param(state(pvc("12")), PROVISION, {"pvc/ns/data": "12"}, False,
                 id="provisioning-under-way"),
    pytest.param(state(pvc("10", node=None)), PROVISION, {"pvc/ns/data": "12"}, False,
                 id="claim-older-than-the-annotation-write"),
])
def test_check_bindings(seen: BindingState, writes: tuple[VolumeWrite, ...],
                        written: dict[str, str], bound: bool) -> None:
    assert seen.check(writes, written, "n1") is bound


@pytest.mark.parametrize(("seen", "writes", "written", "code", "message"), [
    pytest.param(state(pvc("13", node=None)), PROVISION, {"pvc/ns/data": "12"}, 409,
                 'provisioning failed for PVC "data"', id="selected-node-removed"),
    pytest.param(state(pvc("13", node="n2")), PROVISION, {"pvc/ns/data": "12"}, 409,
                 'provisioning failed for PVC "data"', id="selected-node-changed"),
    pytest.param(state(pvc("12"), pv("14", uid="")), STATIC, {"pv/pv": "11"}, 409,
                 'ClaimRef got reset for pv "pv"', id="claim-ref-dropped"),
    pytest.param(state(None), PROVISION, {}, 404, 'persistentvolumeclaim "data" not found',
                 id="claim-gone"),
])
def test_check_bindings_fails(seen: BindingState, writes: tuple[VolumeWrite, ...],
                              written: dict[str, str], code: int, message: str) -> None:
    with pytest.raises(ApiError) as failed:
        seen.check(writes, written, "n1")
    assert (failed.value.code, failed.value.message) == (code, message)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_the_wait_ends_when_the_claim_is_bound() -> None:
    seen = state(pvc("12"))
    clock = Clock()
    waiting = asyncio.create_task(seen.wait(PROVISION, {"pvc/ns/data": "12"}, "n1",
                                            timeout=600.0, poll=60.0, monotonic=clock))
    await asyncio.sleep(0)
    assert not waiting.done()
    seen.claim_event("MODIFIED", pvc("13", volume="pvc-1", completed=True))
    await asyncio.wait_for(waiting, timeout=5.0)


async def test_the_wait_gives_up_after_the_bind_timeout() -> None:
    seen = state(pvc("12"))
    clock = Clock()
    waiting = asyncio.create_task(seen.wait(PROVISION, {"pvc/ns/data": "12"}, "n1",
                                            timeout=600.0, poll=0.0, monotonic=clock))
    await asyncio.sleep(0)
    assert not waiting.done()
    clock.now += 600.0
    with pytest.raises(ApiError) as failed:
        await asyncio.wait_for(waiting, timeout=5.0)
    assert failed.value.code == 504


async def test_a_pod_without_volume_writes_does_not_wait() -> None:
    await BindingState().wait((), {}, "n1", monotonic=Clock())

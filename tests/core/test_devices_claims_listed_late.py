"""A PodGroup whose members' claims are listed after an attempt failed without them.

The resourceclaim controller makes a member's claim, then lists it in the pod's
``status.resourceClaimStatuses``; the claim and the pod's update come by two watches, in
either order. When the claim comes first, the gang is tried with its members' claims
still unresolved and fails; the pods' update that resolves them must let it try again,
with nothing else happening (no capacity freed, no clock moving)."""

from __future__ import annotations

from gangsched.core.values.decisions import BindGang, BindPod
from gangsched.core.values.observations import PodGroupObserved, PodObserved, VolumeObserved

from tests.core.builders import make_pod, make_podgroup
from tests.core.device_builders import claim
from tests.core.test_devices_scheduling import gpu_cluster
from tests.core.volume_builders import with_volumes


def test_members_whose_claims_are_listed_late_are_tried_again() -> None:
    s = gpu_cluster(nodes=2)
    s.observe(PodGroupObserved(make_podgroup("job", 2)))
    pods = [make_pod(f"w{i}", pod_group="job") for i in range(2)]
    for pod in pods:
        s.observe(PodObserved(with_volumes(pod, unresolved=("gpu",))))
        s.observe(VolumeObserved(claim(f"{pod.name}-gpu")))
    first = s.cycle(now=10.0)
    assert not [d for d in first if isinstance(d, BindPod | BindGang)]
    for pod in pods:  # only the pods' status changes now
        s.observe(PodObserved(with_volumes(pod, resource_claims=(f"{pod.name}-gpu",))))
    out = s.cycle(now=10.0)
    (gang,) = [d for d in out if isinstance(d, BindGang)]
    assert {b.name for b in gang.binds} == {"w0", "w1"}

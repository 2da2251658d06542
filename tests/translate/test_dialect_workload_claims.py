"""PodGroup-level ResourceClaims of the Workload API (``spec.resourceClaims``, 1.36):
which claims are the group's, and the group as their consumer."""

from __future__ import annotations

from typing import Any

import pytest
from gangsched.core.values.devices import ConsumerRef
from gangsched.translate.dialects.workload import podgroup_from_k8s
from workload_objects import gang, podgroup

TEMPLATE = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
NAMED = {"name": "nic", "resourceClaimName": "shared-nic"}


def group_with(claims: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None
               ) -> dict[str, Any]:
    obj = podgroup("train", policy=gang(2), uid="pg-uid")
    obj["spec"]["resourceClaims"] = claims
    if statuses is not None:
        obj["status"] = {"resourceClaimStatuses": statuses}
    return obj


@pytest.mark.parametrize(("claims", "statuses", "names"), [
    pytest.param([TEMPLATE], None, (), id="template-claim-not-made-yet"),
    pytest.param([TEMPLATE], [{"name": "gpu", "resourceClaimName": "train-gpu-x7k2p"}],
                 ("train-gpu-x7k2p",), id="template-claim-made"),
    pytest.param([TEMPLATE, NAMED], [{"name": "gpu", "resourceClaimName": "train-gpu-x"}],
                 ("train-gpu-x", "shared-nic"), id="template-and-named"),
])
def test_the_groups_claims_and_the_group_as_their_consumer(
        claims: list[dict[str, Any]], statuses: list[dict[str, Any]] | None,
        names: tuple[str, ...]) -> None:
    spec = podgroup_from_k8s(group_with(claims, statuses))
    assert spec.invalid is None
    assert spec.claims == names
    assert spec.consumer == ConsumerRef("train", "pg-uid", "podgroups", "scheduling.k8s.io")


def test_a_group_without_claims_has_no_consumer() -> None:
    spec = podgroup_from_k8s(podgroup("train", policy=gang(2)))
    assert (spec.claims, spec.consumer) == ((), None)


@pytest.mark.parametrize(("claims", "message"), [
    pytest.param([dict(TEMPLATE, name=f"c{i}") for i in range(5)],
                 "spec.resourceClaims: Too many: 5: must have at most 4 items", id="too-many"),
    pytest.param([{"name": "gpu"}], "spec.resourceClaims[0]: Invalid value: must specify "
                 "exactly one of", id="no-source"),
])
def test_bad_claims_make_the_group_invalid(claims: list[dict[str, Any]], message: str) -> None:
    spec = podgroup_from_k8s(group_with(claims))
    assert spec.invalid is not None and message in spec.invalid

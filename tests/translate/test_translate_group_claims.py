"""A task group's ``resourceClaims``: read and checked, kept in the manifest, accepted
by the CRD, carried by the placeholder and read back from it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gangsched.core.values.decisions import CreatePlaceholder
from gangsched.core.values.naming import placeholder_name
from gangsched.core.values.volume_specs import GroupClaim
from gangsched.translate import gangspec, group_claims, render
from gangsched.translate.apps import app_from_k8s
from gangsched.translate.pods import pod_from_k8s
from k8s_objects import application
from manifests_tests.test_crds import validation_errors

PATH = "spec.taskGroups"
CLAIMS = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
          {"name": "nic", "resourceClaimName": "shared-nic"}]


def group(**extra: Any) -> dict[str, Any]:
    return {"name": "worker", "minMember": 2, **extra}


def test_claims_are_read_in_the_pod_specs_shape_and_kept_in_the_manifest() -> None:
    (parsed,), errors = gangspec.read_task_groups([group(resourceClaims=CLAIMS)], PATH)
    assert errors == []
    assert parsed.model.claims == (GroupClaim("gpu", template="one-gpu"),
                                   GroupClaim("nic", claim="shared-nic"))
    assert parsed.manifest["resourceClaims"] == CLAIMS


def test_pods_first_task_groups_take_claims_ignoring_case_as_yunikorn_reads_json() -> None:
    text = json.dumps([{"Name": "w", "MinMember": 1, "ResourceClaims": [
        {"Name": "gpu", "ResourceClaimTemplateName": "t"}]}])
    (manifest,) = gangspec.task_groups_from_json(text, path="annotation")
    assert manifest["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "t"}]


@pytest.mark.parametrize(("claims", "message"), [
    pytest.param([{"resourceClaimName": "c"}], f"{PATH}[0].resourceClaims[0].name: Required",
                 id="no-name"),
    pytest.param([{"name": "gpu"}], "must specify exactly one of resourceClaimName and "
                 "resourceClaimTemplateName", id="no-source"),
    pytest.param([{"name": "gpu", "resourceClaimName": "c", "resourceClaimTemplateName": "t"}],
                 "must specify exactly one of", id="two-sources"),
    pytest.param([{"name": "GPU", "resourceClaimName": "c"}],
                 '.name: Invalid value: "GPU": must be a DNS label', id="bad-name"),
    pytest.param([{"name": "gpu", "resourceClaimTemplateName": "Bad_Name"}],
                 '.resourceClaimTemplateName: Invalid value: "Bad_Name"', id="bad-template"),
    pytest.param([{"name": "gpu", "resourceClaimName": "a"},
                  {"name": "gpu", "resourceClaimName": "b"}],
                 f'{PATH}[0].resourceClaims[1].name: Duplicate value: "gpu"', id="duplicate"),
    pytest.param({"name": "gpu"}, f"{PATH}[0].resourceClaims", id="not-a-list"),
])
def test_bad_claims_make_the_task_group_invalid_with_the_path(claims: object,
                                                              message: str) -> None:
    parsed, errors = gangspec.read_task_groups([group(resourceClaims=claims)], PATH)
    assert parsed == []
    assert any(message in e for e in errors), errors


def app_with_claims(claims: list[dict[str, str]]) -> dict[str, Any]:
    obj = application()
    for each in obj["spec"]["taskGroups"]:
        if each["name"] == "worker":
            each["resourceClaims"] = claims
    return obj


def test_the_crd_accepts_the_claims() -> None:
    assert validation_errors(app_with_claims(CLAIMS)) == []
    too_long = [{"name": "gpu", "resourceClaimTemplateName": "t" * 254}]
    assert validation_errors(app_with_claims(too_long)) != []
    both = [{"name": "gpu", "resourceClaimTemplateName": "t", "resourceClaimName": "c"}]
    assert any("exactly one of" in e for e in validation_errors(app_with_claims(both)))


def test_the_placeholder_carries_its_groups_claims_and_holds_them_when_read_back() -> None:
    obj = app_with_claims(CLAIMS)
    app = app_from_k8s(obj)
    worker = app.group("worker")
    assert worker is not None and app.invalid is None
    meta = obj["metadata"]
    name = placeholder_name(meta["name"], meta["uid"], "worker", 0)
    d = CreatePlaceholder(app.key, "worker", 0, name, meta["namespace"], worker.min_resource,
                          worker.claims)
    rendered = render.placeholder_pod(d, obj)
    assert "resourceClaims" not in rendered["spec"]  # it holds devices in memory only
    assert json.loads(rendered["metadata"]["annotations"][group_claims.ANNOTATION]) == CLAIMS
    rendered["metadata"]["uid"] = "ph-uid"
    pod = pod_from_k8s(rendered, scheduler_names=frozenset({"gangsched"}))
    assert pod.invalid is None
    assert pod.volumes.held_claims == ((f"{name}:gpu", "one-gpu"),)
    assert pod.volumes.shared_claims == ("shared-nic",)
    assert pod.volumes.resource_claims == ()


def test_a_real_pod_with_the_annotation_holds_nothing_and_a_bad_one_is_a_problem() -> None:
    obj = app_with_claims(CLAIMS)
    app = app_from_k8s(obj)
    worker = app.group("worker")
    assert worker is not None
    meta = obj["metadata"]
    name = placeholder_name(meta["name"], meta["uid"], "worker", 0)
    d = CreatePlaceholder(app.key, "worker", 0, name, meta["namespace"], worker.min_resource,
                          worker.claims)
    rendered = render.placeholder_pod(d, obj)
    rendered["metadata"]["uid"] = "ph-uid"
    rendered["metadata"]["annotations"][group_claims.ANNOTATION] = "[{"
    pod = pod_from_k8s(rendered, scheduler_names=frozenset({"gangsched"}))
    assert pod.invalid is not None and group_claims.ANNOTATION in pod.invalid
    real = dict(rendered, metadata=dict(rendered["metadata"], labels={}))
    real["metadata"]["annotations"] = {group_claims.ANNOTATION: json.dumps(CLAIMS)}
    pod = pod_from_k8s(real, scheduler_names=frozenset({"gangsched"}))
    assert pod.volumes.held_claims == () and pod.invalid is None

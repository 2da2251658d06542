"""Conformance of every topology dialect: what each one's words become as a TopologyRequest.

One table, four dialects (our own ``topology`` field, Kueue's TAS annotations, KAI's
annotations, Volcano's ``networkTopology``), and for each: required, preferred (with the
escalation order), slices, and invalid input. Every row has a positive case (the request
the dialect asks for) and a negative one (what must not become a request, or must be
refused with a message naming the field). Pods go the whole way a real pod goes: the
gang's definition is made from the pod, validated against the CRD, and read back.
"""

from __future__ import annotations

from typing import Any

import pytest
from dialect_manifests import KUEUE_POD, pod
from gangsched.core.values.model import NO_TOPOLOGY, TopologyRequest
from gangsched.translate import apps, podgroups
from gangsched.translate.dialects import volcano
from gangsched.translate.pods import gang_definition, pod_with_membership
from manifests_tests.test_crds import validation_errors

RACK = "topology.gangsched.io/rack"
BLOCK = "topology.gangsched.io/block"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
KUEUE = "kueue.x-k8s.io/"
KAI = "kai.scheduler/"


def native(topology: dict[str, Any], members: int = 8) -> tuple[TopologyRequest, str | None]:
    """Our own field on a PodGroup; also checked on an Application's task group, which
    must agree."""
    obj = {"apiVersion": "gangsched.io/v1alpha1", "kind": "PodGroup",
           "metadata": {"name": "g", "namespace": "ns"},
           "spec": {"minMember": members, "topology": topology}}
    spec = podgroups.podgroup_from_k8s(obj)
    app = apps.app_from_k8s({"metadata": {"name": "a", "namespace": "ns"}, "spec": {
        "taskGroups": [{"name": "workers", "minMember": members, "topology": topology}]}})
    if spec.invalid is None:
        assert app.invalid is None and app.task_groups[0].topology == spec.topology
        assert validation_errors(obj) == []
    else:
        assert app.invalid is not None
        assert app.invalid.replace("spec.taskGroups[0].topology", "spec.topology") == spec.invalid
    return spec.topology, spec.invalid


def pod_gang(annotations: dict[str, str], total: int = 8) -> tuple[TopologyRequest, str | None]:
    """A Kueue plain-pod group of ``total`` pods whose defining pod carries
    ``annotations``: the PodGroup made from it, read back."""
    obj = pod(KUEUE_POD, name="p-0", uid="u-0")
    obj["metadata"]["annotations"] = {f"{KUEUE}pod-group-total-count": str(total), **annotations}
    found, membership = pod_with_membership(obj)
    assert found.invalid is None
    definition = gang_definition(obj, membership)
    assert definition is not None
    if definition.manifest is None:
        return NO_TOPOLOGY, definition.error
    assert validation_errors(definition.manifest) == []
    spec = podgroups.podgroup_from_k8s({**definition.manifest, "metadata": {
        **definition.manifest["metadata"], "namespace": "default"}})
    return spec.topology, spec.invalid


def kueue(annotations: dict[str, str], total: int = 8) -> tuple[TopologyRequest, str | None]:
    return pod_gang({KUEUE + k: v for k, v in annotations.items()}, total)


def kai(annotations: dict[str, str], total: int = 8) -> tuple[TopologyRequest, str | None]:
    return pod_gang({KAI + k: v for k, v in annotations.items()}, total)


def volcano_pg(network: object, members: int = 8,
               **extra: Any) -> tuple[TopologyRequest, str | None]:
    spec = volcano.podgroup_from_k8s({"metadata": {"name": "j", "namespace": "ns"},
                                      "spec": {"minMember": members,
                                               "networkTopology": network, **extra}})
    return spec.topology, spec.invalid


def want(required: str | None = None, preferred: tuple[str, ...] = (),
         slice_key: str | None = None, slice_size: int = 0) -> TopologyRequest:
    return TopologyRequest(required, preferred, slice_key, slice_size)


ROWS = [
    # Our own field.
    pytest.param(lambda: native({"required": RACK}), want(RACK), None, id="native-required"),
    pytest.param(lambda: native({}), NO_TOPOLOGY, None, id="native-required-absent"),
    pytest.param(lambda: native({"preferred": [RACK, BLOCK]}), want(None, (RACK, BLOCK)), None,
                 id="native-preferred-smallest-first"),
    pytest.param(lambda: native({"required": BLOCK, "preferred": [RACK]}),
                 want(BLOCK, (RACK,)), None, id="native-preferred-below-required"),
    pytest.param(lambda: native({"preferred": [RACK, RACK]}), NO_TOPOLOGY,
                 f'spec.topology.preferred[1]: duplicate level "{RACK}"',
                 id="native-preferred-repeated"),
    pytest.param(lambda: native({"required": RACK, "preferred": [RACK]}), NO_TOPOLOGY,
                 f'spec.topology.preferred[0]: "{RACK}" is also the required level',
                 id="native-preferred-names-required"),
    pytest.param(lambda: native({"required": BLOCK, "sliceKey": HOST, "sliceSize": 4}),
                 want(BLOCK, (), HOST, 4), None, id="native-slices"),
    pytest.param(lambda: native({"sliceKey": RACK, "sliceSize": 9}), NO_TOPOLOGY,
                 "spec.topology.sliceSize: must not be greater than the gang's size 8, got 9",
                 id="native-slice-larger-than-gang"),
    pytest.param(lambda: native({"sliceKey": RACK}), NO_TOPOLOGY,
                 "spec.topology.sliceSize: required when a slice level is given",
                 id="native-slice-without-size"),
    pytest.param(lambda: native({"required": "rack/"}), NO_TOPOLOGY,
                 'spec.topology.required: invalid label key "rack/"', id="native-invalid-key"),
    pytest.param(lambda: native({"preferred": RACK}), NO_TOPOLOGY,
                 f'spec.topology.preferred: expected a list, got string "{RACK}"',
                 id="native-invalid-type"),
    # Kueue TAS.
    pytest.param(lambda: kueue({"podset-required-topology": RACK}), want(RACK), None,
                 id="kueue-required"),
    pytest.param(lambda: kueue({}), NO_TOPOLOGY, None, id="kueue-required-absent"),
    pytest.param(lambda: kueue({"podset-preferred-topology": RACK}), want(None, (RACK,)), None,
                 id="kueue-preferred"),
    pytest.param(lambda: kueue({"podset-unconstrained-topology": "true"}), NO_TOPOLOGY, None,
                 id="kueue-unconstrained-asks-nothing"),
    pytest.param(lambda: kueue({"podset-required-topology": BLOCK,
                                "podset-preferred-topology": RACK}), NO_TOPOLOGY,
                 "metadata.annotations: must not contain more than one topology annotation",
                 id="kueue-required-and-preferred"),
    pytest.param(lambda: kueue({"podset-required-topology": BLOCK,
                                "podset-slice-required-topology": RACK,
                                "podset-slice-size": "4"}), want(BLOCK, (), RACK, 4), None,
                 id="kueue-slices"),
    pytest.param(lambda: kueue({"podset-slice-required-topology": RACK,
                                "podset-slice-size": "16"}), NO_TOPOLOGY,
                 "spec.topology.sliceSize: must not be greater than the gang's size 8, got 16",
                 id="kueue-slice-larger-than-gang"),
    pytest.param(lambda: kueue({"podset-slice-size": "4"}), NO_TOPOLOGY,
                 f"metadata.annotations[{KUEUE}podset-slice-size]: given without a slice level",
                 id="kueue-slice-size-alone"),
    pytest.param(lambda: kueue({"podset-slice-required-topology": RACK,
                                "podset-slice-size": "0"}), NO_TOPOLOGY,
                 f"metadata.annotations[{KUEUE}podset-slice-size]: must be at least 1, got 0",
                 id="kueue-slice-size-zero"),
    pytest.param(lambda: kueue({"podset-required-topology": "Rack Row"}), NO_TOPOLOGY,
                 f'metadata.annotations[{KUEUE}podset-required-topology]: invalid label key',
                 id="kueue-invalid-key"),
    pytest.param(lambda: kueue({"podset-unconstrained-topology": "yes"}), NO_TOPOLOGY,
                 f'[{KUEUE}podset-unconstrained-topology]: must be a boolean, got "yes"',
                 id="kueue-invalid-unconstrained"),
    pytest.param(lambda: kueue({"podset-slice-required-topology-constraints": "[]"}),
                 NO_TOPOLOGY, "not supported: gangsched keeps one slice level",
                 id="kueue-multi-layer-slices-refused"),
    # KAI.
    pytest.param(lambda: kai({"topology": "cluster-topology",
                              "topology-required-placement": RACK}), want(RACK), None,
                 id="kai-required"),
    pytest.param(lambda: kai({"topology": "cluster-topology"}), NO_TOPOLOGY, None,
                 id="kai-topology-name-alone-asks-nothing"),
    pytest.param(lambda: kai({"topology-required-placement": BLOCK,
                              "topology-preferred-placement": RACK}), want(BLOCK, (RACK,)), None,
                 id="kai-preferred-rack-within-block"),
    pytest.param(lambda: kai({"topology-required-placement": RACK,
                              "topology-preferred-placement": RACK}), want(RACK), None,
                 id="kai-preferred-equal-to-required"),
    pytest.param(lambda: kai({"topology-required-placement": BLOCK, "segment-size": "4",
                              "segment-topology-required-placement": RACK}),
                 want(BLOCK, (), RACK, 4), None, id="kai-segments"),
    pytest.param(lambda: kai({"segment-size": "4",
                              "segment-topology-preferred-placement": RACK}), NO_TOPOLOGY,
                 f"[{KAI}segment-topology-preferred-placement]: not supported",
                 id="kai-preferred-segments-refused"),
    pytest.param(lambda: kai({"segment-size": "4"}), NO_TOPOLOGY,
                 f"[{KAI}segment-size]: given without {KAI}segment-topology-required-placement",
                 id="kai-segment-size-alone"),
    pytest.param(lambda: kai({"topology-required-placement": "-rack"}), NO_TOPOLOGY,
                 f'[{KAI}topology-required-placement]: invalid label key "-rack"',
                 id="kai-invalid-key"),
    pytest.param(lambda: kai({"topology": "Cluster Topology",
                              "topology-required-placement": RACK}), NO_TOPOLOGY,
                 f'[{KAI}topology]: invalid Topology name "Cluster Topology"',
                 id="kai-invalid-topology-name"),
    pytest.param(lambda: pod_gang({f"{KUEUE}podset-required-topology": RACK,
                                   f"{KAI}topology-required-placement": BLOCK}), NO_TOPOLOGY,
                 "Kueue's and KAI's topology annotations disagree",
                 id="kueue-and-kai-disagree"),
    pytest.param(lambda: pod_gang({f"{KUEUE}podset-required-topology": RACK,
                                   f"{KAI}topology-required-placement": RACK}), want(RACK),
                 None, id="kueue-and-kai-agree"),
    # Volcano.
    pytest.param(lambda: volcano_pg({"mode": "hard", "highestTierAllowed": 1}), want(RACK),
                 None, id="volcano-required-tier-1"),
    pytest.param(lambda: volcano_pg(None), NO_TOPOLOGY, None, id="volcano-required-absent"),
    pytest.param(lambda: volcano_pg({"mode": "hard", "highestTierAllowed": 2}),
                 want(BLOCK, (RACK,)), None, id="volcano-hard-tier-2-tries-racks-first"),
    pytest.param(lambda: volcano_pg({"mode": "soft"}), want(None, (RACK, BLOCK, ZONE)), None,
                 id="volcano-soft-escalates-to-anywhere"),
    pytest.param(lambda: volcano_pg({"mode": "soft", "highestTierAllowed": 1}),
                 want(None, (RACK,)), None, id="volcano-soft-tier-1"),
    pytest.param(lambda: volcano_pg({"mode": "hard", "highestTierAllowed": 4}), NO_TOPOLOGY,
                 "spec.networkTopology.highestTierAllowed: must be one of the tiers",
                 id="volcano-tier-not-mapped"),
    pytest.param(lambda: volcano_pg({"mode": "strict"}), NO_TOPOLOGY,
                 'spec.networkTopology.mode: unknown mode "strict" (accepted: hard, soft)',
                 id="volcano-invalid-mode"),
    pytest.param(lambda: volcano_pg({"highestTierName": "spine"}), NO_TOPOLOGY,
                 "spec.networkTopology.highestTierName: not supported",
                 id="volcano-tier-name-refused"),
    pytest.param(lambda: volcano_pg(None, subGroupPolicy=[{"name": "s", "subGroupSize": 2}]),
                 NO_TOPOLOGY, None, id="volcano-sub-groups-without-topology-ignored"),
    pytest.param(lambda: volcano_pg({"mode": "hard"}, subGroupPolicy=[
        {"name": "s", "subGroupSize": 2, "networkTopology": {"mode": "hard"}}]), want(RACK),
                 "spec.subGroupPolicy[0].networkTopology: not supported",
                 id="volcano-sub-group-topology-refused"),
]


@pytest.mark.parametrize(("translate", "expected", "error"), ROWS)
def test_topology_dialects(translate: Any, expected: TopologyRequest, error: str | None) -> None:
    request, invalid = translate()
    if error is None:
        assert invalid is None
    else:
        assert invalid is not None and error in invalid, invalid
    if error is None or expected != NO_TOPOLOGY:
        assert request == expected


def test_a_yunikorn_task_group_takes_the_pods_topology_annotations() -> None:
    obj = pod(KUEUE_POD, name="p-0", uid="u-0")
    obj["metadata"]["labels"] = {"applicationId": "job-1"}
    obj["metadata"]["annotations"] = {
        "yunikorn.apache.org/task-group-name": "workers",
        "yunikorn.apache.org/task-groups":
            '[{"name": "driver", "minMember": 1}, {"name": "workers", "minMember": 4}]',
        f"{KAI}topology-required-placement": RACK,
    }
    definition = gang_definition(obj, pod_with_membership(obj)[1])
    assert definition is not None and definition.manifest is not None, definition
    groups = {g["name"]: g for g in definition.manifest["spec"]["taskGroups"]}
    assert groups["workers"]["topology"] == {"required": RACK}
    assert "topology" not in groups["driver"]
    app = apps.app_from_k8s({**definition.manifest, "metadata": {"name": "job-1",
                                                                "namespace": "default"}})
    assert [g.topology for g in app.task_groups] == [NO_TOPOLOGY, want(RACK)]


def test_a_task_groups_own_topology_wins_over_annotations() -> None:
    obj = pod(KUEUE_POD, name="p-0", uid="u-0")
    obj["metadata"]["labels"] = {"gangsched.io/app": "job-1"}
    obj["metadata"]["annotations"] = {
        "gangsched.io/task-group": "workers",
        "gangsched.io/task-groups":
            f'[{{"name": "workers", "minMember": 4, "topology": {{"required": "{BLOCK}"}}}}]',
        f"{KUEUE}podset-required-topology": RACK,
    }
    definition = gang_definition(obj, pod_with_membership(obj)[1])
    assert definition is not None and definition.manifest is not None, definition
    assert definition.manifest["spec"]["taskGroups"][0]["topology"] == {"required": BLOCK}


def test_null_fields_are_absent() -> None:
    """The API server drops nulls of fields that are not nullable; gangsched reads them as
    absent too (an object from elsewhere may still carry them)."""
    spec = podgroups.podgroup_from_k8s({"metadata": {"name": "g", "namespace": "ns"}, "spec": {
        "minMember": 2, "topology": {"required": None, "preferred": None, "sliceKey": None,
                                     "sliceSize": None}}})
    assert (spec.topology, spec.invalid) == (NO_TOPOLOGY, None)

"""Volcano: the group-name and queue annotations and the scheduling.volcano.sh PodGroup, read
from Volcano's PodGroup documentation."""

from __future__ import annotations

from typing import Any

import pytest
from dialect_manifests import VOLCANO_POD, VOLCANO_PODGROUP, load, pod, pods_of
from gangsched.core.values.model import NO_TIMEOUT, GangMode, GroupKey
from gangsched.core.values.resources import Resources
from gangsched.translate.dialects import VOLCANO, foreign, volcano
from gangsched.translate.pods import pod_with_membership

NAMES = frozenset({"volcano"})
Mi = 2**20


def podgroup(**spec: Any) -> dict[str, Any]:
    obj = load(VOLCANO_PODGROUP)
    obj["metadata"]["uid"] = "uid-test"
    for key, value in spec.items():
        if value is None:
            obj["spec"].pop(key, None)
        else:
            obj["spec"][key] = value
    return obj


def test_annotated_pods_join_the_volcano_podgroup() -> None:
    found, membership = pod_with_membership(pods_of(VOLCANO_POD, 1)[0], scheduler_names=NAMES)
    assert found.ours and found.invalid is None
    assert found.pod_group == GroupKey("default/volcano:test")
    assert found.queue == "default"
    assert (membership.dialect, membership.definer, membership.conflicts) == (VOLCANO, None, ())


@pytest.mark.parametrize(
    ("annotations", "group", "queue", "conflicts"),
    [
        pytest.param({"scheduling.k8s.io/group-name": None,
                      "scheduling.volcano.sh/group-name": "test"}, "default/volcano:test",
                     "default", (), id="volcano-group-name"),
        pytest.param({"scheduling.volcano.sh/group-name": "other"}, "default/volcano:test",
                     "default",
                     ('Volcano group name: metadata.annotations[scheduling.volcano.sh/group-name]'
                      ' is "other" but metadata.annotations[scheduling.k8s.io/group-name] is '
                      '"test"',), id="kubernetes-key-wins"),
        pytest.param({"scheduling.volcano.sh/queue-name": None,
                      "volcano.sh/queue-name": "research"}, "default/volcano:test", "research",
                     (), id="legacy-queue"),
        pytest.param({"scheduling.k8s.io/group-name": None}, None, "default", (),
                     id="queue-only"),
    ],
)
def test_annotation_keys(annotations: dict[str, str | None], group: str | None, queue: str,
                         conflicts: tuple[str, ...]) -> None:
    found, membership = pod_with_membership(pod(VOLCANO_POD, annotations=annotations),
                                            scheduler_names=NAMES)
    assert found.pod_group == (GroupKey(group) if group else None)
    assert found.queue == queue
    assert membership.conflicts == conflicts


def test_the_doc_podgroup() -> None:
    spec = volcano.podgroup_from_k8s(podgroup())
    assert spec.key == GroupKey("default/volcano:test")
    assert spec.min_member == 3
    assert spec.min_resources == Resources({"cpu": 3000, "memory": 2048 * Mi})
    # Volcano never times a gang out, and places none of it before minMember pods exist
    assert (spec.queue, spec.mode, spec.schedule_timeout) == ("default", GangMode.STRICT,
                                                              NO_TIMEOUT)
    assert spec.wait_for_min_member
    assert spec.invalid is None


def test_volcano_status_is_never_read() -> None:
    obj = podgroup()
    obj["status"] = {"phase": "Running", "running": 3}
    spec = volcano.podgroup_from_k8s(obj)
    assert (spec.persisted_phase, spec.persisted_start) == ("", None)


@pytest.mark.parametrize(
    ("spec", "invalid"),
    [
        pytest.param({"minMember": -1}, "spec.minMember: must be at least 1, got -1",
                     id="negative-minMember"),
        pytest.param({"minMember": 0}, "spec.minMember: must be at least 1, got 0", id="zero"),
        pytest.param({"queue": "Research"},
                     'spec.queue: invalid queue name "Research": must consist of lower case '
                     "alphanumerics, '-' and '.', start and end with an alphanumeric, and be at "
                     "most 253 characters", id="bad-queue"),
        pytest.param({"minResources": {"cpu": "-3"}},
                     'spec.minResources.cpu: invalid quantity "-3": must not be negative',
                     id="negative-resources"),
    ],
)
def test_an_invalid_podgroup_says_why(spec: dict[str, Any], invalid: str) -> None:
    assert volcano.podgroup_from_k8s(podgroup(**spec)).invalid == invalid


def test_volcano_podgroups_are_read_only() -> None:
    kind = foreign.kind_of("default/volcano:test")
    assert kind is not None
    assert kind.api_version == "scheduling.volcano.sh/v1beta1"
    assert kind.status is None

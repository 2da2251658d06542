"""Whatever users write, the translators return a value and never raise."""

from collections.abc import Callable
from typing import Any

from gangsched.core.values.decisions import CreatePlaceholder, SetPodGroupStatus
from gangsched.core.values.model import AppKey, GroupKey
from gangsched.core.values.resources import Resources
from gangsched.translate import render
from gangsched.translate.apps import app_from_k8s
from gangsched.translate.dialects import volcano
from gangsched.translate.nodes import node_from_k8s, node_problems
from gangsched.translate.podgroups import podgroup_from_k8s
from gangsched.translate.pods import (
    app_manifest_from_pod,
    gang_definition,
    pod_from_k8s,
    pod_with_membership,
)
from gangsched.translate.queues import queue_from_k8s
from hypothesis import given, settings
from hypothesis import strategies as st
from k8s_objects import application, argo_pod, kind_node, podgroup, queue, spark_driver

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["1", "500m", "-1", "1Qi", "Exists", "Always", "true", "[]", "{"]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)

PLACEHOLDER = CreatePlaceholder(
    AppKey("ml/llm-finetune"), "worker", 0, "p-0", "ml", Resources({"cpu": 1})
)
GROUP_STATUS = SetPodGroupStatus(
    GroupKey("argo/gang-train"), "Pending", "", "", 0, 0, 0, 0, 0, 0, None
)


def placeholder_for(app_obj: dict[str, Any]) -> object:
    return render.placeholder_pod(PLACEHOLDER, app_obj)


def group_status_over(old: dict[str, Any]) -> object:
    return render.podgroup_status_body(GROUP_STATUS, now=0.0, generation=1, old_status=old)


def old_podgroup_status() -> dict[str, Any]:
    return {"blockingReason": {"details": {"a": "b"}}, "conditions": [{"type": "Scheduled"}]}


def topology_podgroup() -> dict[str, Any]:
    obj = podgroup()
    obj["spec"]["topology"] = {"required": "topology.gangsched.io/block",
                               "preferred": ["topology.gangsched.io/rack"],
                               "sliceKey": "kubernetes.io/hostname", "sliceSize": 2}
    return obj


def volcano_podgroup() -> dict[str, Any]:
    return {"metadata": {"name": "j", "namespace": "ns"}, "spec": {
        "minMember": 4, "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
        "subGroupPolicy": [{"name": "s", "subGroupSize": 2}]}}


def topology_pod() -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u",
                         "labels": {"kueue.x-k8s.io/pod-group-name": "g"},
                         "annotations": {
                             "kueue.x-k8s.io/pod-group-total-count": "4",
                             "kueue.x-k8s.io/podset-required-topology": "rack",
                             "kueue.x-k8s.io/podset-slice-required-topology": "host",
                             "kueue.x-k8s.io/podset-slice-size": "2",
                             "kai.scheduler/topology-required-placement": "rack"}},
            "spec": {"containers": [{"name": "c"}]}}


def definition_of(obj: dict[str, Any]) -> object:
    return gang_definition(obj, pod_with_membership(obj)[1])


TRANSLATORS: list[tuple[Callable[[], dict[str, Any]], Callable[[dict[str, Any]], object]]] = [
    (spark_driver, pod_from_k8s),
    (spark_driver, app_manifest_from_pod),
    (argo_pod, pod_from_k8s),
    (application, app_from_k8s),
    (podgroup, podgroup_from_k8s),
    (queue, queue_from_k8s),
    (kind_node, node_from_k8s),
    (kind_node, node_problems),
    (application, placeholder_for),
    (old_podgroup_status, group_status_over),
    (topology_podgroup, podgroup_from_k8s),
    (volcano_podgroup, volcano.podgroup_from_k8s),
    (topology_pod, definition_of),
]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value``, the empty path included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths(child, (*prefix, index))
    return found


def replaced(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    if not path:
        return value if isinstance(value, dict) else obj
    target: Any = obj
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return obj


@settings(max_examples=400)
@given(st.data(), json_values)
def test_any_field_may_hold_any_json(data: st.DataObject, value: Any) -> None:
    build, translate = data.draw(st.sampled_from(TRANSLATORS))
    obj = build()
    path = data.draw(st.sampled_from(paths(obj)))
    translate(replaced(obj, path, value))

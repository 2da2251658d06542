"""The pod translation fast path gives exactly what the full translation gives."""

from __future__ import annotations

import copy
import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from gangsched.shell.podcache import PodTranslations
from gangsched.translate.pods import pod_with_membership

NAMES = frozenset({"gangsched"})


def base() -> dict[str, Any]:
    return {
        "metadata": {"name": "w-0", "namespace": "default", "uid": "u-1",
                     "creationTimestamp": "2026-01-01T00:00:00Z",
                     "labels": {"gangsched.io/app": "train"},
                     "annotations": {"gangsched.io/task-group": "worker"}},
        "spec": {"schedulerName": "gangsched", "priority": 5,
                 "nodeSelector": {"pool": "gpu"},
                 "containers": [{"name": "c", "image": "x",
                                 "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]},
        "status": {"phase": "Pending"},
    }


def bind(o: dict[str, Any]) -> None:
    o["spec"]["nodeName"] = "node-3"


def run(o: dict[str, Any]) -> None:
    bind(o)
    o["status"]["phase"] = "Running"


def finish(o: dict[str, Any]) -> None:
    run(o)
    o["status"]["phase"] = "Succeeded"


def delete(o: dict[str, Any]) -> None:
    o["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"


def odd_phase(o: dict[str, Any]) -> None:
    o["status"]["phase"] = "Exploded"


def relabel(o: dict[str, Any]) -> None:
    o["metadata"]["labels"] = {"gangsched.io/pod-group": "mpi"}


def reannotate(o: dict[str, Any]) -> None:
    o["metadata"]["annotations"]["gangsched.io/task-group"] = "ps"


def resize(o: dict[str, Any]) -> None:
    o["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"


def retolerate(o: dict[str, Any]) -> None:
    o["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]


def adopt(o: dict[str, Any]) -> None:
    """A ReplicaSet adopts the pod: it now gets the default spread constraints."""
    o["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                         "name": "w", "uid": "rs-1", "controller": True}]


def no_status(o: dict[str, Any]) -> None:
    del o["status"]


@pytest.mark.parametrize("change, fast", [
    pytest.param(bind, True, id="bound"),
    pytest.param(run, True, id="running"),
    pytest.param(finish, True, id="succeeded"),
    pytest.param(delete, True, id="terminating"),
    pytest.param(odd_phase, True, id="unknown-phase"),
    pytest.param(no_status, True, id="no-status"),
    pytest.param(relabel, False, id="labels-changed"),
    pytest.param(reannotate, False, id="annotations-changed"),
    pytest.param(resize, False, id="requests-changed"),
    pytest.param(retolerate, False, id="tolerations-changed"),
    pytest.param(adopt, False, id="owner-changed"),
])
def test_fast_path_matches_the_full_translation(change: Callable[[dict[str, Any]], None],
                                                fast: bool) -> None:
    cache = PodTranslations(NAMES)
    first = base()
    cache.translate(first)
    later = copy.deepcopy(first)
    change(later)
    got = cache.translate(later)
    assert got == pod_with_membership(later, scheduler_names=NAMES)
    assert (cache.fast == 1) is fast


@pytest.mark.parametrize("field", ["labels", "annotations"])
def test_empty_maps_are_the_same_as_none(field: str) -> None:
    """Created with ``{}``, bound without the key (``omitempty``): still the fast path."""
    cache = PodTranslations(NAMES)
    first = base()
    first["metadata"][field] = {}
    cache.translate(first)
    later = copy.deepcopy(first)
    del later["metadata"][field]
    bind(later)
    assert cache.translate(later) == pod_with_membership(later, scheduler_names=NAMES)
    assert (cache.fast, cache.full) == (1, 1)


def test_forgotten_pods_are_not_moved_along() -> None:
    cache = PodTranslations(NAMES)
    obj = base()
    cache.translate(obj)
    cache.forget("u-1")
    bind(obj)
    assert cache.translate(obj) == pod_with_membership(obj, scheduler_names=NAMES)
    assert cache.fast == 0


def other_replica(o: dict[str, Any]) -> None:
    o["metadata"].update(name="w-1", uid="u-2", creationTimestamp="2026-01-01T00:00:07Z")


def other_replica_bound(o: dict[str, Any]) -> None:
    other_replica(o)
    run(o)


def other_replica_elsewhere(o: dict[str, Any]) -> None:
    other_replica(o)
    o["metadata"]["namespace"] = "other"


def other_replica_resized(o: dict[str, Any]) -> None:
    other_replica(o)
    resize(o)


def invalid_replica(o: dict[str, Any]) -> None:
    other_replica(o)
    o["spec"]["priority"] = "high"


@pytest.mark.parametrize("first_change, change, templated", [
    pytest.param(None, other_replica, True, id="same-template"),
    pytest.param(None, other_replica_bound, True, id="same-template-running"),
    pytest.param(None, other_replica_elsewhere, False, id="other-namespace"),
    pytest.param(None, other_replica_resized, False, id="other-requests"),
    pytest.param(invalid_replica, other_replica, False, id="invalid-template"),
])
def test_replicas_of_a_template_reuse_its_translation(
        first_change: Callable[[dict[str, Any]], None] | None,
        change: Callable[[dict[str, Any]], None], templated: bool) -> None:
    """Pods that differ only in name, uid, creation, node and phase: one full
    translation; the others are the same as their full translation."""
    cache = PodTranslations(NAMES)
    first = base()
    if first_change is not None:
        first_change(first)
        first["metadata"].update(name="w-9", uid="u-9")
    cache.translate(first)
    later = base()
    change(later)
    if first_change is not None:
        first_change(later)
    assert cache.translate(later) == pod_with_membership(later, scheduler_names=NAMES)
    assert (cache.templated == 1) is templated


def heavy(i: int) -> dict[str, Any]:
    """A pod as real workloads write them: a long environment and a last-applied
    annotation, kilobytes the scheduler never reads."""
    obj = base()
    obj["metadata"]["uid"] = f"u-{i}"
    obj["metadata"]["name"] = f"w-{i}"
    obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = (
        "x" * 4000 + str(i))
    obj["spec"]["containers"][0]["env"] = [{"name": f"VAR_{k}", "value": f"{i}-{k}" * 8}
                                           for k in range(60)]
    return obj


def test_the_cache_keeps_no_raw_pod() -> None:
    """What stays per pod is its translation, not the raw spec or annotations it came
    from (about 12 KB each here)."""
    cache = PodTranslations(NAMES)
    count = 200
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(count):
            cache.translate(heavy(i))  # the raw object is dropped right after
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.full == count
    assert retained / count < 3_000, f"{retained / count:.0f} bytes kept per pod"


def test_values_from_outside_json_take_the_json_fingerprint() -> None:
    """A hand-made object with a value ``marshal`` cannot write (a JSON decoder never
    makes one) is translated all the same, and moves along on the fast path."""

    class Opaque:
        def __repr__(self) -> str:
            return "opaque"

    cache = PodTranslations(NAMES)
    first = base()
    first["spec"]["extra"] = Opaque()
    cache.translate(first)
    later = copy.copy(first)
    later["spec"] = {**first["spec"], "nodeName": "node-3"}
    assert cache.translate(later) == pod_with_membership(later, scheduler_names=NAMES)
    assert (cache.fast, cache.full) == (1, 1)


def test_replicas_share_a_parsed_creation_time() -> None:
    """Replicas created in one second, and in others: each gets its own creation time."""
    cache = PodTranslations(NAMES)
    cache.translate(base())
    for i, stamp in enumerate(["2026-01-01T00:00:07Z", "2026-01-01T00:00:07Z",
                               "2026-01-01T00:00:08Z", "not a time"]):
        replica = base()
        replica["metadata"].update(name=f"w-{i + 1}", uid=f"u-{i + 2}",
                                   creationTimestamp=stamp)
        assert cache.translate(replica) == pod_with_membership(replica,
                                                               scheduler_names=NAMES)
    assert cache.templated == 4

"""One gang per pod: the precedence between dialects, and precise messages when they disagree."""

from __future__ import annotations

import pytest
from gangsched.core.values.model import AppKey, GroupKey
from gangsched.translate.dialects import NONE, PodMeta, resolve
from gangsched.translate.pods import pod_with_membership
from k8s_objects import make_pod

ORDER = "precedence native > workload > yunikorn > koordinator > coscheduling > volcano > kueue"

NATIVE_GROUP = ({"gangsched.io/pod-group": "native-pg"}, {})
YUNIKORN = ({"applicationId": "yk-app"}, {"yunikorn.apache.org/task-group-name": "workers"})
KOORDINATOR = ({}, {"gang.scheduling.koordinator.sh/name": "koord-gang",
                    "gang.scheduling.koordinator.sh/min-available": "3"})
COSCHEDULING = ({"scheduling.x-k8s.io/pod-group": "pg1"}, {})
VOLCANO = ({}, {"scheduling.k8s.io/group-name": "vc-group"})
KUEUE = ({"kueue.x-k8s.io/pod-group-name": "kueue-group"},
         {"kueue.x-k8s.io/pod-group-total-count": "4"})


def meta(*dialects: tuple[dict[str, str], dict[str, str]]) -> PodMeta:
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    for more_labels, more_annotations in dialects:
        labels.update(more_labels)
        annotations.update(more_annotations)
    return PodMeta("default", "p", "uid-p", labels, annotations)


def test_a_pod_in_no_dialect_is_ordinary() -> None:
    assert resolve.resolve(meta()) is NONE
    assert resolve.resolve(meta(({"queue": "x"}, {}))) is NONE  # YuniKorn's queue label alone


@pytest.mark.parametrize(
    ("first", "second", "dialect", "app", "group", "names"),
    [
        pytest.param(NATIVE_GROUP, KUEUE, "native", None, "default/native-pg",
                     ('PodGroup "native-pg" (native: metadata.labels[gangsched.io/pod-group])',
                      'PodGroup "kueue-group" (kueue: '
                      "metadata.labels[kueue.x-k8s.io/pod-group-name])"), id="native-kueue"),
        pytest.param(YUNIKORN, KOORDINATOR, "yunikorn", "default/yk-app", None,
                     ('Application "yk-app" (yunikorn: metadata.labels.applicationId)',
                      'PodGroup "koord-gang" (koordinator: '
                      "metadata.annotations[gang.scheduling.koordinator.sh/name])"),
                     id="yunikorn-koordinator"),
        pytest.param(KOORDINATOR, COSCHEDULING, "koordinator", None, "default/koord-gang",
                     ('PodGroup "koord-gang" (koordinator: '
                      "metadata.annotations[gang.scheduling.koordinator.sh/name])",
                      'PodGroup "pg1" (coscheduling: '
                      "metadata.labels[scheduling.x-k8s.io/pod-group])"),
                     id="koordinator-coscheduling"),
        pytest.param(COSCHEDULING, VOLCANO, "coscheduling", None, "default/coscheduling:pg1",
                     ('PodGroup "pg1" (coscheduling: '
                      "metadata.labels[scheduling.x-k8s.io/pod-group])",
                      'PodGroup "vc-group" (volcano: '
                      "metadata.annotations[scheduling.k8s.io/group-name])"),
                     id="coscheduling-volcano"),
        pytest.param(VOLCANO, KUEUE, "volcano", None, "default/volcano:vc-group",
                     ('PodGroup "vc-group" (volcano: '
                      "metadata.annotations[scheduling.k8s.io/group-name])",
                      'PodGroup "kueue-group" (kueue: '
                      "metadata.labels[kueue.x-k8s.io/pod-group-name])"), id="volcano-kueue"),
    ],
)
def test_two_gangs_the_precedence_decides_and_says_so(
        first: tuple[dict[str, str], dict[str, str]],
        second: tuple[dict[str, str], dict[str, str]], dialect: str, app: str | None,
        group: str | None, names: tuple[str, str]) -> None:
    for order in ((first, second), (second, first)):  # the order of the keys never matters
        found = resolve.resolve(meta(*order))
        assert found.dialect == dialect
        assert (found.app, found.pod_group) == (app, group)
        assert found.conflicts == (
            f"the pod names two gangs: {names[0]} and {names[1]}; it joins the {dialect} one "
            f"({ORDER})",)


def test_the_same_gang_under_two_dialects_is_no_conflict() -> None:
    found = resolve.resolve(meta(({"scheduling.x-k8s.io/pod-group": "train"}, {}),
                                 ({"kueue.x-k8s.io/pod-group-name": "train"},
                                  {"kueue.x-k8s.io/pod-group-total-count": "4"})))
    assert (found.dialect, found.pod_group, found.conflicts) == (
        "coscheduling", "default/coscheduling:train", ())
    assert found.definer is None  # Kueue's count would define another object: not used


def test_the_same_gang_with_different_sizes_is_a_conflict() -> None:
    found = resolve.resolve(meta(({}, {"gang.scheduling.koordinator.sh/name": "train",
                                       "gang.scheduling.koordinator.sh/min-available": "3"}),
                                 ({"kueue.x-k8s.io/pod-group-name": "train"},
                                  {"kueue.x-k8s.io/pod-group-total-count": "4"})))
    assert (found.dialect, found.definer, found.pod_group) == (
        "koordinator", "koordinator", "default/train")
    assert found.conflicts == (
        'PodGroup "train": spec.minMember is 3 from '
        "metadata.annotations[gang.scheduling.koordinator.sh/min-available] (koordinator) but 4 "
        "from metadata.annotations[kueue.x-k8s.io/pod-group-total-count] (kueue); following "
        f"koordinator ({ORDER})",)


def test_a_lower_dialect_defines_the_gang_a_higher_one_only_names() -> None:
    found = resolve.resolve(meta(({"pod-group.scheduling.sigs.k8s.io": "train"}, {}),
                                 ({"kueue.x-k8s.io/pod-group-name": "train"},
                                  {"kueue.x-k8s.io/pod-group-total-count": "4"})))
    assert (found.dialect, found.definer, found.definition_key, found.conflicts) == (
        "koordinator", "kueue", "default/train", ())
    definition = resolve.define(meta(({"pod-group.scheduling.sigs.k8s.io": "train"}, {}),
                                     ({"kueue.x-k8s.io/pod-group-name": "train"},
                                      {"kueue.x-k8s.io/pod-group-total-count": "4"})), found)
    assert definition is not None and definition.manifest is not None
    assert definition.manifest["spec"] == {"minMember": 4, "totalNumber": 4,
                                          "onTimeout": "Requeue", "waitForMinMember": True}


def test_queues_that_disagree() -> None:
    found = resolve.resolve(meta(({"gangsched.io/queue": "research"}, {}), KUEUE,
                                 ({"kueue.x-k8s.io/queue-name": "batch"}, {})))
    assert found.queue == "research"
    assert found.conflicts == (
        'queue "research" from metadata.labels[gangsched.io/queue] (native) but "batch" from '
        f'metadata.labels[kueue.x-k8s.io/queue-name] (kueue); using "research" ({ORDER})',)


def test_spark_pods_written_for_volcano_are_not_pulled_into_an_application() -> None:
    # Spark labels every pod spark-app-selector; with Volcano it annotates the group.
    found = resolve.resolve(meta(({"spark-app-selector": "spark-123"}, {}), VOLCANO))
    assert (found.dialect, found.app, found.pod_group, found.conflicts) == (
        "volcano", None, "default/volcano:vc-group", ())


def test_problems_of_every_dialect_are_kept() -> None:
    obj = make_pod(labels={"gangsched.io/app": "a", "gangsched.io/pod-group": "b"},
                   annotations={"yunikorn.apache.org/allow-preemption": "maybe"})
    found, _ = pod_with_membership(obj)
    assert found.invalid == (
        'conflicting gang membership: label gangsched.io/app names Application "a" and label '
        'gangsched.io/pod-group names PodGroup "b"; a pod can be a member of one gang only; '
        'metadata.annotations[yunikorn.apache.org/allow-preemption]: expected "true" or '
        '"false", got "maybe"')
    assert (found.app, found.pod_group) == (AppKey("default/a"), GroupKey("default/b"))


@pytest.mark.parametrize(
    ("annotations", "preemptible"),
    [
        ({"yunikorn.apache.org/allow-preemption": "false"}, False),
        ({"yunikorn.apache.org/allow-preemption": "false", "gangsched.io/preemptible": "true"},
         True),
        ({"gangsched.io/preemptible": "false"}, False),
        ({}, True),
    ],
)
def test_preemption_setting_by_precedence(annotations: dict[str, str], preemptible: bool) -> None:
    found, _ = pod_with_membership(make_pod(annotations=annotations))
    assert found.preemptible is preemptible

"""The placed-pod index: the per-node counts it keeps up to date must always equal a count
of every placed pod, whatever comes and goes, including selectors asked for before and
after the pods."""

from __future__ import annotations

from gangsched.core.framework.podindex import PlacedPod, PodIndex
from gangsched.core.values.constraints import SelectorOperator, SelectorRequirement
from gangsched.core.values.placement_terms import NO_PLACEMENT
from gangsched.core.values.selectors import LabelSelector
from hypothesis import given, settings
from hypothesis import strategies as st

SELECTORS = [
    LabelSelector.build({"app": "web"}),
    LabelSelector.build({"app": "web", "tier": "a"}),
    LabelSelector((), (SelectorRequirement("tier", SelectorOperator.EXISTS, ()),)),
    LabelSelector((), (SelectorRequirement("app", SelectorOperator.NOT_IN, ("web",)),)),
]

labels = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["web", "db", "a"]),
                         max_size=2)
# An operation: add pod ``n`` with labels on a node in a namespace, remove pod ``n``,
# or ask for selector ``n`` in the namespace (and compare with a count of every pod).
Operation = tuple[str, int, dict[str, str], str, str]
operation = st.tuples(st.sampled_from(["add", "remove", "ask"]), st.integers(0, 5), labels,
                      st.sampled_from("xyz"), st.sampled_from(["ns1", "ns2"]))


def brute(index: PodIndex, selector: LabelSelector, namespace: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for pod in index.pods.values():
        if pod.namespace == namespace and selector.matches(pod.labels):
            found[pod.node] = found.get(pod.node, 0) + 1
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(operation, max_size=40))
def test_per_node_counts_equal_a_count_of_every_pod(ops: list[Operation]) -> None:
    index = PodIndex()
    for kind, n, pod_labels, node, namespace in ops:
        if kind == "add":
            index.add(PlacedPod(f"u{n}", namespace, pod_labels, NO_PLACEMENT, node))
        elif kind == "remove":
            index.remove(f"u{n}")
        else:
            selector = SELECTORS[n % len(SELECTORS)]
            assert dict(index.per_node(selector, namespace)) == brute(index, selector, namespace)
    for selector in SELECTORS:
        for namespace in ("ns1", "ns2"):
            assert dict(index.per_node(selector, namespace)) == brute(index, selector, namespace)


def test_counts_start_afresh_beyond_the_limit() -> None:
    index = PodIndex()
    index.MAX_COUNTED = 2
    index.add(PlacedPod("u1", "ns", {"app": "web"}, NO_PLACEMENT, "x"))
    for selector in SELECTORS:
        assert dict(index.per_node(selector, "ns")) == brute(index, selector, "ns")
    index.add(PlacedPod("u2", "ns", {"app": "web", "tier": "a"}, NO_PLACEMENT, "y"))
    for selector in SELECTORS:
        assert dict(index.per_node(selector, "ns")) == brute(index, selector, "ns")

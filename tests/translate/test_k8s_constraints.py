from collections.abc import Callable

import pytest
import yaml
from gangsched.core.values import constraints as c
from gangsched.core.values.constraints import (
    NodeAffinity,
    NodeSelectorTerm,
    SelectorOperator,
    SelectorRequirement,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)
from gangsched.translate import k8s_constraints as t
from hypothesis import given
from hypothesis import strategies as st

POD_SPEC = yaml.safe_load(
    """
nodeSelector:
  kubernetes.io/os: linux
tolerations:
- key: nvidia.com/gpu
  operator: Exists
  effect: NoSchedule
- key: dedicated
  operator: Equal
  value: training
- key: node.kubernetes.io/not-ready
  operator: Exists
  effect: NoExecute
  tolerationSeconds: 300
- operator: Exists
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
      - matchExpressions:
        - key: topology.kubernetes.io/zone
          operator: In
          values: [eu-west-1a, eu-west-1b]
        - key: node.kubernetes.io/instance-cores
          operator: Gt
          values: ["15"]
      - matchFields:
        - key: metadata.name
          operator: In
          values: [gpu-node-7]
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 1
      preference:
        matchExpressions:
        - key: spot
          operator: DoesNotExist
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
"""
)

NODE_SPEC = yaml.safe_load(
    """
taints:
- key: nvidia.com/gpu
  value: present
  effect: NoSchedule
- key: node.kubernetes.io/unreachable
  effect: NoExecute
  timeAdded: "2024-01-01T00:00:00Z"
- key: spot
  value: "true"
  effect: PreferNoSchedule
"""
)


def test_real_pod_spec() -> None:
    assert t.node_selector_from_k8s(POD_SPEC["nodeSelector"]) == {"kubernetes.io/os": "linux"}
    assert t.tolerations_from_k8s(POD_SPEC["tolerations"]) == (
        Toleration("nvidia.com/gpu", TolerationOperator.EXISTS, "", TaintEffect.NO_SCHEDULE),
        Toleration("dedicated", TolerationOperator.EQUAL, "training", None),
        Toleration("node.kubernetes.io/not-ready", TolerationOperator.EXISTS, "",
                   TaintEffect.NO_EXECUTE),
        Toleration("", TolerationOperator.EXISTS),
    )
    assert t.node_affinity_from_k8s(POD_SPEC["affinity"]) == NodeAffinity(
        (
            NodeSelectorTerm(
                match_expressions=(
                    SelectorRequirement("topology.kubernetes.io/zone", SelectorOperator.IN,
                                        ("eu-west-1a", "eu-west-1b")),
                    SelectorRequirement("node.kubernetes.io/instance-cores", SelectorOperator.GT,
                                        ("15",)),
                )
            ),
            NodeSelectorTerm(
                match_fields=(
                    SelectorRequirement("metadata.name", SelectorOperator.IN, ("gpu-node-7",)),
                )
            ),
        )
    )


def test_real_node_spec() -> None:
    assert t.taints_from_k8s(NODE_SPEC["taints"]) == (
        Taint("nvidia.com/gpu", "present", TaintEffect.NO_SCHEDULE),
        Taint("node.kubernetes.io/unreachable", "", TaintEffect.NO_EXECUTE),
        Taint("spot", "true", TaintEffect.PREFER_NO_SCHEDULE),
    )


def test_real_specs_work_together() -> None:
    tolerations = t.tolerations_from_k8s(POD_SPEC["tolerations"])
    taints = t.taints_from_k8s(NODE_SPEC["taints"])
    gpu, unreachable, _spot = taints
    assert c.untolerated_taints((), taints) == [gpu, unreachable]
    assert c.untolerated_taints(tolerations[:3], taints) == [unreachable]
    assert c.untolerated_taints(tolerations, taints) == []


# Missing input


@pytest.mark.parametrize(
    ("read", "raw", "expected"),
    [
        pytest.param(t.tolerations_from_k8s, None, (), id="tolerations-none"),
        pytest.param(t.tolerations_from_k8s, [], (), id="tolerations-empty"),
        pytest.param(t.tolerations_from_k8s, [{}], (Toleration(),), id="toleration-all-defaults"),
        pytest.param(t.tolerations_from_k8s,
                     [{"key": "a", "operator": "", "value": None, "effect": ""}],
                     (Toleration("a"),), id="toleration-empty-strings"),
        pytest.param(t.taints_from_k8s, None, (), id="taints-none"),
        pytest.param(t.taints_from_k8s, [{"key": "a"}], (Taint("a"),),
                     id="taint-default-effect"),
        pytest.param(t.node_selector_from_k8s, None, {}, id="selector-none"),
        pytest.param(t.node_affinity_from_k8s, None, NodeAffinity(None), id="affinity-none"),
        pytest.param(t.node_affinity_from_k8s, {}, NodeAffinity(None), id="affinity-empty"),
        pytest.param(t.node_affinity_from_k8s, {"podAffinity": {}}, NodeAffinity(None),
                     id="pod-affinity-ignored"),
        pytest.param(t.node_affinity_from_k8s, {"nodeAffinity": None}, NodeAffinity(None),
                     id="node-affinity-null"),
        pytest.param(t.node_affinity_from_k8s,
                     {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
                     NodeAffinity(None), id="only-preferred"),
        pytest.param(
            t.node_affinity_from_k8s,
            {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}},
            NodeAffinity(()), id="required-without-terms-matches-nothing",
        ),
        pytest.param(
            t.node_affinity_from_k8s,
            {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                              {"nodeSelectorTerms": [{}]}}},
            NodeAffinity((NodeSelectorTerm(),)), id="empty-term",
        ),
        pytest.param(
            t.node_affinity_from_k8s,
            {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                              {"nodeSelectorTerms": [{"matchExpressions": [
                                  {"key": "gpu", "operator": "Exists", "values": None}]}]}}},
            NodeAffinity((NodeSelectorTerm((SelectorRequirement("gpu",
                                                                SelectorOperator.EXISTS),)),)),
            id="null-values",
        ),
    ],
)
def test_missing_input_gets_defaults(
    read: Callable[[object], object], raw: object, expected: object
) -> None:
    assert read(raw) == expected


# Invalid input: every message starts with the path of the offending field

REQ = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
TERM0 = f"{REQ}.nodeSelectorTerms[0]"


def affinity(*expressions: object, fields: object = None) -> dict[str, object]:
    term: dict[str, object] = {"matchExpressions": list(expressions)}
    if fields is not None:
        term["matchFields"] = fields
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}


@pytest.mark.parametrize(
    ("read", "raw", "message"),
    [
        pytest.param(
            t.tolerations_from_k8s, [{"key": "a"}, {"key": "b", "operator": "Equals"}],
            'tolerations[1].operator: unknown operator "Equals" (accepted: Exists, Equal)',
            id="toleration-operator",
        ),
        pytest.param(
            t.tolerations_from_k8s, [{"key": "a", "effect": "NoScheduling"}],
            'tolerations[0].effect: unknown effect "NoScheduling"'
            " (accepted: NoSchedule, PreferNoSchedule, NoExecute)",
            id="toleration-effect",
        ),
        pytest.param(t.tolerations_from_k8s, {"key": "a"},
                     "tolerations: expected a list, got object", id="tolerations-not-list"),
        pytest.param(t.tolerations_from_k8s, ["a"],
                     "tolerations[0]: expected an object, got string", id="toleration-not-object"),
        pytest.param(t.tolerations_from_k8s, [{"key": 1}],
                     "tolerations[0].key: expected a string, got number", id="toleration-key-int"),
        pytest.param(t.tolerations_from_k8s, [{"key": "a", "value": True}],
                     "tolerations[0].value: expected a string, got boolean",
                     id="toleration-value-bool"),
        pytest.param(t.taints_from_k8s, [{"value": "x", "effect": "NoSchedule"}],
                     "taints[0].key: required", id="taint-without-key"),
        pytest.param(t.taints_from_k8s, [{"key": ""}], "taints[0].key: required",
                     id="taint-empty-key"),
        pytest.param(t.taints_from_k8s, [{"key": "a", "effect": "noschedule"}],
                     'taints[0].effect: unknown effect "noschedule"'
                     " (accepted: NoSchedule, PreferNoSchedule, NoExecute)", id="taint-effect"),
        pytest.param(t.taints_from_k8s, "a=b:NoSchedule",
                     "taints: expected a list, got string", id="taints-as-string"),
        pytest.param(t.node_selector_from_k8s, ["a"],
                     "nodeSelector: expected an object, got list", id="selector-not-object"),
        pytest.param(t.node_selector_from_k8s, {"zone": 1},
                     "nodeSelector[zone]: expected a string, got number", id="selector-int"),
        pytest.param(t.node_selector_from_k8s, {"gpu": True},
                     "nodeSelector[gpu]: expected a string, got boolean", id="selector-bool"),
        pytest.param(t.node_affinity_from_k8s, [], "affinity: expected an object, got list",
                     id="affinity-not-object"),
        pytest.param(t.node_affinity_from_k8s,
                     {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}},
                     f"{REQ}: expected an object, got list", id="required-not-object"),
        pytest.param(
            t.node_affinity_from_k8s, affinity({"key": "zone", "operator": "in", "values": ["a"]}),
            f'{TERM0}.matchExpressions[0].operator: unknown operator "in"'
            " (accepted: In, NotIn, Exists, DoesNotExist, Gt, Lt)", id="expression-operator",
        ),
        pytest.param(
            t.node_affinity_from_k8s, affinity({"key": "zone"}),
            f"{TERM0}.matchExpressions[0].operator: required", id="expression-no-operator",
        ),
        pytest.param(
            t.node_affinity_from_k8s, affinity({"operator": "Exists"}),
            f"{TERM0}.matchExpressions[0].key: required", id="expression-no-key",
        ),
        pytest.param(
            t.node_affinity_from_k8s,
            affinity({"key": "a", "operator": "Exists"}, {"key": "zone", "operator": "In"}),
            f"{TERM0}.matchExpressions[1].values: must have at least one value when operator"
            " is In", id="in-without-values",
        ),
        pytest.param(
            t.node_affinity_from_k8s, affinity({"key": "cores", "operator": "Gt", "values": [4]}),
            f"{TERM0}.matchExpressions[0].values[0]: expected a string, got number",
            id="gt-value-not-string",
        ),
        pytest.param(
            t.node_affinity_from_k8s,
            affinity({"key": "cores", "operator": "Lt", "values": ["4.5"]}),
            f'{TERM0}.matchExpressions[0].values[0]: "4.5" is not an integer'
            " (required when operator is Lt)", id="lt-value-not-int",
        ),
        pytest.param(
            t.node_affinity_from_k8s,
            affinity({"key": "a", "operator": "Exists", "values": "x"}),
            f"{TERM0}.matchExpressions[0].values: expected a list, got string",
            id="values-not-list",
        ),
        pytest.param(
            t.node_affinity_from_k8s,
            affinity(fields=[{"key": "metadata.namespace", "operator": "In", "values": ["x"]}]),
            f'{TERM0}.matchFields[0].key: unsupported field selector key "metadata.namespace"'
            " (accepted: metadata.name)", id="field-key",
        ),
        pytest.param(
            t.node_affinity_from_k8s,
            affinity(fields=[{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]),
            f"{TERM0}.matchFields[0].values: must have exactly one value for a field selector,"
            " got 2", id="field-two-values",
        ),
    ],
)
def test_invalid_input_names_the_path(
    read: Callable[[object], object], raw: object, message: str
) -> None:
    with pytest.raises(c.ConstraintError) as caught:
        read(raw)
    assert str(caught.value) == message


def test_path_prefix_is_configurable() -> None:
    with pytest.raises(c.ConstraintError, match=r"^spec\.tolerations\[0\]\.operator: "):
        t.tolerations_from_k8s([{"operator": "x"}], path="spec.tolerations")


# Writing, and round trips

def test_tolerations_to_k8s_leaves_out_empty_fields() -> None:
    rendered = t.tolerations_to_k8s(
        [Toleration(operator=TolerationOperator.EXISTS),
         Toleration("a", TolerationOperator.EQUAL, "b", TaintEffect.NO_EXECUTE)]
    )
    assert rendered == [
        {"operator": "Exists"},
        {"key": "a", "operator": "Equal", "value": "b", "effect": "NoExecute"},
    ]


def test_node_affinity_to_k8s() -> None:
    assert t.node_affinity_to_k8s(NodeAffinity(None)) == {}
    affinity = t.node_affinity_from_k8s(POD_SPEC["affinity"])
    assert t.node_affinity_to_k8s(affinity) == {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": POD_SPEC["affinity"][
            "nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]}
    }


def test_real_specs_round_trip() -> None:
    tolerations = t.tolerations_from_k8s(POD_SPEC["tolerations"])
    assert t.tolerations_from_k8s(t.tolerations_to_k8s(tolerations)) == tolerations
    taints = t.taints_from_k8s(NODE_SPEC["taints"])
    assert t.taints_from_k8s(t.taints_to_k8s(taints)) == taints


texts = st.text(alphabet="abz./-019", max_size=6)
keys = texts.filter(bool)
effects = st.sampled_from(list(TaintEffect))

tolerations_strategy = st.lists(
    st.builds(Toleration, texts, st.sampled_from(list(TolerationOperator)), texts,
              st.none() | effects)
)
taints_strategy = st.lists(st.builds(Taint, keys, texts, effects))


@st.composite
def requirements(draw: st.DrawFn) -> SelectorRequirement:
    operator = draw(st.sampled_from(list(SelectorOperator)))
    if operator in (SelectorOperator.IN, SelectorOperator.NOT_IN):
        values = tuple(draw(st.lists(texts, min_size=1, max_size=3)))
    elif operator in (SelectorOperator.GT, SelectorOperator.LT):
        values = (str(draw(st.integers(-(2**63), 2**63 - 1))),)
    else:
        values = ()
    return SelectorRequirement(draw(keys), operator, values)


field_requirements = st.builds(
    SelectorRequirement, st.just("metadata.name"),
    st.sampled_from([SelectorOperator.IN, SelectorOperator.NOT_IN]), st.tuples(texts),
)
terms = st.builds(
    NodeSelectorTerm,
    st.lists(requirements(), max_size=3).map(tuple),
    st.lists(field_requirements, max_size=2).map(tuple),
)
affinities = st.builds(NodeAffinity, st.none() | st.lists(terms, max_size=3).map(tuple))


@given(tolerations_strategy)
def test_tolerations_round_trip(tolerations: list[Toleration]) -> None:
    assert t.tolerations_from_k8s(t.tolerations_to_k8s(tolerations)) == tuple(tolerations)


@given(taints_strategy)
def test_taints_round_trip(taints: list[Taint]) -> None:
    assert t.taints_from_k8s(t.taints_to_k8s(taints)) == tuple(taints)


@given(affinities)
def test_node_affinity_round_trip(affinity: NodeAffinity) -> None:
    assert t.node_affinity_from_k8s(t.node_affinity_to_k8s(affinity)) == affinity

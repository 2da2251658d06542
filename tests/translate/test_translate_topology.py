"""The topology field's shared rules: label keys, the CRD shape and its one-line summary."""

from __future__ import annotations

from typing import Any

import pytest
from gangsched.core.values.model import NO_TOPOLOGY, TopologyRequest
from gangsched.translate import fields, topology


@pytest.mark.parametrize("key", [
    pytest.param("rack", id="plain-name"),
    pytest.param("topology.gangsched.io/rack", id="prefixed"),
    pytest.param("kubernetes.io/hostname", id="well-known"),
    pytest.param("Rack_1.a-b", id="mixed-case-name"),
    pytest.param("a" * 63, id="63-characters"),
    pytest.param(f"{'a' * 253}/x", id="253-character-prefix"),
])
def test_valid_label_keys_are_kept(key: str) -> None:
    assert topology.label_key(key, "k") == key


@pytest.mark.parametrize(("key", "reason"), [
    pytest.param("", "must be a node-label key, got an empty string", id="empty"),
    pytest.param("my rack", "the name must be at most 63", id="space"),
    pytest.param("a" * 64, "the name must be at most 63", id="64-characters"),
    pytest.param("-rack", "starting and ending with an alphanumeric", id="leading-dash"),
    pytest.param("/rack", 'the prefix before "/" must be a DNS subdomain', id="empty-prefix"),
    pytest.param("Example.com/rack", "the prefix before", id="upper-case-prefix"),
    pytest.param(f"{'a' * 254}/x", "at most 253 characters", id="254-character-prefix"),
    pytest.param("rack/", "the name must be", id="empty-name"),
])
def test_invalid_label_keys_name_the_rule(key: str, reason: str) -> None:
    with pytest.raises(fields.TranslationError) as caught:
        topology.label_key(key, "spec.topology.required")
    assert str(caught.value).startswith("spec.topology.required: ")
    assert reason in str(caught.value)


@pytest.mark.parametrize("raw", [
    pytest.param({}, id="empty"),
    pytest.param({"required": "rack"}, id="required"),
    pytest.param({"preferred": ["rack", "block"]}, id="preferred"),
    pytest.param({"required": "zone", "preferred": ["rack", "block"], "sliceKey": "host",
                  "sliceSize": 2}, id="everything"),
])
def test_the_crd_shape_round_trips(raw: dict[str, Any]) -> None:
    problems = fields.Problems()
    request = topology.from_k8s(raw, "spec.topology", problems, members=4)
    assert problems.messages == []
    assert topology.to_k8s(request) == raw


def test_too_many_preferred_levels_are_refused() -> None:
    problems = fields.Problems()
    topology.from_k8s({"preferred": [f"l{i}" for i in range(9)]}, "spec.topology", problems)
    assert problems.messages == ["spec.topology.preferred: too many preferred levels: 9 "
                                 "(at most 8)"]


@pytest.mark.parametrize(("request_", "text"), [
    pytest.param(NO_TOPOLOGY, "", id="nothing"),
    pytest.param(TopologyRequest("block", ("rack",), "host", 4),
                 "required block, preferred rack, slices of 4 per host", id="everything"),
    pytest.param(TopologyRequest(None, ("rack", "block")), "preferred rack > block",
                 id="escalation"),
])
def test_describe_says_it_in_one_line(request_: TopologyRequest, text: str) -> None:
    assert topology.describe(request_) == text

"""NodeResourcesFit gives one status per set of reasons: the same value as making it."""

from __future__ import annotations

import pytest
from builders import make_node, res
from gangsched.core.framework import interface as fw
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.placement.cluster import Cluster
from gangsched.core.plugins.noderesources import FitArgs, NodeResourcesFit, insufficient
from gangsched.core.values.resources import Resources


@pytest.mark.parametrize(("used", "asked", "reasons"), [
    pytest.param(res(cpu=1), res(cpu=2), (), id="fits"),
    pytest.param(res(cpu=3), res(cpu=2), ("Insufficient cpu",), id="short-of-cpu"),
    pytest.param(res(cpu=3, memory="31Gi"), res(cpu=2, memory="2Gi"),
                 ("Insufficient cpu", "Insufficient memory"), id="short-of-both"),
    pytest.param(res(cpu=1) + Resources({"pods": 110}), res(cpu=1) + Resources({"pods": 1}),
                 ("Too many pods",), id="too-many-pods"),
])
def test_a_refusal_is_the_status_its_reasons_make(used: Resources, asked: Resources,
                                                  reasons: tuple[str, ...]) -> None:
    cluster = Cluster()
    for name in ("a", "b"):
        cluster.upsert_node(make_node(name, cpu=4))
        cluster.charge(name, f"used-{name}", used)
    plugin = NodeResourcesFit(FitArgs())
    pod = PodInfo(asked)
    a, b = (plugin.filter(fw.CycleState(), pod, cluster.nodes[n]) for n in ("a", "b"))
    expected = fw.unschedulable(*insufficient(pod, cluster.nodes["a"])) if reasons else fw.SUCCESS
    assert a == b == expected
    assert a.reasons == reasons and a.plugin == ""
    assert a is b  # made once for both nodes

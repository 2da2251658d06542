"""Node admission: the ``not-ready`` taint every new Node gets.

Faithful to the ``TaintNodesAtCreation`` admission plugin (enabled by default since
v1.17, ``plugin/pkg/admission/nodetaint``): a Node created through the API gets the
taint ``node.kubernetes.io/not-ready`` with effect ``NoSchedule`` (no value) unless it
already has a taint with that key and effect, whatever its conditions say. The node
lifecycle controller removes it once the node is Ready; that controller is not part of
the API server, so this fake does not run it: tests and benchmarks that want schedulable
nodes remove the taint themselves (``fakeapi.builders.untaint_ready``).

Simplified: the admission configuration's extra taints are not supported.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
NOT_READY = "node.kubernetes.io/not-ready"


def taint_at_creation(obj: Obj) -> Obj:
    """Add the not-ready NoSchedule taint to a Node being created (a copy is not made:
    ``obj`` is the server's own copy of the request body)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    taints = spec.get("taints")
    if not isinstance(taints, list):
        taints = []
    if not any(isinstance(t, dict) and t.get("key") == NOT_READY
               and t.get("effect") == "NoSchedule" for t in taints):
        taints = [*taints, {"key": NOT_READY, "effect": "NoSchedule"}]
    spec["taints"] = taints
    return obj

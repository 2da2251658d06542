"""How many feasible nodes a placement looks for before it scores them: kube-scheduler's
``numFeasibleNodesToFind`` (``pkg/scheduler/schedule_one.go``), over the nodes it filters.

kube-scheduler filters every node of its snapshot, unless a PreFilter names the only
nodes that may fit (a ``PreFilterResult``): NodeAffinity does when every required term
names nodes by ``matchFields`` ``metadata.name In``; then the share is taken of those
nodes (the ones that exist). A profile without a score plugin (and no extender) looks
for one feasible node.
"""

from __future__ import annotations

from collections.abc import Container

from gangsched.core.values.constraints import NODE_NAME_FIELD, NodeAffinity, SelectorOperator

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def feasible_nodes_to_find(percentage: int, nodes: int) -> int:
    """How many feasible nodes a placement looks for among ``nodes`` before it scores
    them, as kube-scheduler's ``numFeasibleNodesToFind``: every node when there are
    fewer than 100; else ``percentage`` of them (0: the adaptive 50% less 1% per 125
    nodes, at least 5%), and never fewer than 100."""
    if nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return nodes
    if percentage <= 0:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def named_nodes(affinity: NodeAffinity, nodes: Container[str]) -> int | None:
    """How many of ``nodes`` NodeAffinity's PreFilter names for a pod of ``affinity``
    (the union over the required terms of each term's ``metadata.name In`` values,
    intersected within a term), or None when it names none (a term without such a
    requirement: every node may fit)."""
    terms = affinity.required_terms
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        own: set[str] | None = None
        for requirement in term.match_fields:
            if (requirement.key == NODE_NAME_FIELD
                    and requirement.operator is SelectorOperator.IN):
                values = set(requirement.values)
                own = values if own is None else own & values
        if own is None:
            return None
        names |= own
    return sum(1 for name in names if name in nodes)

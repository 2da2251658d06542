"""The hosts with a free local volume that fits a claim, kept by the volume catalogue as
volumes come, change, are assumed, bound, given back and go, judge every node as
``FindMatchingVolume`` does (``binding.match``) after each change."""

from __future__ import annotations

import dataclasses

from builders import make_node
from gangsched.core.values.model import Node
from gangsched.core.values.volume_specs import ClaimRef, PodClaim, PodVolumes
from gangsched.core.volumes import binding
from gangsched.core.volumes.catalog import Assumption, VolumeCatalog
from hypothesis import given, settings
from hypothesis import strategies as st
from volume_builders import LOCAL, RWO, RWX, make_pv, make_pvc

HOSTS = [f"n{i}" for i in range(6)]
NODES = [make_node(h, labels={"kubernetes.io/hostname": h}) for h in HOSTS]

Change = tuple[str, int, int, int]
_CHANGES = st.lists(st.tuples(
    st.sampled_from(["add", "resize", "assume", "forget", "bind", "remove", "terminate"]),
    st.integers(0, 9), st.integers(0, 5), st.integers(1, 20)), min_size=1, max_size=30)


def _node_of(node: Node) -> Node:
    return node


@settings(max_examples=150, deadline=None)
@given(_CHANGES, st.integers(1, 12), st.booleans())
def test_the_hosts_kept_serve_a_claim_as_match_finds(
        changes: list[Change], request: int, many: bool) -> None:
    catalog = VolumeCatalog()
    catalog.upsert(LOCAL)
    claims = [make_pvc(f"c{i}", f"{request}Gi", modes=RWX if many and i % 2 else RWO)
              for i in range(3)]
    for claim in claims:
        catalog.upsert(claim)
    serial = 0
    for op, volume, host, gib in changes:
        name = f"pv{volume}"
        existing = catalog.volumes.get(name)
        if op == "add":
            catalog.upsert(make_pv(name, f"{gib}Gi", node=HOSTS[host],
                                   modes=RWX if gib % 3 == 0 else RWO))
        elif op == "resize" and existing is not None:
            catalog.upsert(dataclasses.replace(existing, capacity=gib * 2**30))
        elif op == "assume" and existing is not None:
            serial += 1
            catalog.assume(f"pod{serial}", (Assumption(claims[gib % 3].key, name,
                                                       HOSTS[host]),))
        elif op == "forget":
            catalog.forget_pod(f"pod{1 + gib % max(1, serial)}")
        elif op == "bind" and existing is not None:
            catalog.upsert(dataclasses.replace(
                existing, phase="Bound", claim_ref=ClaimRef("default", f"other{gib}", "u")))
        elif op == "remove":
            catalog.remove("PersistentVolume", name)
        elif op == "terminate" and existing is not None:
            catalog.upsert(dataclasses.replace(existing, terminating=True))
        for claim in claims:
            if catalog.assumed_claim.get(claim.key) is not None:
                continue  # a claim with an assumption of its own is judged by match
            found = binding.prefilter(catalog, "default", PodVolumes((PodClaim(claim.name),)))
            assert isinstance(found, binding.Claims)
            fast = binding.match_nodes(catalog, found, NODES, _node_of)
            slow = [n for n in NODES if binding.match(catalog, found, n)[0] is None]
            assert [n.name for n in fast] == [n.name for n in slow], (op, claim.name)

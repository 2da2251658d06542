"""Invariants of volume binding under arbitrary arrivals, failures and confirmations."""

from __future__ import annotations

import dataclasses

from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import BindGang, BindPod, BindVolume
from gangsched.core.values.observations import (
    NodeObserved,
    PodGroupObserved,
    PodObserved,
    VolumeBindFailed,
    VolumeObserved,
)
from gangsched.core.values.volume_specs import ClaimRef
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.builders import make_node, make_pod, make_podgroup
from tests.core.volume_builders import FAST, LOCAL, make_pv, make_pvc, with_volumes

NODES = ("n1", "n2", "n3")

step = st.one_of(
    st.tuples(st.just("pod"), st.integers(0, 5), st.sampled_from(["local", "fast"])),
    st.tuples(st.just("gang"), st.integers(0, 5), st.sampled_from(["local", "fast"])),
    st.tuples(st.just("pv"), st.integers(0, 5), st.sampled_from(NODES)),
    st.tuples(st.just("fail"), st.integers(0, 20), st.just("")),
    st.tuples(st.just("confirm"), st.integers(0, 20), st.just("")),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(step, min_size=1, max_size=25))
def test_no_volume_is_ever_given_to_two_claims(steps: list[tuple[str, int, str]]) -> None:
    s = Scheduler()
    for name in NODES:
        s.observe(NodeObserved(make_node(name, labels={"kubernetes.io/hostname": name})))
    s.observe(VolumeObserved(LOCAL))
    s.observe(VolumeObserved(FAST))
    binds: list[BindPod] = []
    latest: dict[str, BindPod] = {}
    owner: dict[str, str] = {}  # PV -> the claim a write bound it to
    made = 0
    for now, (kind, n, arg) in enumerate(steps, start=1):
        if kind in ("pod", "gang"):
            made += 1
            members = 2 if kind == "gang" else 1
            if kind == "gang":
                s.observe(PodGroupObserved(make_podgroup(f"g{made}", members)))
            for m in range(members):
                claim = f"c{made}-{m}"
                s.observe(VolumeObserved(make_pvc(claim, f"{n + 1}Gi", storage_class=arg)))
                pod = make_pod(f"p{made}-{m}", pod_group=f"g{made}" if kind == "gang" else None)
                s.observe(PodObserved(with_volumes(pod, claim)))
        elif kind == "pv":
            s.observe(VolumeObserved(make_pv(f"pv{now}", f"{n + 1}Gi", node=arg)))
        elif kind == "fail" and binds:
            b = latest[binds[n % len(binds)].uid]  # the pod's bind under way fails
            s.observe(VolumeBindFailed(b.uid, b.node, 409, "taken"))
            for w in b.volumes:  # nothing was written: the volume may go to anyone
                if isinstance(w, BindVolume) and owner.get(w.volume) == f"default/{w.claim}":
                    del owner[w.volume]
        elif kind == "confirm" and binds:
            b = binds[n % len(binds)]
            for w in b.volumes:
                if isinstance(w, BindVolume) and w.volume in s.volumes.volumes:
                    pv = s.volumes.volumes[w.volume]
                    s.observe(VolumeObserved(dataclasses.replace(
                        pv, claim_ref=ClaimRef(w.namespace, w.claim, w.claim_uid),
                        phase="Bound")))
        for d in s.cycle(now=float(now)):
            for b in d.binds if isinstance(d, BindGang) else (d,):
                if not isinstance(b, BindPod):
                    continue
                binds.append(b)
                latest[b.uid] = b
                assert b.node in NODES
                for w in b.volumes:
                    if isinstance(w, BindVolume):
                        claim = f"{w.namespace}/{w.claim}"
                        assert owner.setdefault(w.volume, claim) == claim, (w, owner)
        # the assume cache stays consistent both ways
        catalog = s.volumes
        for volume, claim in catalog.assumed_volume.items():
            assert catalog.assumed_claim[claim].volume == volume
        assert len(set(catalog.assumed_volume.values())) == len(catalog.assumed_volume)

"""How fast the core places pods when some of them use volumes, against none.

    python3 bench/volumes.py                       # 5000 nodes, 20000 pods, 10% with claims
    python3 bench/volumes.py --nodes 2000 --pods 8000 --share 0.3

Not a test: it prints a table. One thread; times are CPU seconds.

Workload: ``--nodes`` nodes (32 cpu, 128Gi, 110 pods, labelled with their hostname), one
local PersistentVolume per node (class ``local``, WaitForFirstConsumer, no provisioner),
and ``--pods`` plain pending pods of 1 cpu / 2Gi. A ``--share`` of them each has its own
claim: half of those on the ``local`` class (a static PV to find), half on a class with
a provisioner (WaitForFirstConsumer: the claim is annotated for the pod's node). The
cycles run until every pod is bound; every bind and volume write is fed back as the
API would show it (the pod bound; the PV's claimRef and the claim bound, or the claim
annotated). The same run without any claims is the reference.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from core import FAST, LOCAL, local_volume, volumes_written
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import BindGang, BindPod
from gangsched.core.values.model import Node, Pod, PodPhase, PodUID
from gangsched.core.values.observations import NodeObserved, PodObserved, VolumeObserved
from gangsched.core.values.resources import Resources
from gangsched.core.values.volume_specs import (
    AccessMode,
    PersistentVolume,
    PersistentVolumeClaim,
    PodClaim,
    PodVolumes,
)

NODE = Resources.from_k8s({"cpu": 32, "memory": "128Gi", "pods": 110})
POD = Resources.from_k8s({"cpu": 1, "memory": "2Gi"})
RWO = frozenset({AccessMode.READ_WRITE_ONCE})
GI = 2**30


def run(nodes: int, pods: int, share: float) -> tuple[float, int]:
    """(CPU seconds of the cycles, pods bound)."""
    s = Scheduler()
    for i in range(nodes):
        name = f"node-{i:05d}"
        s.observe(NodeObserved(Node(name, NODE, {"kubernetes.io/hostname": name})))
    s.observe(VolumeObserved(LOCAL))
    s.observe(VolumeObserved(FAST))
    volumes: dict[str, PersistentVolume] = {}
    claims: dict[str, PersistentVolumeClaim] = {}
    if share:
        for i in range(nodes):
            pv = local_volume(f"node-{i:05d}")
            volumes[pv.name] = pv
            s.observe(VolumeObserved(pv))
    with_claims = int(pods * share)
    by_uid: dict[str, Pod] = {}
    for i in range(pods):
        pod = Pod(PodUID(f"p-{i}"), "bench", f"p-{i}", POD, creation=float(i))
        if i < with_claims:
            claim = PersistentVolumeClaim("bench", f"c-{i}", f"uid-c-{i}", "1",
                                          "local" if i % 2 else "fast", 10 * GI, RWO)
            claims[claim.name] = claim
            s.observe(VolumeObserved(claim))
            pod = dataclasses.replace(pod, volumes=PodVolumes((PodClaim(claim.name),)))
        by_uid[pod.uid] = pod
        s.observe(PodObserved(pod))
    bound = 0
    started = time.process_time()
    now = 0.0
    while bound < pods and now < 100:
        now += 1.0
        for d in s.cycle(now):
            for b in d.binds if isinstance(d, BindGang) else (d,):
                if not isinstance(b, BindPod):
                    continue
                volumes_written(s, b, volumes, claims)
                pod = by_uid[b.uid]
                s.observe(PodObserved(dataclasses.replace(pod, node_name=b.node,
                                                          phase=PodPhase.RUNNING)))
                bound += 1
    return time.process_time() - started, bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--share", type=float, default=0.1,
                        help="the fraction of pods with a claim (default 0.1)")
    args = parser.parse_args()
    print(f"{args.nodes} nodes, {args.pods} plain pods; placements/s (CPU time)")
    for label, share in (("no claims", 0.0), (f"{args.share:.0%} with claims", args.share)):
        seconds, bound = run(args.nodes, args.pods, share)
        rate = bound / seconds if seconds else float("inf")
        print(f"  {label:<20} {bound:>7} bound in {seconds:6.2f} s   {rate:8.0f} /s")


if __name__ == "__main__":
    main()

"""The 100-node GPU cluster with NVLink domains (``examples/simulations/gpu-nvlink.yaml``)
runs on the real allocator: every gang is allocated whole, no device twice, and every
quad claim's four GPUs share one NVLink domain."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from gangsched.core.values import devices as dv
from gangsched.sim import parse, results, runner
from gangsched.sim.claims import ClaimBook

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "simulations" / "gpu-nvlink.yaml"


def test_the_nvlink_cluster_allocates_whole_domains_to_whole_gangs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    workload = parse.load(str(EXAMPLE))
    domain_of = {dv.DeviceID(s.driver, s.pool.name, d.name): d.attributes["nvlinkDomain"]
                 for s in workload.slices for d in s.devices}
    quads: list[set[object]] = []
    original = ClaimBook._put

    def put(book: ClaimBook, claim: dv.ResourceClaim) -> dv.ResourceClaim:
        old = book.claims.get(claim.key)
        if claim.allocation is not None and (old is None or old.allocation is None) \
                and len(claim.allocation.devices) == 4:
            quads.append({domain_of[r.device_id] for r in claim.allocation.devices})
        return original(book, claim)

    monkeypatch.setattr(ClaimBook, "_put", put)
    (out,) = runner.run_all(workload, ["gangsched"])
    summary = results.summarise(out)
    assert summary.completed == summary.jobs == 70
    assert summary.counters["doubleAllocatedDevices"] == 0
    assert summary.counters["overCommittedNodes"] == 0
    assert len(quads) == 24 * 8 and all(len(domains) == 1 for domains in quads)
    # More training gangs than free domains: some waited, holding nothing meanwhile.
    waits = Counter(run.first_gang_start is not None and run.first_gang_start
                    > run.job.submit_at for run in out.jobs if run.job.name.startswith("train"))
    assert waits[True] >= 1
    assert summary.partial_gangs.total_seconds == 0

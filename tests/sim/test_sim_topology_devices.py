"""A gang claiming GPUs and asking for one rack, in the simulator: it runs whole in the
rack that has a GPU for every member, not in the tighter rack that has a few."""

from __future__ import annotations

from pathlib import Path

import pytest
from gangsched.core.values import devices as dv
from gangsched.sim import parse, results, runner
from gangsched.sim.claims import ClaimBook

SCENARIO = """
deviceClasses:
  - name: gpu.example.com
    selectors: ["device.driver == 'gpu.example.com'"]
claimTemplates:
  - name: one-gpu
    spec:
      devices:
        requests:
          - {name: gpu, exactly: {deviceClassName: gpu.example.com}}
nodes:
  - pool: small          # one rack of 4 nodes with 1 GPU each: the tighter on cpu
    count: 4
    cpu: 16
    memory: 64Gi
    topology: {racks: 1}
    devices:
      - {driver: gpu.example.com, name: gpu, count: 1}
  - pool: big            # one rack of 4 nodes with 8 GPUs each
    count: 4
    cpu: 32
    memory: 128Gi
    topology: {racks: 1}
    devices:
      - {driver: gpu.example.com, name: gpu, count: 8}
podGroups:
  - name: train
    submitAt: 0
    minMember: 8
    mode: Strict
    scheduleTimeoutSeconds: 600
    topology: {required: topology.gangsched.io/rack}
    pods:
      - name: worker
        count: 8
        duration: 600
        cpu: 1
        memory: 1Gi
        claims: [{name: gpu, template: one-gpu}]
"""


def test_a_gang_claiming_gpus_runs_whole_in_the_rack_that_has_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "racks-gpus.yaml"
    path.write_text(SCENARIO)
    nodes: list[str] = []
    original = ClaimBook._put

    def put(book: ClaimBook, claim: dv.ResourceClaim) -> dv.ResourceClaim:
        old = book.claims.get(claim.key)
        if claim.allocation is not None and (old is None or old.allocation is None):
            nodes.extend(r.device_id.pool for r in claim.allocation.devices)
        return original(book, claim)

    monkeypatch.setattr(ClaimBook, "_put", put)
    (out,) = runner.run_all(parse.load(str(path)), ["gangsched"], keep_samples=False)
    summary = results.summarise(out)
    assert summary.completed == summary.jobs == 1
    assert summary.counters["doubleAllocatedDevices"] == 0
    assert summary.counters["overCommittedNodes"] == 0
    assert summary.partial_gangs.total_seconds == 0
    (run,) = out.jobs
    assert run.first_gang_start == 0
    assert len(nodes) == 8 and all(node.startswith("big") for node in nodes), nodes

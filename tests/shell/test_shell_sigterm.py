"""SIGTERM to the ``gangsched run`` process: the Lease is released and the exit is 0.

The other leader tests stop the operator by setting its stop flag. Here the real
process gets the real signal, with kopf running inside it (kopf takes SIGTERM over once
it has started): the operator must still stop binding, release the Lease (holder
emptied, so that another replica takes over at once) and exit 0, within the
Deployment's ``terminationGracePeriodSeconds``.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import signal
import sys

import pytest
import yaml
from shellkit import ROOT, new_cluster, pod, wait_for

pytestmark = pytest.mark.asyncio

LEASE = ("leases", "gangsched-system", "gangsched-leader")


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    return await new_cluster(fake_api_factory, tmp_path, nodes=2)


def grace_period() -> int:
    deployment = yaml.safe_load((ROOT / "manifests" / "deployment.yaml").read_text())
    return int(deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])


async def test_sigterm_releases_the_lease_and_exits_zero(cluster, tmp_path: pathlib.Path) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    env = {**os.environ, "POD_NAME": "op-term", "GANGSCHED_NAMESPACE": "gangsched-system"}
    with (tmp_path / "operator.log").open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gangsched", "run", "--kubeconfig", str(kubeconfig),
            "--metrics-port", "0", env=env, stdout=out, stderr=out)
    try:
        api.create(pod("before"))
        await wait_for(lambda: api.get("pods", "default", "before")["spec"].get("nodeName"),
                       what="the operator binds", timeout=60)
        await wait_for(lambda: any(who == "kopf" for who, *_ in api.audit),
                       what="kopf running in the operator", timeout=60)
        assert api.get(*LEASE, api_version="coordination.k8s.io/v1")["spec"][
            "holderIdentity"] == "op-term"
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), timeout=grace_period())
        log = (tmp_path / "operator.log").read_text(errors="replace")
        assert code == 0, log
        spec = api.get(*LEASE, api_version="coordination.k8s.io/v1")["spec"]
        assert (spec.get("holderIdentity") or "", spec["leaseDurationSeconds"]) == ("", 1), log
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

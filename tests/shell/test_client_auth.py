"""Fresh credentials and the client-side write budget, against a fake API server that
rotates the token it accepts and refuses requests over a per-client rate."""

from __future__ import annotations

import asyncio
import pathlib
import sys
import textwrap

import pytest
import yaml
from fakeapi import FakeApiServer
from fakeapi.flowcontrol import FlowLimiter
from gangsched.shell.client import ApiError, Connection, KubeClient, load_connection
from gangsched.shell.credentials import Credentials
from shellkit import FakeClock

pytestmark = pytest.mark.asyncio

NAMESPACES = ("", "v1", "namespaces", None, "default")
AGENT = "tests"
"""Not the operator's requests: reading namespaces is no permission of its own."""


def kubeconfig(api: FakeApiServer, path: pathlib.Path, user: dict[str, object]) -> str:
    config = yaml.safe_load(api.write_kubeconfig(path).read_text())
    config["users"] = [{"name": "fakeapi", "user": user}]
    path.write_text(yaml.safe_dump(config))
    return str(path)


async def test_a_rotated_token_file_is_read_again_on_401_and_every_minute(
        fake_api: FakeApiServer, tmp_path: pathlib.Path) -> None:
    token = tmp_path / "token"
    token.write_text("t1\n")
    fake_api.accepted_tokens = {"t1"}
    clock = FakeClock()
    credentials = Credentials(token_file=str(token), period=60, monotonic=clock)
    connection = Connection(fake_api.url, credentials=credentials)
    async with KubeClient(connection, user_agent=AGENT) as client:
        await client.get(*NAMESPACES)
        # The kubelet rotates the projected token; the old one is refused from now on.
        token.write_text("t2\n")
        fake_api.accepted_tokens = {"t2"}
        await client.get(*NAMESPACES)
        assert (client.unauthorized, fake_api.tokens_seen["t1"], fake_api.tokens_seen["t2"]) \
            == (1, 2, 1)
        # Rotated again, the old one still valid: read again once a minute has passed.
        token.write_text("t3\n")
        fake_api.accepted_tokens = {"t2", "t3"}
        clock.advance(59)
        await client.get(*NAMESPACES)
        assert fake_api.tokens_seen["t3"] == 0
        clock.advance(1)
        await client.get(*NAMESPACES)
        assert (client.unauthorized, fake_api.tokens_seen["t3"]) == (1, 1)


async def test_a_kubeconfig_token_file_refreshes_and_a_static_token_does_not(
        fake_api: FakeApiServer, tmp_path: pathlib.Path) -> None:
    token = tmp_path / "token"
    token.write_text("t1")
    fake_api.accepted_tokens = {"t1"}
    connection = await load_connection(
        kubeconfig(fake_api, tmp_path / "kc-file", {"tokenFile": str(token)}))
    static = await load_connection(kubeconfig(fake_api, tmp_path / "kc-static", {"token": "t1"}))
    async with KubeClient(connection, user_agent=AGENT) as client, \
            KubeClient(static, user_agent=AGENT) as fixed:
        await client.get(*NAMESPACES)
        await fixed.get(*NAMESPACES)
        token.write_text("t2")
        fake_api.accepted_tokens = {"t2"}
        await client.get(*NAMESPACES)
        with pytest.raises(ApiError) as refused:
            await fixed.get(*NAMESPACES)
        assert refused.value.code == 401
        assert fixed.unauthorized == 1  # not retried: nothing could make it fresh


PLUGIN = textwrap.dedent("""\
    import datetime, json, pathlib, sys
    here = pathlib.Path(sys.argv[1])
    runs = here / "runs"
    runs.write_text(str(int(runs.read_text() or 0) + 1) if runs.exists() else "1")
    lifetime = float((here / "lifetime").read_text())
    expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=lifetime)
    print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1",
                      "kind": "ExecCredential",
                      "status": {"token": (here / "token").read_text(),
                                 "expirationTimestamp": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}}))
""")


@pytest.mark.parametrize(("lifetime", "runs"), [
    pytest.param(3600, 2, id="valid-token-reused-until-a-401"),
    pytest.param(5, 4, id="expiring-token-refreshed-before-each-request"),
])
async def test_an_exec_plugin_token_is_refreshed(fake_api: FakeApiServer, tmp_path: pathlib.Path,
                                                 lifetime: int, runs: int) -> None:
    """As EKS's and GKE's plugins: a token with an expiry. One within 10 s of expiring is
    replaced before it is sent; a 401 runs the plugin again whatever the expiry said."""
    (tmp_path / "plugin.py").write_text(PLUGIN)
    (tmp_path / "token").write_text("t1")
    (tmp_path / "lifetime").write_text(str(lifetime))
    fake_api.accepted_tokens = {"t1"}
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                     "command": sys.executable,
                     "args": [str(tmp_path / "plugin.py"), str(tmp_path)],
                     "interactiveMode": "Never"}}
    connection = await load_connection(kubeconfig(fake_api, tmp_path / "kc", user))
    async with KubeClient(connection, user_agent=AGENT) as client:
        await client.get(*NAMESPACES)
        await client.get(*NAMESPACES)
        (tmp_path / "token").write_text("t2")
        fake_api.accepted_tokens = {"t2"}
        await client.get(*NAMESPACES)
    assert int((tmp_path / "runs").read_text()) == runs
    assert fake_api.tokens_seen["t2"] == 1


@pytest.mark.parametrize(("qps", "fewest", "most"), [
    pytest.param(0.0, 15, 20, id="no-client-limit"),
    pytest.param(50.0, 0, 0, id="client-limit-below-the-server's"),
])
async def test_client_side_rate_limit_keeps_a_burst_under_the_servers_limit(
        fake_api: FakeApiServer, qps: float, fewest: int, most: int) -> None:
    """40 requests at once; the server takes 100 per second per client with a burst of
    20, and answers 429 beyond that (as a full priority level does). The client's own
    burst (10) leaves room for the jitter of connections being opened."""
    fake_api.flow = FlowLimiter(100, 20)
    connection = Connection(fake_api.url)
    async with KubeClient(connection, qps=qps, burst=10, user_agent=AGENT) as client:
        answers = await asyncio.gather(*(client.get(*NAMESPACES) for _ in range(40)),
                                       return_exceptions=True)
    codes = [a.code for a in answers if isinstance(a, ApiError)]
    assert set(codes) <= {429}
    assert fewest <= len(codes) <= most
    assert sum(fake_api.flow.rejected.values()) == len(codes)

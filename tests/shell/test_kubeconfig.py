"""Plain kubeconfigs read without a client library give what kubernetes_asyncio gives;
every other form is left to it."""

from __future__ import annotations

import base64
import pathlib
from typing import Any

import pytest
import yaml
from gangsched.shell import kubeconfig
from gangsched.shell.client import Connection, load_connection

pytestmark = pytest.mark.asyncio

CA = b"-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"


def config(cluster: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "here",
        "clusters": [{"name": "other", "cluster": {"server": "https://wrong"}},
                     {"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "here", "context": {"cluster": "c", "user": "u"}}],
    }


def write(tmp_path: pathlib.Path, cluster: dict[str, Any], user: dict[str, Any]
          ) -> pathlib.Path:
    (tmp_path / "ca.crt").write_bytes(CA)
    (tmp_path / "token").write_text("from-a-file\n")
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config(cluster, user)))
    return path


PLAIN = [
    pytest.param({"server": "http://127.0.0.1:8080"}, {}, id="plain-http"),
    pytest.param({"server": "https://api:6443/", "certificate-authority": "ca.crt"},
                 {"token": "abc"}, id="token-and-ca-file"),
    pytest.param({"server": "https://api:6443", "insecure-skip-tls-verify": True},
                 {"tokenFile": "token"}, id="token-file-insecure"),
    pytest.param({"server": "https://api:6443",
                  "certificate-authority-data": base64.b64encode(CA).decode()},
                 {"token": "abc"}, id="ca-data"),
]


@pytest.mark.parametrize("cluster, user", PLAIN)
async def test_plain_kubeconfigs_read_like_the_client_library(
        tmp_path: pathlib.Path, cluster: dict[str, Any], user: dict[str, Any]) -> None:
    from kubernetes_asyncio import client as k8s_client
    from kubernetes_asyncio import config as k8s_config

    path = write(tmp_path, cluster, user)
    ours = kubeconfig.read_kubeconfig(path)
    assert ours is not None
    cfg = k8s_client.Configuration()
    await k8s_config.load_kube_config(config_file=str(path), client_configuration=cfg)
    token = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
    assert ours["host"] == str(cfg.host).rstrip("/")
    # client-go trims a token file's whitespace; kubernetes_asyncio keeps its newline
    assert ours["token"] == (token[7:].strip() if token else None)
    assert ours["verify"] == bool(cfg.verify_ssl)
    if cfg.ssl_ca_cert:
        assert pathlib.Path(ours["ca_file"]).read_bytes() == pathlib.Path(
            cfg.ssl_ca_cert).read_bytes()
    else:
        assert ours["ca_file"] is None
    loaded = await load_connection(str(path))
    assert isinstance(loaded, Connection)
    assert (loaded.host, loaded.token, loaded.verify) == (ours["host"], ours["token"],
                                                          ours["verify"])


@pytest.mark.parametrize("user", [
    pytest.param({"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                           "command": "aws"}}, id="exec-plugin"),
    pytest.param({"auth-provider": {"name": "oidc"}}, id="auth-provider"),
    pytest.param({"username": "admin", "password": "secret"}, id="basic-auth"),
    pytest.param({"tokenFile": "missing"}, id="token-file-missing"),
])
async def test_other_forms_are_left_to_the_client_library(
        tmp_path: pathlib.Path, user: dict[str, Any]) -> None:
    path = write(tmp_path, {"server": "https://api:6443"}, user)
    assert kubeconfig.read_kubeconfig(path) is None


@pytest.mark.parametrize("env, expected", [
    pytest.param("", None, id="unset-no-home-config"),
    pytest.param("one", "one", id="one-file"),
    pytest.param("one:two", None, id="several-files"),
])
async def test_which_kubeconfig(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path,
                                env: str, expected: str | None) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", env)
    found = kubeconfig.kubeconfig_path(None)
    assert (None if found is None else str(found)) == expected
    assert kubeconfig.kubeconfig_path("explicit") == pathlib.Path("explicit")


@pytest.mark.parametrize("host, expected", [
    pytest.param("10.0.0.1", "https://10.0.0.1:443", id="ipv4"),
    pytest.param("fd00::1", "https://[fd00::1]:443", id="ipv6"),
])
async def test_in_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path,
                          host: str, expected: str) -> None:
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_bytes(CA)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    assert kubeconfig.read_in_cluster(tmp_path) == {
        "host": expected, "token": "sa-token", "token_file": str(tmp_path / "token"),
        "ca_file": str(tmp_path / "ca.crt")}
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert kubeconfig.read_in_cluster(tmp_path) is None


async def test_in_cluster_tokens_are_read_again_as_they_rotate(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """The fast path keeps the token's file: a projected token that rotates is read again
    (every ``token_refresh`` seconds), not frozen at start-up."""
    (tmp_path / "token").write_text("first\n")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setattr(kubeconfig, "SERVICE_ACCOUNT", tmp_path)
    monkeypatch.setattr(kubeconfig.read_in_cluster, "__defaults__", (tmp_path,))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    connection = await load_connection(None, token_refresh=0.0)
    credentials = connection.auth()
    assert credentials.token_file == str(tmp_path / "token")
    assert await credentials.token() == "first"
    (tmp_path / "token").write_text("second\n")
    assert await credentials.token() == "second"

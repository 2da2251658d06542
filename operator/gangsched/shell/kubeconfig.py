"""Reading the common kubeconfigs and the in-cluster config without a client library.

Start-up speed: importing ``kubernetes_asyncio`` costs about 0.7 s of CPU, a large part
of the operator's time to its first bind. The configs an operator meets nearly always
are plain: in-cluster (service-account token and CA), or a kubeconfig whose current
context names a server with a CA (file or data, or ``insecure-skip-tls-verify``) and a
user with a token (or ``tokenFile``) or a client certificate (file or data). Those are
read here. Anything else (an ``exec`` or ``auth-provider`` user, basic auth, a
``KUBECONFIG`` of several files, a context that is missing) gives None, and the caller
falls back to ``kubernetes_asyncio``'s loaders, which know every form.

Relative paths in a kubeconfig are relative to its folder; ``*-data`` fields are
written to private temporary files (TLS needs files), as client libraries do.
"""

from __future__ import annotations

import base64
import os
import pathlib
import tempfile
from collections.abc import Mapping
from typing import Any

SERVICE_ACCOUNT = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount")
PLAIN_USER_KEYS = frozenset({"token", "tokenFile", "client-certificate",
                             "client-certificate-data", "client-key", "client-key-data"})


def kubeconfig_path(explicit: str | None) -> pathlib.Path | None:
    """The one kubeconfig file to read: ``explicit``, else ``KUBECONFIG`` (one file
    only), else ``~/.kube/config`` if it exists. None when there is none, or when
    ``KUBECONFIG`` lists several files (left to the full loader)."""
    if explicit:
        return pathlib.Path(explicit)
    env = os.environ.get("KUBECONFIG", "")
    if env:
        files = [f for f in env.split(os.pathsep) if f]
        return pathlib.Path(files[0]) if len(files) == 1 else None
    home = pathlib.Path.home() / ".kube" / "config"
    return home if home.exists() else None


def read_kubeconfig(path: pathlib.Path) -> dict[str, Any] | None:
    """The connection settings of ``path``'s current context, as keyword arguments of
    :class:`gangsched.shell.client.Connection`; None for any form not read here (see
    the module docstring) or a file that cannot be read or parsed."""
    import yaml

    try:
        config = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(config, Mapping):
        return None
    context = _named(config, "contexts", config.get("current-context"), "context")
    if context is None:
        return None
    cluster = _named(config, "clusters", context.get("cluster"), "cluster")
    user = _named(config, "users", context.get("user"), "user") or {}
    if cluster is None or not cluster.get("server") or not set(user) <= PLAIN_USER_KEYS:
        return None
    base = path.parent
    token = user.get("token")
    token_file = None
    if not token and user.get("tokenFile"):
        token_file = str(_resolve(base, user["tokenFile"]))
        try:
            token = pathlib.Path(token_file).read_text().strip()
        except OSError:
            return None
    return {
        "host": str(cluster["server"]).rstrip("/"),
        "token": str(token) if token else None,
        "token_file": token_file,
        "ca_file": _file(base, cluster, "certificate-authority"),
        "cert_file": _file(base, user, "client-certificate"),
        "key_file": _file(base, user, "client-key"),
        "verify": not bool(cluster.get("insecure-skip-tls-verify", False)),
    }


def read_in_cluster(root: pathlib.Path = SERVICE_ACCOUNT) -> dict[str, Any] | None:
    """The in-cluster connection (``KUBERNETES_SERVICE_HOST``/``PORT``, the mounted
    service-account token and CA); None outside a cluster or without a token.
    ``token_file`` names the token's file: projected tokens rotate, so it is read again."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        return None
    try:
        token = (root / "token").read_text().strip()
    except OSError:
        return None
    if ":" in host:  # IPv6
        host = f"[{host}]"
    ca = root / "ca.crt"
    return {"host": f"https://{host}:{port}", "token": token or None,
            "token_file": str(root / "token"),
            "ca_file": str(ca) if ca.exists() else None}


def _named(config: Mapping[str, Any], section: str, name: object, field: str
           ) -> Mapping[str, Any] | None:
    for entry in config.get(section) or ():
        if isinstance(entry, Mapping) and entry.get("name") == name:
            found = entry.get(field)
            return found if isinstance(found, Mapping) else None
    return None


def _resolve(base: pathlib.Path, name: str) -> pathlib.Path:
    path = pathlib.Path(os.path.expanduser(name))
    return path if path.is_absolute() else base / path


def _file(base: pathlib.Path, section: Mapping[str, Any], key: str) -> str | None:
    """The path of ``key``, or of ``key-data`` written to a private temporary file."""
    data = section.get(f"{key}-data")
    if data:
        handle, name = tempfile.mkstemp(prefix="gangsched-kubeconfig-")
        with os.fdopen(handle, "wb") as out:
            out.write(base64.b64decode(str(data)))
        return name
    value = section.get(key)
    return str(_resolve(base, str(value))) if value else None

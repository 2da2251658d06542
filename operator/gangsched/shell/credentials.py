"""Fresh bearer tokens: the operator runs for months, its credentials do not.

Projected service-account tokens are rotated by the kubelet (hourly by default) and
expire; exec plugins (``aws eks get-token``, ``gke-gcloud-auth-plugin``) hand out
tokens valid for minutes. A token read once at start-up makes every request fail with
401 once it expires. So, as client-go does:

* a **token file** (in-cluster ``/var/run/secrets/kubernetes.io/serviceaccount/token``,
  or a kubeconfig ``tokenFile``) is read again when the cached token is older than
  ``period`` (one minute: client-go's ``cachingTokenSource``), and at once after a 401;
* an **exec plugin** (and the other refreshing kubeconfig providers) is asked again when
  its token is about to expire (kubernetes-asyncio's loader keeps the expiry and a
  skew margin) and at once after a 401 (client-go's exec authenticator does the same);
* a **static** token (a literal ``token`` in the kubeconfig) never changes.

:meth:`Credentials.token` is called before every request (cheap when nothing is due);
:meth:`Credentials.invalidate` after a 401 makes the next call refresh. A token file
that cannot be read keeps the last token (logged), so a transient hiccup of the
projected volume does not fail requests that would still succeed.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import pathlib
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def _strip_bearer(token: str | None) -> str | None:
    if not token:
        return None
    token = token.strip()
    if token.lower().startswith("bearer "):
        token = token[7:].strip()
    return token or None


class Credentials:
    """Where the bearer token comes from, and the token as last obtained."""

    def __init__(self, *, token: str | None = None, token_file: str | None = None,
                 loader: Any = None, period: float = 60.0,
                 monotonic: Callable[[], float] | None = None) -> None:
        """``token``: static. ``token_file``: read again every ``period`` seconds.
        ``loader``: a kubernetes-asyncio ``KubeConfigLoader`` whose user runs an exec
        plugin; asked again near expiry. With none of them, requests carry no token."""
        self._token = _strip_bearer(token)
        self.token_file = token_file
        self.loader = loader
        self.period = period
        self._monotonic = monotonic or time.monotonic
        self._read_at: float | None = None
        self._stale = False
        self._lock = asyncio.Lock()
        self.refreshes = 0
        """How often the token was obtained again (file read or plugin run)."""

    @property
    def refreshing(self) -> bool:
        """Whether the token can change (a file or a plugin)."""
        return self.token_file is not None or self.loader is not None

    @property
    def expiration(self) -> datetime.datetime | None:
        """When the current token expires, if its source says (exec plugins do)."""
        expiry = getattr(self.loader, "exec_plugin_expiry", None)
        return expiry if isinstance(expiry, datetime.datetime) else None

    def invalidate(self) -> None:
        """The API server refused the token (401): obtain it again before the next request."""
        self._stale = True

    async def token(self) -> str | None:
        """The token to send now (None: none), refreshed first when due (see module doc)."""
        if not self.refreshing:
            return self._token
        due = self._stale or self._read_at is None or (
            self.token_file is not None and self._monotonic() - self._read_at >= self.period)
        if self.loader is not None and not due:
            due = _expiring(self.expiration)
        if due:
            async with self._lock:
                await self._refresh()
        return self._token

    async def _refresh(self) -> None:
        force, self._stale = self._stale, False
        if self.token_file is not None:
            try:
                text = pathlib.Path(self.token_file).read_text()
            except OSError as error:
                log.warning("cannot read the token file %s: %s; keeping the last token",
                            self.token_file, error)
                self._read_at = self._monotonic()
                return
            self._token = _strip_bearer(text)
        elif self.loader is not None:
            if force and hasattr(self.loader, "exec_plugin_expiry"):
                del self.loader.exec_plugin_expiry  # run the plugin again, whatever it said
            await self.loader.load_from_exec_plugin()
            self._token = _strip_bearer(getattr(self.loader, "token", None))
        self._read_at = self._monotonic()
        self.refreshes += 1


def _expiring(expiry: datetime.datetime | None) -> bool:
    """Whether a token expiring at ``expiry`` should be replaced now (10 s ahead, as
    kubernetes-asyncio's skew margin)."""
    if expiry is None:
        return False
    if expiry.tzinfo is None:
        expiry = expiry.replace(tzinfo=datetime.UTC)
    return expiry - datetime.timedelta(seconds=10) <= datetime.datetime.now(datetime.UTC)

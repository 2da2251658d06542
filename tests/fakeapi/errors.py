"""Kubernetes ``Status`` errors, as the real API server sends them.

Every failure leaves the fake as a ``kind: Status`` body with ``status: Failure``,
the HTTP ``code``, a machine-readable ``reason`` and ``details`` (name, group, kind,
causes), and the message wording of the real API server (``pods "x" not found``,
``Operation cannot be fulfilled on ...``). The in-process store API raises the same
:class:`ApiError`, so tests assert on one shape whichever way they reach the fake.
"""

from __future__ import annotations

from typing import Any

REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """A failed API call: carries everything needed to render a ``Status`` body."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        retry_after: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details
        self.retry_after = retry_after
        self.metadata = metadata
        """The Status's ``metadata`` (a ListMeta): an expired ``continue`` carries the
        token that resumes the list inconsistently."""

    def status(self) -> dict[str, Any]:
        """The ``Status`` object for this error (a fresh dict every time)."""
        body = status_body(self.code, self.message, reason=self.reason, details=self.details)
        if self.metadata:
            body["metadata"] = dict(self.metadata)
        return body


def status_body(
    code: int,
    message: str = "",
    *,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``Status`` object: ``Success`` for codes below 300, ``Failure`` otherwise."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 300 else "Failure",
    }
    if message:
        body["message"] = message
    if code >= 300:
        body["reason"] = reason or REASONS.get(code, "Unknown")
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def qualified(plural: str, group: str) -> str:
    """``pods`` for the core group, ``podgroups.scheduling.x-k8s.io`` otherwise."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    what = qualified(plural, group)
    return ApiError(
        404,
        f'{what} "{name}" not found',
        details={"name": name, "group": group, "kind": plural},
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    what = qualified(plural, group)
    return ApiError(
        409,
        f'{what} "{name}" already exists',
        reason="AlreadyExists",
        details={"name": name, "group": group, "kind": plural},
    )


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    what = qualified(plural, group)
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {what} "{name}": {why}',
        details={"name": name, "group": group, "kind": plural},
    )


STALE = ("the object has been modified; please apply your changes to the latest version "
         "and try again")


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 ``Invalid`` from a list of ``(field, message)`` causes."""
    joined = ", ".join(f"{field}: {msg}" for field, msg in causes)
    return ApiError(
        422,
        f'{kind}.{group} "{name}" is invalid: {joined}' if group else
        f'{kind} "{name}" is invalid: {joined}',
        details={
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [
                {"reason": "FieldValueInvalid", "message": msg, "field": field}
                for field, msg in causes
            ],
        },
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def gone(message: str) -> ApiError:
    return ApiError(410, message, reason="Expired")


CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You "
    "can start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list.")


def continue_expired(inconsistent_token: str) -> ApiError:
    """410 ``Expired`` for a ``continue`` token whose snapshot was compacted away, as etcd3
    storage answers it: the Status's ``metadata.continue`` resumes at the same position
    against the current state."""
    return ApiError(410, CONTINUE_EXPIRED, reason="Expired",
                    metadata={"continue": inconsistent_token})

"""Fault injection: scripted errors, delays and dropped connections per request.

Rules are checked in the order they were added; the first rule that matches the
request's method, path (``re.search`` over the path plus ``?query``) and client
(``agent``: a substring of its ``User-Agent``) and still has uses left is consumed.
A rule may delay the request, answer with an error ``Status`` (``status``: 409, 429
with ``Retry-After``, 500, 503, 504...), close the connection without answering, or
only delay and then let the request through (``status=None``). ``in_stream`` answers
a watch as the real server reports an error that happens after the stream started:
200, then one ``ERROR`` event carrying the ``Status`` (``status`` 410 is the watch
cache's "too old resource version", 500 an internal error). ``latency`` is added to
every request, watches included.

``probability`` makes a rule fire on that share of the matching requests only (drawn
from the rule book's seeded generator; a request it spares goes on to the next rule), so
that "10% of requests fail" is a handful of rules. ``lose_answer`` lets the request do
its work and then closes the connection without the answer: the write happened, the
client does not know it (it retries, and must cope with 409 ``AlreadyExists``,
``Conflict`` or 404 for what it did itself).
"""

from __future__ import annotations

import dataclasses
import random
import re


@dataclasses.dataclass
class FaultRule:
    method: str | None = None
    """HTTP method to match (any if None), case-insensitive."""
    path_regex: str | None = None
    """``re.search`` pattern over ``path?query`` (any if None)."""
    status: int | None = None
    """Error code to answer with; None lets the request through after ``delay``."""
    times: int | None = None
    """How many requests this rule affects; None for every matching request."""
    delay: float = 0.0
    """Seconds to wait before answering (or before passing the request through)."""
    drop_connection: bool = False
    """Close the connection without any response (after ``delay``)."""
    message: str = ""
    """The ``Status`` message; a generic one if empty."""
    retry_after: int | None = None
    """``Retry-After`` seconds for 429/503 answers (1 by default for 429)."""
    agent: str | None = None
    """A substring of the client's ``User-Agent`` to match (any client if None)."""
    in_stream: bool = False
    """Answer 200 with a single watch ``ERROR`` event carrying the ``Status``."""
    probability: float = 1.0
    """The share of matching requests the rule fires on (1: every one)."""
    lose_answer: bool = False
    """Carry the request out, then close the connection instead of answering."""
    hits: int = 0
    """How many requests this rule has affected so far."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"probability must be within [0, 1], not {self.probability!r}")
        self._pattern = re.compile(self.path_regex) if self.path_regex else None

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times

    def matches(self, method: str, path_qs: str, agent: str = "") -> bool:
        if self.exhausted:
            return False
        if self.agent is not None and self.agent not in agent:
            return False
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return self._pattern is None or self._pattern.search(path_qs) is not None


class Faults:
    """The rule book of one server: ``add()``, ``clear()``, ``latency``."""

    def __init__(self, seed: int | None = None) -> None:
        self.rules: list[FaultRule] = []
        self.rng = random.Random(seed)
        """Draws whether a rule with a ``probability`` fires."""
        self.latency: float = 0.0
        """Seconds added to every request."""

    def add(
        self,
        *,
        method: str | None = None,
        path_regex: str | None = None,
        status: int | None = None,
        times: int | None = None,
        delay: float = 0.0,
        drop_connection: bool = False,
        message: str = "",
        retry_after: int | None = None,
        agent: str | None = None,
        in_stream: bool = False,
        probability: float = 1.0,
        lose_answer: bool = False,
    ) -> FaultRule:
        """Append a rule and return it (its ``hits`` count the affected requests)."""
        rule = FaultRule(method=method, path_regex=path_regex, status=status, times=times,
                         delay=delay, drop_connection=drop_connection, message=message,
                         retry_after=retry_after, agent=agent, in_stream=in_stream,
                         probability=probability, lose_answer=lose_answer)
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        self.rules.clear()
        self.latency = 0.0

    @property
    def active(self) -> bool:
        return bool(self.rules) or self.latency > 0

    def take(self, method: str, path_qs: str, agent: str = "") -> FaultRule | None:
        """The first matching rule with uses left, consumed by one; None if no rule matches."""
        for rule in self.rules:
            if rule.matches(method, path_qs, agent):
                if rule.probability < 1.0 and self.rng.random() >= rule.probability:
                    continue
                rule.hits += 1
                return rule
        return None

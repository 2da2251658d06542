"""Spare tokens (``TokenBucket.try_spare``): taken only above a floor, never reserved
ahead, so the requests that queue for theirs never wait for one taken so."""

from __future__ import annotations

from gangsched.shell.ratelimit import TokenBucket
from shellkit import FakeClock


def test_a_spare_token_is_taken_only_above_the_floor() -> None:
    clock = FakeClock(0.0)
    bucket = TokenBucket(10, 10, monotonic=clock)
    taken = 0
    while bucket.try_spare(5):
        taken += 1
    assert taken == 5  # 10 saved, 5 kept for the others
    assert bucket.reserve() == 0.0  # a Binding goes at once
    assert not bucket.try_spare(5)
    assert abs(bucket.spare_in(5) - 0.2) < 1e-9  # 4 saved: 2 more to be above 5
    clock.advance(0.2)
    assert bucket.try_spare(5)


def test_a_spare_token_never_goes_ahead_of_a_reservation() -> None:
    clock = FakeClock(0.0)
    bucket = TokenBucket(10, 2, monotonic=clock)
    bucket.reserve()
    bucket.reserve()
    assert bucket.reserve() > 0  # a Binding waits for its token, reserved below zero
    clock.advance(0.1)  # the token it waited for accrued: it is the Binding's
    assert not bucket.try_spare(0)
    clock.advance(0.2)
    assert bucket.try_spare(0)

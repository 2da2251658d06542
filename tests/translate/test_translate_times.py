import datetime

import pytest
from gangsched.translate import times
from hypothesis import given
from hypothesis import strategies as st

T0 = 1714564800.0  # 2024-05-01T12:00:00Z


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2024-05-01T12:00:00Z", T0, id="utc"),
        pytest.param("2024-05-01t12:00:00z", T0, id="lower-case-t-z"),
        pytest.param("2024-05-01T12:00:00.5Z", T0 + 0.5, id="fraction"),
        pytest.param("2024-05-01T12:00:00.250000Z", T0 + 0.25, id="micro-time"),
        pytest.param("2024-05-01T12:00:00.123456789Z", T0 + 0.123456789, id="nanoseconds"),
        pytest.param("2024-05-01T14:00:00+02:00", T0, id="positive-offset"),
        pytest.param("2024-05-01T07:30:00-04:30", T0, id="negative-offset"),
        pytest.param("1970-01-01T00:00:00Z", 0.0, id="epoch"),
    ],
)
def test_parse_time_accepts_rfc3339(text: str, expected: float) -> None:
    assert times.parse_time(text) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(None, id="none"),
        pytest.param(1714564800, id="number"),
        pytest.param("", id="empty"),
        pytest.param("2024-05-01", id="date-only"),
        pytest.param("2024-05-01T12:00:00", id="no-zone"),
        pytest.param("2024-02-30T12:00:00Z", id="impossible-date"),
        pytest.param("2024-05-01T25:00:00Z", id="hour-25"),
        pytest.param("2024-05-01T12:00:60Z", id="leap-second"),
        pytest.param("2024-05-01T12:00:00.Z", id="empty-fraction"),
        pytest.param(" 2024-05-01T12:00:00Z", id="leading-space"),
        pytest.param("yesterday", id="words"),
    ],
)
def test_parse_time_returns_none_for_anything_else(text: object) -> None:
    assert times.parse_time(text) is None


@pytest.mark.parametrize(
    ("t", "full", "seconds", "micro"),
    [
        pytest.param(
            T0,
            "2024-05-01T12:00:00Z",
            "2024-05-01T12:00:00Z",
            "2024-05-01T12:00:00.000000Z",
            id="whole",
        ),
        pytest.param(
            T0 + 0.25,
            "2024-05-01T12:00:00.250000Z",
            "2024-05-01T12:00:00Z",
            "2024-05-01T12:00:00.250000Z",
            id="fraction",
        ),
        pytest.param(
            T0 + 0.9999996,
            "2024-05-01T12:00:01Z",
            "2024-05-01T12:00:00Z",
            "2024-05-01T12:00:01.000000Z",
            id="rounds-up-to-next-second",
        ),
        pytest.param(
            0.0,
            "1970-01-01T00:00:00Z",
            "1970-01-01T00:00:00Z",
            "1970-01-01T00:00:00.000000Z",
            id="epoch",
        ),
    ],
)
def test_formats(t: float, full: str, seconds: str, micro: str) -> None:
    assert times.format_time(t) == full
    assert times.format_time_seconds(t) == seconds
    assert times.format_micro_time(t) == micro


@given(st.integers(min_value=0, max_value=4_000_000_000), st.integers(0, 999_999))
def test_format_then_parse_round_trips_to_the_microsecond(seconds: int, micros: int) -> None:
    t = seconds + micros / 1_000_000
    assert times.parse_time(times.format_time(t)) == pytest.approx(t, abs=1e-6)
    assert times.parse_time(times.format_micro_time(t)) == pytest.approx(t, abs=1e-6)
    assert times.parse_time(times.format_time_seconds(t)) == seconds


@given(st.datetimes(timezones=st.just(datetime.UTC)))
def test_parse_agrees_with_the_standard_library(moment: datetime.datetime) -> None:
    text = moment.isoformat().replace("+00:00", "Z")
    assert times.parse_time(text) == pytest.approx(moment.timestamp(), abs=1e-6)

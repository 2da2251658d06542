import fractions
import math
import pickle

import pytest
from gangsched.core.values import resources
from gangsched.core.values.resources import Resources
from hypothesis import given
from hypothesis import strategies as st

F = fractions.Fraction


def res(**amounts: int) -> Resources:
    """Build a vector; ``gpu`` stands for ``nvidia.com/gpu``, ``storage`` for ephemeral."""
    names = {"gpu": "nvidia.com/gpu", "storage": resources.EPHEMERAL_STORAGE}
    return Resources({names.get(name, name): amount for name, amount in amounts.items()})


# parse_quantity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("1", F(1), id="plain"),
        pytest.param("0", F(0), id="zero"),
        pytest.param("+1", F(1), id="plus-sign"),
        pytest.param("-1", F(-1), id="minus-sign"),
        pytest.param("1.5", F(3, 2), id="decimal"),
        pytest.param("1.", F(1), id="trailing-point"),
        pytest.param(".5", F(1, 2), id="leading-point"),
        pytest.param("007", F(7), id="leading-zeros"),
        pytest.param("1Ki", F(1024), id="Ki"),
        pytest.param("1Mi", F(2**20), id="Mi"),
        pytest.param("1Gi", F(2**30), id="Gi"),
        pytest.param("1Ti", F(2**40), id="Ti"),
        pytest.param("1Pi", F(2**50), id="Pi"),
        pytest.param("1Ei", F(2**60), id="Ei"),
        pytest.param("1.5Gi", F(3 * 2**29), id="fractional-binary"),
        pytest.param("1n", F(1, 10**9), id="n"),
        pytest.param("1u", F(1, 10**6), id="u"),
        pytest.param("100m", F(1, 10), id="m"),
        pytest.param("1k", F(10**3), id="k"),
        pytest.param("1M", F(10**6), id="M"),
        pytest.param("1G", F(10**9), id="G"),
        pytest.param("1T", F(10**12), id="T"),
        pytest.param("1P", F(10**15), id="P"),
        pytest.param("1E", F(10**18), id="E-is-exa"),
        pytest.param("1e3", F(1000), id="exponent"),
        pytest.param("1E3", F(1000), id="exponent-capital"),
        pytest.param("1e+3", F(1000), id="exponent-plus"),
        pytest.param("1E-2", F(1, 100), id="exponent-negative"),
        pytest.param("1.5e-3", F(3, 2000), id="decimal-exponent"),
        pytest.param("-1.5e3", F(-1500), id="negative-exponent-form"),
        pytest.param("0.1m", F(1, 10000), id="sub-milli"),
        pytest.param(2, F(2), id="int"),
        pytest.param(0.1, F(1, 10), id="float-exact-decimal"),
        pytest.param(1e20, F(10**20), id="float-exponent"),
    ],
)
def test_parse_quantity_valid(text: str | int | float, expected: F) -> None:
    assert resources.parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", 'invalid quantity "": empty', id="empty"),
        pytest.param("1 Gi", 'invalid quantity "1 Gi": must not contain whitespace', id="space"),
        pytest.param(" 1", 'invalid quantity " 1": must not contain whitespace', id="leading"),
        pytest.param("1\n", 'invalid quantity "1\n": must not contain whitespace', id="newline"),
        pytest.param("12Qi", 'invalid quantity "12Qi": unknown suffix "Qi"', id="unknown-suffix"),
        pytest.param("1Kb", 'invalid quantity "1Kb": unknown suffix "Kb"', id="Kb"),
        pytest.param("1K", 'invalid quantity "1K": unknown suffix "K"', id="capital-K"),
        pytest.param("1mi", 'invalid quantity "1mi": unknown suffix "mi"', id="lowercase-mi"),
        pytest.param("1e", 'invalid quantity "1e": unknown suffix "e"', id="bare-e"),
        pytest.param("1e3.5", 'invalid quantity "1e3.5": unknown suffix "e3.5"', id="exp-frac"),
        pytest.param("1.2.3", 'invalid quantity "1.2.3": unknown suffix ".3"', id="two-points"),
        pytest.param("0x10", 'invalid quantity "0x10": unknown suffix "x10"', id="hex"),
        pytest.param(
            "--1",
            'invalid quantity "--1": expected a number, with an optional sign, at the start',
            id="double-sign",
        ),
        pytest.param(
            ".", 'invalid quantity ".": expected a number, with an optional sign, at the start',
            id="lone-point",
        ),
        pytest.param(
            "Gi", 'invalid quantity "Gi": expected a number, with an optional sign, at the start',
            id="suffix-only",
        ),
        pytest.param(
            "inf", 'invalid quantity "inf": expected a number, with an optional sign, at the start',
            id="inf",
        ),
        pytest.param(
            "nan", 'invalid quantity "nan": expected a number, with an optional sign, at the start',
            id="nan",
        ),
        pytest.param(
            "١", 'invalid quantity "١": expected a number, with an optional sign, at the start',
            id="non-ascii-digit",
        ),
        pytest.param(
            math.inf,
            'invalid quantity "inf": expected a number, with an optional sign, at the start',
            id="float-inf",
        ),
        pytest.param(True, "invalid quantity True: booleans are not quantities", id="bool"),
        pytest.param(
            None, "invalid quantity None: expected a string or a number, got NoneType", id="none"
        ),
        pytest.param(
            "1e1001",
            'invalid quantity "1e1001": exponent 1001 is out of range (at most 1000)',
            id="huge-exponent",
        ),
    ],
)
def test_parse_quantity_invalid(text: object, message: str) -> None:
    with pytest.raises(resources.QuantityError) as caught:
        resources.parse_quantity(text)  # type: ignore[arg-type]
    assert str(caught.value) == message


# parse_resource and to_units


@pytest.mark.parametrize(
    ("resource", "text", "expected"),
    [
        pytest.param("cpu", "100m", 100, id="cpu-milli"),
        pytest.param("cpu", "1.5", 1500, id="cpu-cores"),
        pytest.param("cpu", "2", 2000, id="cpu-whole"),
        pytest.param("cpu", "0.1m", 1, id="cpu-rounds-up"),
        pytest.param("cpu", "1n", 1, id="cpu-nano-rounds-up"),
        pytest.param("cpu", "1001u", 2, id="cpu-micro-rounds-up"),
        pytest.param("cpu", "+1", 1000, id="cpu-plus"),
        pytest.param("cpu", "0", 0, id="cpu-zero"),
        pytest.param("cpu", 0.25, 250, id="cpu-float"),
        pytest.param("memory", "1Gi", 2**30, id="memory-Gi"),
        pytest.param("memory", "1G", 10**9, id="memory-G"),
        pytest.param("memory", "1e3", 1000, id="memory-exponent"),
        pytest.param("memory", "1.5", 2, id="memory-rounds-up"),
        pytest.param("memory", "100m", 1, id="memory-milli-rounds-up"),
        pytest.param("pods", "110", 110, id="pods"),
        pytest.param("nvidia.com/gpu", 1, 1, id="gpu-int"),
        pytest.param("hugepages-2Mi", "4Mi", 4 * 2**20, id="hugepages"),
    ],
)
def test_parse_resource(resource: str, text: str | int | float, expected: int) -> None:
    assert resources.parse_resource(resource, text) == expected


@pytest.mark.parametrize(
    ("resource", "text", "message"),
    [
        pytest.param(
            "memory", "-1Gi", 'invalid quantity "-1Gi" for resource "memory": must not be negative',
            id="negative",
        ),
        pytest.param(
            "cpu", -1, 'invalid quantity -1 for resource "cpu": must not be negative',
            id="negative-int",
        ),
        pytest.param(
            "memory", "12Qi", 'invalid quantity "12Qi" for resource "memory": unknown suffix "Qi"',
            id="bad-suffix",
        ),
    ],
)
def test_parse_resource_invalid(resource: str, text: str | int, message: str) -> None:
    with pytest.raises(resources.QuantityError) as caught:
        resources.parse_resource(resource, text)
    assert str(caught.value) == message
    assert caught.value.resource == resource


def test_negative_zero_is_not_negative() -> None:
    assert resources.parse_resource("cpu", "-0") == 0


def test_to_units_rounds_towards_positive_infinity() -> None:
    assert resources.to_units("cpu", F(1, 3000)) == 1
    assert resources.to_units("memory", F(1, 3)) == 1
    assert resources.to_units("memory", F(-1, 3)) == 0


# Resources: construction, equality, rendering


def test_zero_entries_are_dropped() -> None:
    assert Resources({"cpu": 0, "memory": 5}) == Resources({"memory": 5})
    assert hash(Resources({"cpu": 0})) == hash(Resources.ZERO)
    assert list(Resources({"cpu": 0, "memory": 5}).names()) == ["memory"]


def test_reading() -> None:
    r = res(cpu=500, memory=2**30)
    assert r.get("cpu") == 500
    assert r.get("nvidia.com/gpu") == 0
    assert dict(r.items()) == {"cpu": 500, "memory": 2**30}
    assert bool(r)
    assert not r.is_zero()
    assert not Resources.ZERO
    assert Resources.ZERO.is_zero()
    assert Resources() == Resources(None) == Resources.ZERO


def test_repr_is_sorted() -> None:
    assert repr(res(memory=1073741824, cpu=500)) == "Resources(cpu=500, memory=1073741824)"
    assert repr(Resources.ZERO) == "Resources()"


def test_immutable() -> None:
    r = res(cpu=1)
    with pytest.raises(AttributeError):
        r._v = {}
    with pytest.raises(AttributeError):
        del r._v


def test_pickle_round_trip() -> None:
    r = res(cpu=1, gpu=2)
    assert pickle.loads(pickle.dumps(r)) == r


@pytest.mark.parametrize(
    "values",
    [
        pytest.param({"cpu": 1.5}, id="float"),
        pytest.param({"cpu": True}, id="bool"),
        pytest.param({"cpu": "1"}, id="string"),
        pytest.param({1: 1}, id="non-string-name"),
    ],
)
def test_constructor_rejects_non_integers(values: dict[object, object]) -> None:
    with pytest.raises(TypeError):
        Resources(values)  # type: ignore[arg-type]


def test_from_k8s() -> None:
    parsed = Resources.from_k8s({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1, "pods": "0"})
    assert parsed == Resources({"cpu": 500, "memory": 2**30, "nvidia.com/gpu": 1})
    assert Resources.from_k8s(None) is Resources.ZERO
    assert Resources.from_k8s({}) is Resources.ZERO


def test_from_k8s_error_names_the_resource() -> None:
    with pytest.raises(resources.QuantityError, match='for resource "memory"'):
        Resources.from_k8s({"cpu": "1", "memory": "12Qi"})


@pytest.mark.parametrize(
    ("vector", "expected"),
    [
        pytest.param(res(cpu=500), {"cpu": "500m"}, id="cpu-milli"),
        pytest.param(res(cpu=2000), {"cpu": "2"}, id="cpu-whole"),
        pytest.param(res(cpu=2500), {"cpu": "2500m"}, id="cpu-mixed"),
        pytest.param(res(memory=2**30), {"memory": "1Gi"}, id="memory-Gi"),
        pytest.param(res(memory=512 * 2**20), {"memory": "512Mi"}, id="memory-Mi"),
        pytest.param(res(memory=1536 * 2**20), {"memory": "1536Mi"}, id="memory-largest-exact"),
        pytest.param(res(memory=1024), {"memory": "1Ki"}, id="memory-Ki"),
        pytest.param(res(memory=1000), {"memory": "1000"}, id="memory-bytes"),
        pytest.param(res(memory=2**60), {"memory": "1Ei"}, id="memory-Ei"),
        pytest.param(res(memory=2**70), {"memory": "1024Ei"}, id="memory-beyond-Ei"),
        pytest.param(res(storage=2**31), {"ephemeral-storage": "2Gi"}, id="ephemeral-storage"),
        pytest.param(Resources({"hugepages-2Mi": 2**21}), {"hugepages-2Mi": "2Mi"}, id="huge"),
        pytest.param(res(pods=1024), {"pods": "1024"}, id="count-plain"),
        pytest.param(res(gpu=2), {"nvidia.com/gpu": "2"}, id="gpu"),
        pytest.param(Resources.ZERO, {}, id="zero"),
    ],
)
def test_to_k8s(vector: Resources, expected: dict[str, str]) -> None:
    assert vector.to_k8s() == expected


def test_format_short() -> None:
    r = res(gpu=1, memory=4 * 2**30, cpu=2000)
    assert r.format_short() == "cpu=2, memory=4Gi, nvidia.com/gpu=1"
    assert Resources.ZERO.format_short() == "none"


# Resources: arithmetic


def test_add_and_sub() -> None:
    assert res(cpu=1, memory=2) + res(cpu=2, gpu=1) == res(cpu=3, memory=2, gpu=1)
    assert res(cpu=1) - res(cpu=3, memory=2) == res(cpu=-2, memory=-2)
    assert res(cpu=1) - res(cpu=1) == Resources.ZERO
    assert res(cpu=1) + res(cpu=-1) == Resources.ZERO


def test_operands_are_not_mutated() -> None:
    a, b = res(cpu=1), res(cpu=2)
    _ = a + b, a - b, a.scale(3), a.max(b), a.min(b), (a - b).clamp_non_negative()
    assert a == res(cpu=1)
    assert b == res(cpu=2)


def test_scale() -> None:
    assert res(cpu=2, memory=3).scale(3) == res(cpu=6, memory=9)
    assert res(cpu=2).scale(0) == Resources.ZERO
    assert res(cpu=2).scale(-1) == res(cpu=-2)


def test_max_min() -> None:
    a, b = res(cpu=1, memory=5), res(cpu=3, gpu=1)
    assert a.max(b) == res(cpu=3, memory=5, gpu=1)
    assert a.min(b) == res(cpu=1)
    assert res(cpu=-1).min(Resources.ZERO) == res(cpu=-1)


def test_negatives() -> None:
    r = res(cpu=-1, memory=2)
    assert r.any_negative()
    assert not res(memory=2).any_negative()
    assert r.clamp_non_negative() == res(memory=2)


# Resources: fitting


@pytest.mark.parametrize(
    ("request_", "capacity", "fits", "fits_quota"),
    [
        pytest.param(res(cpu=1), res(cpu=1), True, True, id="exact"),
        pytest.param(res(cpu=2), res(cpu=1), False, False, id="too-much"),
        pytest.param(res(gpu=1), res(cpu=8), False, True, id="missing-key"),
        pytest.param(res(cpu=1, gpu=1), res(cpu=8, gpu=0), False, True, id="explicit-zero"),
        pytest.param(res(cpu=-5), Resources.ZERO, True, True, id="negative-always-fits"),
        pytest.param(Resources.ZERO, Resources.ZERO, True, True, id="nothing"),
        pytest.param(res(cpu=1, memory=9), res(cpu=4, memory=8), False, False, id="one-key-over"),
    ],
)
def test_fits_in_node_vs_quota(
    request_: Resources, capacity: Resources, fits: bool, fits_quota: bool
) -> None:
    assert request_.fits_in(capacity) is fits
    assert request_.fits_in_quota(capacity) is fits_quota


def test_shortfall() -> None:
    assert res(cpu=5, memory=1, gpu=1).shortfall(res(cpu=3, memory=4)) == res(cpu=2, gpu=1)
    assert res(cpu=1).shortfall(res(cpu=3)) == Resources.ZERO


@pytest.mark.parametrize(
    ("used", "capacity", "expected"),
    [
        pytest.param(Resources.ZERO, res(cpu=1), 0.0, id="empty"),
        pytest.param(res(cpu=500, memory=1), res(cpu=1000, memory=4), 0.5, id="max-of-keys"),
        pytest.param(res(gpu=1), res(cpu=1), math.inf, id="missing-key"),
    ],
)
def test_ratio_max(used: Resources, capacity: Resources, expected: float) -> None:
    assert used.ratio_max(capacity) == expected


# effective_pod_request


@pytest.mark.parametrize(
    ("containers", "init_containers", "overhead", "expected"),
    [
        pytest.param([], [], Resources.ZERO, Resources.ZERO, id="empty"),
        pytest.param(
            [res(cpu=100, memory=10), res(cpu=200)], [], Resources.ZERO,
            res(cpu=300, memory=10), id="sum-of-containers",
        ),
        pytest.param(
            [res(cpu=100, memory=10)], [(res(cpu=1000), False)], Resources.ZERO,
            res(cpu=1000, memory=10), id="big-init-wins-per-key",
        ),
        pytest.param(
            [res(cpu=500)], [(res(cpu=100), False), (res(cpu=200), False)], Resources.ZERO,
            res(cpu=500), id="small-inits-do-not-add",
        ),
        pytest.param(
            [res(cpu=100)], [(res(cpu=50), True)], Resources.ZERO,
            res(cpu=150), id="sidecar-counted-in-sum",
        ),
        pytest.param(
            [res(cpu=100)], [(res(cpu=50), True), (res(cpu=400), False)], Resources.ZERO,
            res(cpu=450), id="regular-init-after-sidecar-adds-sidecar",
        ),
        pytest.param(
            [res(cpu=100)], [(res(cpu=400), False), (res(cpu=50), True)], Resources.ZERO,
            res(cpu=400), id="regular-init-before-sidecar-runs-alone",
        ),
        pytest.param(
            [res(cpu=10)], [(res(cpu=300), True), (res(cpu=20), True)], Resources.ZERO,
            res(cpu=330), id="sidecars-accumulate",
        ),
        pytest.param(
            [res(cpu=100)], [], res(cpu=250, memory=64), res(cpu=350, memory=64), id="overhead",
        ),
        pytest.param(
            [res(cpu=100)], [(res(cpu=1000), False)], res(cpu=5),
            res(cpu=1005), id="overhead-added-after-max",
        ),
    ],
)
def test_effective_pod_request(
    containers: list[Resources],
    init_containers: list[tuple[Resources, bool]],
    overhead: Resources,
    expected: Resources,
) -> None:
    assert resources.effective_pod_request(containers, init_containers, overhead) == expected


# Properties

NAMES = ["cpu", "memory", "ephemeral-storage", "pods", "nvidia.com/gpu", "hugepages-2Mi"]

non_negative = st.dictionaries(
    st.sampled_from(NAMES), st.integers(min_value=0, max_value=2**70)
).map(Resources)
signed = st.dictionaries(
    st.sampled_from(NAMES), st.integers(min_value=-(2**40), max_value=2**40)
).map(Resources)


@given(non_negative)
def test_k8s_round_trip(r: Resources) -> None:
    assert Resources.from_k8s(r.to_k8s()) == r


@given(st.sampled_from(NAMES), st.integers(min_value=0, max_value=2**70))
def test_format_amount_round_trip(name: str, amount: int) -> None:
    assert resources.parse_resource(name, resources.format_amount(name, amount)) == amount


@given(signed, signed)
def test_add_then_sub_is_identity(a: Resources, b: Resources) -> None:
    assert a + b - b == a
    assert a + b == b + a
    assert hash(a + b - b) == hash(a)


@given(signed, signed)
def test_shortfall_is_zero_iff_fits(a: Resources, b: Resources) -> None:
    assert a.shortfall(b).is_zero() is a.fits_in(b)
    assert a.max(b) == b.max(a)
    assert a.min(b) + a.max(b) == a + b


@given(signed)
def test_no_zero_entries_are_kept(r: Resources) -> None:
    assert all(amount != 0 for _, amount in (r - r.clamp_non_negative()).items())
    assert not (r - r)

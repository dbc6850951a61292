"""units.py, the one parser per quantity: values with units to SI, a bare number refused naming the units to
give, and a value outside the field's range refused naming the field and the range."""

import math

import pytest

from tcpprofile import units
from tcpprofile.errors import ValidationError


@pytest.mark.parametrize("text, expected", [("20m", 1200.0), ("20min", 1200.0), ("1.5h", 5400.0),
                                            ("91.6ms", 0.0916), ("8s", 8.0), ("250us", 250e-6)])
def test_durations(text, expected):
    assert units.seconds("budget", text) == pytest.approx(expected)


@pytest.mark.parametrize("parse, text, expected", [
    (units.rate_bps, "10Gbit", 10e9), (units.rate_bps, "100Mbps", 100e6), (units.rate_bps, "2.5G", 2.5e9),
    (units.size_bytes, "50MB", 50_000_000), (units.size_bytes, "1GiB", 2**30), (units.size_bytes, "122KB", 122_000),
])
def test_rates_and_sizes(parse, text, expected):
    assert parse("x", text) == expected


@pytest.mark.parametrize("text", ["20 minutes", "5d", "1e400s", "nanms", "", "ms"])
def test_bad_durations_name_the_field(text):
    with pytest.raises(ValidationError, match="budget"):
        units.seconds("budget", text)


@pytest.mark.parametrize("parse, hint", [(units.seconds, ("45ms", "45s")), (units.size_bytes, ("45MB", "45MiB")),
                                         (units.rate_bps, ("45Mbit", "45Gbit"))])
def test_a_bare_number_is_refused_naming_the_units(parse, hint):
    # read in the base unit, "45" would be 45 s, 45 bytes, 45 bit/s: `import --rtt 45` would store τ = 45,000 ms
    with pytest.raises(ValidationError) as err:
        parse("--x", "45")
    assert str(err.value) == f"--x: 45 has no unit; give it as {hint[0]} or {hint[1]}"
    with pytest.raises(ValidationError) as err:          # a TOML number: `rtt = 45` in a spec
        parse("link.rtt[0]", 45)
    assert str(err.value) == f'link.rtt[0]: 45 has no unit; give it as "{hint[0]}" or "{hint[1]}"'


@pytest.mark.parametrize("value", [True, None, [1], math.inf, math.nan, 10**400])
def test_values_that_are_no_quantity_name_the_field(value):
    with pytest.raises(ValidationError, match=r"^f: expected a duration with a unit"):
        units.seconds("f", value)


@pytest.mark.parametrize("text", ["0ms", "-5ms", "10.5s"])
def test_rtt_range_names_the_field_and_the_range(text):
    with pytest.raises(ValidationError) as err:
        units.seconds("--rtt", text, units.RTT_S)
    assert str(err.value) == f"--rtt: {text!r} is out of range: must be above 0s and at most 10s"


def test_range_bounds_hold_and_print_in_the_quantitys_units():
    assert units.seconds("--rtt", "10s", units.RTT_S) == 10.0                    # the closed end is allowed
    assert units.seconds("r", "0.4ms", units.Range(0.4e-3, 0.4)) == pytest.approx(0.4e-3)   # 0.4 × 1e-3 ≠ 0.4e-3
    cases = [(units.size_bytes, "600MiB", units.Range(1, 512 * 2**20), "from 1B to 512MiB"),
             (units.size_bytes, "20TB", units.Range(1, 10**13), "from 1B to 10TB"),
             (units.rate_bps, "0Gbit", units.POSITIVE, "above 0bit"),
             (units.rate_bps, "11Gbit", units.Range(0, 10e9, lo_open=True), "above 0bit and at most 10Gbit"),
             (units.seconds, "0.1ms", units.Range(0.4e-3, 0.4), "from 400us to 400ms"),
             (units.seconds, "-1s", units.NON_NEGATIVE, "0s or more")]
    for parse, text, allowed, words in cases:
        with pytest.raises(ValidationError) as err:
            parse("f", text, allowed)
        assert str(err.value) == f"f: {text!r} is out of range: must be {words}"

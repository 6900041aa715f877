"""Units: every accepted spelling gives the right SI value; bad ones give a clear error."""

import math

import pytest

from clustersim.units import (
    UnitError,
    format_bandwidth,
    format_size,
    format_time,
    parse_bandwidth,
    parse_flops,
    parse_size,
    parse_time,
)


@pytest.mark.parametrize("text, value", [
    ("64 MiB", 64 * 2**20), ("4 B", 4), ("4B", 4), ("1.5 GB", 1.5e9), ("8 kb", 1000),
    ("2 KiB", 2048), (1024, 1024), ("1e3 B", 1000), ("100", 100), ("1 Gbit", 1.25e8),
])
def test_sizes(text, value):
    assert parse_size(text) == pytest.approx(value)


@pytest.mark.parametrize("text, value", [
    ("1 us", 1e-6), ("1us", 1e-6), ("1 µs", 1e-6), ("2.5 ms", 2.5e-3), ("3 ns", 3e-9),
    ("1 s", 1.0), (0.5, 0.5), ("1 min", 60.0), ("0 s", 0.0),
])
def test_times(text, value):
    assert parse_time(text) == pytest.approx(value)


@pytest.mark.parametrize("text, value", [
    ("100 Gb/s", 12.5e9), ("12.5 GB/s", 12.5e9), ("10 Gbps", 1.25e9), ("1 GiB/s", 2**30),
    (5e9, 5e9), ("25 Gb/s", 3.125e9),
])
def test_bandwidths(text, value):
    assert parse_bandwidth(text) == pytest.approx(value)


@pytest.mark.parametrize("text, value", [
    ("6.1 TFLOP/s", 6.1e12), ("2.8 TFLOPS", 2.8e12), ("450 GFLOPs", 450e9), (1e9, 1e9),
])
def test_flops(text, value):
    assert parse_flops(text) == pytest.approx(value)


@pytest.mark.parametrize("fn, text", [
    (parse_bandwidth, "0 Gb/s"), (parse_bandwidth, "-1 GB/s"), (parse_bandwidth, "10 GB"),
    (parse_size, "12 parsecs"), (parse_time, "1 fortnight"), (parse_time, "-1 s"),
    (parse_size, True), (parse_size, [1]), (parse_bandwidth, "fast"), (parse_size, math.inf),
    (parse_flops, "1 TB/s"),
])
def test_bad_quantities_raise_unit_error(fn, text):
    with pytest.raises(UnitError):
        fn(text)


def test_zero_size_allowed_only_when_asked():
    assert parse_size("0 B") == 0
    with pytest.raises(UnitError):
        parse_size("0 B", allow_zero=False)


def test_formatting_round_trips_magnitude():
    assert format_size(64 * 2**20) == "64 MiB"
    assert format_time(2e-6) == "2 us"
    assert format_bandwidth(12.5e9) == "12.5 GB/s"


def test_format_duration_reads_at_a_glance_and_bands_share_the_median_unit() -> None:
    from clustersim.units import format_duration

    assert format_duration(22.8 * 3600) == "22.8 h"
    assert format_duration(150 * 60) == "2.50 h"  # 3 figures, as its band's ends have
    assert format_duration(42.0) == "42.0 s"
    assert format_duration(15 * 86400) == "15.0 d"  # was "15 d" beside "[14.4 d, 16.5 d]"
    assert format_duration(5010 * 86400) == "5,010 d"  # was "5.01e+03 d"
    assert format_duration(4646 * 86400, like=5010 * 86400) == "4,646 d"
    assert format_duration(0.0012) == "0.0012 s"
    # rounded before the unit and the decimals are chosen (had read "10.00 s", "60.0 s",
    # "60.0 min", and "1 s" for 0.9996 s beside "1.00 s" for 1 s)
    assert format_duration(9.996) == "10.0 s"
    assert format_duration(59.97) == "1.00 min"
    assert format_duration(3599.9) == "1.00 h"
    assert format_duration(0.9996) == format_duration(1.0) == "1.00 s"
    assert format_duration(None) == format_duration(float("inf")) == "never"
    # an interval's end beside its median: the median's unit and decimals (was "22 h")
    assert format_duration(22 * 3600, like=22.8 * 3600) == "22.0 h"
    assert format_duration(2.9 * 86400, like=2.88 * 86400) == "2.90 d"
    # no mixed units in one band (was "1.02 h" beside "58.2 min")
    assert format_duration(1.02 * 3600, like=58.2 * 60) == "61.2 min"
    assert format_duration(float("nan"), like=60.0) == "never"


def test_formatted_times_and_sizes_never_print_an_exponent():
    """0.9996 s printed as '1e+03 ms' in a saturation line (QA 19 L1): the unit is picked
    from the rounded figure; a figure of 1,000 or more in the largest unit is grouped."""
    from clustersim.units import format_size, format_time

    assert format_time(0.9996) == "1 s" and format_time(0.0009996) == "1 ms"
    assert format_time(9.9996e-7) == "1 us" and format_time(0.0123) == "12.3 ms"
    assert format_time(1500.0) == "1,500 s" and format_time(999.6) == "1,000 s"
    assert format_size(1024) == "1 KiB" and format_size(1023) == "1,023 B"
    assert format_size(2**50) == "1,024 TiB" and format_size(26.7 * 2**20) == "26.7 MiB"

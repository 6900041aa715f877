"""Physical quantities written the way people write them: "100 Gb/s", "1 us", "64 MiB".

Everything inside the simulator is plain SI floats: bytes, seconds, bytes/second and
FLOP/second.  Conversion happens once, at the edge (scenario loading), so that no model
code ever has to wonder whether a number is in bits or bytes.

Accepted forms (case of the prefix matters: ``m`` is milli, ``M`` is mega):

* sizes:      ``64 MiB``, ``1.5 GB``, ``4 B``, ``4KiB``, or a plain number of bytes.
  Decimal prefixes (k, M, G, T) are powers of 1000, binary ones (Ki, Mi, Gi, Ti) of 1024.
  A lower-case ``b`` means bits: ``8 kb`` is 1000 bytes.
* times:      ``1 us`` (also ``µs``), ``2.5 ms``, ``3 ns``, ``1 s``, ``1 min``, or seconds.
* bandwidths: ``100 Gb/s`` or ``100 Gbit/s`` (bits), ``12.5 GB/s`` (bytes), ``10 Gbps``, ``1 GiB/s``,
  or a plain number of bytes per second.
* rates:      ``6.1 TFLOP/s``, ``2.8 TFLOPS``, ``450 GFLOPs``, or FLOP per second.

Bare numbers are SI base units (bytes, seconds, bytes/s, FLOP/s) so that the program's own
values (sampled or scaled scenarios, calibration profiles, platforms built in Python) need no
strings at all.  A *rate* a person writes in a file must carry its unit, though
(:func:`missing_unit`, applied where files are read): ``bandwidth: 1.4`` had run as 1.4 B/s.
"""

from __future__ import annotations

import math
import re

from clustersim.errors import yaml_text

__all__ = [
    "UnitError",
    "parse_size",
    "parse_time",
    "parse_bandwidth",
    "parse_flops",
    "parse_quantity",
    "missing_unit",
    "UNIT_EXAMPLES",
    "format_size",
    "format_time",
    "format_bandwidth",
    "format_duration",
    "DURATION_UNITS",
]


class UnitError(ValueError):
    """A quantity string could not be read; the message says what was expected."""


_DEC = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_TIME = {
    "s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9,
    "ps": 1e-12, "min": 60.0, "h": 3600.0,
}

_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_RE = re.compile(r"^\s*" + _NUM + r"\s*([^\s\d].*?)?\s*$")


def _split(text: str, kind: str) -> tuple[float, str]:
    m = _RE.match(text)
    if not m:
        raise UnitError(f"cannot read {text!r} as a {kind}")
    return float(m.group(1)), (m.group(2) or "")


def _prefix(unit_prefix: str, text: str, kind: str) -> float:
    if unit_prefix in _BIN:
        return _BIN[unit_prefix]
    if unit_prefix in _DEC:
        return _DEC[unit_prefix]
    raise UnitError(f"unknown prefix {unit_prefix!r} in {text!r} ({kind})")


#: Sane ranges (least non-zero, most) per kind.  Why: a typo such as ``latency: 1e308`` or
#: ``bandwidth: 1e-300`` would pass as "positive and finite" and then overflow the simulated
#: clock to inf/NaN.  The bounds are far outside any real hardware: an exbibyte, four months,
#: 1 B/s to 10 PB/s, 1 FLOP/s to 10 EFLOP/s per device.
_RANGES = {"size": (0.0, 2.0**60), "time": (0.0, 1e7), "bandwidth": (1.0, 1e16),
           "compute rate": (1.0, 1e19)}


def _check(value: float, text: object, kind: str, allow_zero: bool) -> float:
    if not math.isfinite(value):
        raise UnitError(f"{kind} {str(text)[:40]!r} is not finite")
    if value < 0 or (value == 0 and not allow_zero):
        need = "non-negative" if allow_zero else "positive"
        raise UnitError(f"{kind} {str(text)[:40]!r} must be {need}")
    low, high = _RANGES.get(kind, (0.0, math.inf))
    if value > high or 0 < value < low:
        shown = repr(text[:40]) if isinstance(text, str) else f"{value:g}"
        raise UnitError(f"{kind} {shown} is outside the sane range "
                        f"{low:g} to {high:g} (SI units: bytes, seconds, bytes/s, FLOP/s)")
    return value


def _number(value: object, kind: str, allow_zero: bool) -> float | None:
    if isinstance(value, bool):
        raise UnitError(f"{kind} must be a number or a string with a unit, not "
                        f"{yaml_text(value)}")
    if isinstance(value, (int, float)):
        try:
            return _check(float(value), value, kind, allow_zero)
        except OverflowError:  # an integer beyond any float
            raise UnitError(f"{kind} {str(value)[:40]} is not finite") from None
    if not isinstance(value, str):
        raise UnitError(f"{kind} must be a number or a string with a unit, not "
                        f"{yaml_text(value)}")
    return None


def parse_size(value: object, *, allow_zero: bool = True) -> float:
    """Bytes from ``"64 MiB"``, ``"8 kb"`` (bits) or a plain number of bytes."""
    n = _number(value, "size", allow_zero)
    if n is not None:
        return n
    text = str(value)
    num, unit = _split(text, "size")
    if unit == "":
        return _check(num, text, "size", allow_zero)
    m = re.fullmatch(r"([kKMGTP]i?)?(B|b|bytes?|bits?)", unit)
    if not m:
        raise UnitError(f"cannot read {text!r} as a size (examples: '4 B', '64 MiB', '1.5 GB')")
    scale = _prefix(m.group(1) or "", text, "size")
    if m.group(2) in ("b", "bit", "bits"):
        scale /= 8.0
    return _check(num * scale, text, "size", allow_zero)


def parse_time(value: object, *, allow_zero: bool = True) -> float:
    """Seconds from ``"1 us"``, ``"2.5 ms"`` or a plain number of seconds."""
    n = _number(value, "time", allow_zero)
    if n is not None:
        return n
    text = str(value)
    num, unit = _split(text, "time")
    if unit == "":
        return _check(num, text, "time", allow_zero)
    if unit not in _TIME:
        raise UnitError(f"cannot read {text!r} as a time (units: s, ms, us, ns, min, h)")
    return _check(num * _TIME[unit], text, "time", allow_zero)


def parse_bandwidth(value: object, *, allow_zero: bool = False) -> float:
    """Bytes per second from ``"100 Gb/s"``, ``"12.5 GB/s"``, ``"10 Gbps"`` or a number."""
    n = _number(value, "bandwidth", allow_zero)
    if n is not None:
        return n
    text = str(value)
    num, unit = _split(text, "bandwidth")
    if unit == "":
        return _check(num, text, "bandwidth", allow_zero)
    # "Gbit/s" (iperf, datasheets) and "GByte/s" spell the b and the B out (QA 18b)
    m = re.fullmatch(r"([kKMGTP]i?)?(B|b|bits?|[Bb]ytes?)(?:/s|ps)", unit)
    if not m:
        raise UnitError(
            f"cannot read {text!r} as a bandwidth (examples: '100 Gb/s', '12.5 GB/s', '10 Gbps')"
        )
    scale = _prefix(m.group(1) or "", text, "bandwidth")
    if m.group(2) == "b" or m.group(2).startswith("bit"):
        scale /= 8.0
    return _check(num * scale, text, "bandwidth", allow_zero)


def parse_flops(value: object, *, allow_zero: bool = False) -> float:
    """FLOP per second from ``"6.1 TFLOP/s"``, ``"2.8 TFLOPS"`` or a number."""
    n = _number(value, "compute rate", allow_zero)
    if n is not None:
        return n
    text = str(value)
    num, unit = _split(text, "compute rate")
    if unit == "":
        return _check(num, text, "compute rate", allow_zero)
    m = re.fullmatch(r"([kKMGTP])?(?:FLOP/s|FLOPS|FLOPs|flop/s|flops)", unit)
    if not m:
        raise UnitError(f"cannot read {text!r} as a compute rate (example: '6.1 TFLOP/s')")
    scale = _prefix(m.group(1) or "", text, "compute rate")
    return _check(num * scale, text, "compute rate", allow_zero)


def parse_quantity(kind: str, value: object, *, allow_zero: bool | None = None) -> float:
    """Dispatch by kind name: ``size``, ``time``, ``bandwidth`` or ``flops``."""
    fn = {"size": parse_size, "time": parse_time, "bandwidth": parse_bandwidth,
          "flops": parse_flops}[kind]
    if allow_zero is None:
        return fn(value)
    return fn(value, allow_zero=allow_zero)


#: how a rate or a time is written: quoted when one is given without its unit
UNIT_EXAMPLES = {"bandwidth": "'100 Gb/s', '12.5 GB/s', '10 Gbps'",
                 "compute rate": "'6.1 TFLOP/s', '2.8 TFLOPS', '450 GFLOPs'",
                 "time": "'1 us', '2.5 ms', '3 ns'"}


def missing_unit(value: object, kind: str) -> str | None:
    """Why ``value``, a ``kind`` (``"bandwidth"``, ``"compute rate"`` or ``"time"``) a
    person wrote, is refused for want of a unit; None when it has one or is no number at all
    (its parser says what is wrong with that).  A time of 0 needs none.

    Why: the parsers read a bare number as bytes/s, FLOP/s or seconds so that the program
    can pass floats, but in a file ``bandwidth: 1.4`` is almost never 1.4 B/s (QA 10 L7: it
    predicted 6,027,000,045 ms per iteration, exit 0), and whether 100 meant bits or bytes,
    G or M, cannot be guessed; ``latency: 1`` is almost never a second per hop (QA 16c,
    QA 18b: 336 s iterations and 904 days to target, exit 0) - so the file must say it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if kind == "time" and value == 0:
            return None
        shown = f"{value:g}" if isinstance(value, float) or abs(value) >= 10**12 else str(value)
    elif isinstance(value, str) and (m := _RE.match(value)) is not None and not m.group(2):
        if kind == "time" and float(m.group(1)) == 0:
            return None
        shown = repr(value.strip()[:40])
    else:
        return None
    seconds = " (it would be read as seconds)" if kind == "time" else ""
    return (f"a {kind} needs its unit, like {UNIT_EXAMPLES[kind]}; not the bare number "
            f"{shown}{seconds}")


def _fmt(value: float, units: list[tuple[float, str]], digits: int = 3) -> str:
    """``value`` in the largest unit it reaches, to ``digits`` significant figures.

    The unit is picked from the value *rounded* to those figures (0.9996 s is "1 s", not
    "1e+03 ms" - QA 19 L1, seen in a saturation line), and a figure of ``10**digits`` or more
    in the largest unit is written whole with grouped thousands ("1,500 s", not
    "1.5e+03 s"): neither ever prints an exponent."""
    rounded = float(f"{value:.{digits}g}")
    scale, name = units[-1]
    for s, n in units:
        if abs(value) >= s or abs(rounded) >= s:
            scale, name = s, n
            break
    x = value / scale
    if abs(float(f"{x:.{digits}g}")) >= 10**digits:
        return f"{x:,.0f} {name}"
    return f"{x:.{digits}g} {name}"


def format_size(nbytes: float) -> str:
    """Human-readable bytes with binary prefixes (what MPI benchmarks print)."""
    return _fmt(nbytes, [(2.0**40, "TiB"), (2.0**30, "GiB"), (2.0**20, "MiB"),
                         (2.0**10, "KiB"), (1.0, "B")])


def format_time(seconds: float) -> str:
    """Seconds, readable: s down to ns, 3 significant figures (``"1.5 ms"``, ``"230 us"``)."""
    return _fmt(seconds, [(1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")])


#: the units a duration is read in at a glance (a time to target: seconds to days)
DURATION_UNITS = (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0))


def format_duration(seconds: float | None, like: float | None = None) -> str:
    """A duration people read at a glance (``"22.8 h"``, ``"2.88 d"``; None or infinite:
    ``"never"``), to 3 significant figures.

    ``like``: the figure this one is shown beside (an interval's end beside its median):
    written in ``like``'s unit with ``like``'s decimals, so that a band reads
    ``22.8 h [22.0 h, 23.0 h]`` rather than ``22.8 h [22 h, 23 h]``, and never mixes units
    (``58.2 min [55.1 min, 61.0 min]``, not ``[55.1 min, 1.02 h]``)."""
    if seconds is None or not math.isfinite(seconds):
        return "never"
    ref = seconds if like is None or not math.isfinite(like) else like
    ref = float(f"{ref:.3g}")  # rounded first: 59.97 s is 1.00 min, 9.996 s is 10.0 s
    name, size = next(((n, z) for n, z in DURATION_UNITS if abs(ref) >= z), DURATION_UNITS[-1])
    if abs(ref) < 1.0:  # below a second: significant figures (0.0012 s, not 0.00120 s)
        return f"{seconds / size:.3g} {name}"
    # fixed decimals for 3 significant figures of ``ref``: "15.0 d [14.4 d, 16.5 d]", not
    # "15 d [...]"; thousands grouped, never an exponent ("5,010 d", not "5.01e+03 d")
    lead = math.floor(math.log10(float(f"{abs(ref) / size:.3g}")))
    return f"{seconds / size:,.{max(0, 2 - lead)}f} {name}"


def format_bandwidth(bytes_per_s: float) -> str:
    """Bytes per second with decimal prefixes, as links and nccl-tests' GB/s are quoted
    (``"12.5 GB/s"``); sizes, by contrast, are binary (:func:`format_size`)."""
    return _fmt(bytes_per_s, [(1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"),
                              (1.0, "B/s")])

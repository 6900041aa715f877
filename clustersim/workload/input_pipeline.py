"""The input pipeline of a training step (data loading and preprocessing): its rate, from
storage I/O and CPU decoding, and which of the two limits it.

Apart from :mod:`clustersim.workload.compute` (which caps a step's sample rate by it);
``compute`` re-exports :class:`InputPipeline`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clustersim.errors import InputError, unknown_name
from clustersim.units import UnitError, parse_bandwidth, parse_size

__all__ = ["InputPipeline"]


@dataclass(frozen=True)
class InputPipeline:
    """Where the samples come from: storage/network bandwidth and, optionally, a decode rate.

    ``bandwidth`` (bytes/s) is what this worker gets (divide a shared file system's bandwidth by
    the workers reading it); ``bytes_per_sample`` is the stored size (an ImageNet JPEG is about
    110 kB); ``decode_rate`` (samples/s) caps CPU-side decoding and augmentation.  The pipeline
    is assumed to prefetch, so it overlaps compute and only starves it when slower.
    """

    bandwidth: float
    bytes_per_sample: float
    decode_rate: float | None = None

    def __post_init__(self) -> None:
        if not self.bandwidth > 0 or not self.bytes_per_sample > 0:
            raise InputError("input pipeline needs positive bandwidth and bytes_per_sample")
        if self.decode_rate is not None and not self.decode_rate > 0:
            raise InputError("input pipeline decode_rate must be positive", path=("decode_rate",))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], path: Sequence[str | int] = ()) -> InputPipeline:
        """From ``{bandwidth: "500 MB/s", bytes_per_sample: "110 kB", decode_rate: 2000}``."""
        if not isinstance(raw, Mapping):
            raise InputError("input pipeline must be a mapping", path=tuple(path))
        allowed = ("bandwidth", "bytes_per_sample", "decode_rate")
        for key in raw:
            if key not in allowed:
                raise unknown_name("input pipeline field", str(key), allowed, path=(*path, key))
        for key in allowed[:2]:
            if key not in raw:
                raise InputError(f"input pipeline needs {key!r}", path=(*path, key))
        try:
            bw = parse_bandwidth(raw["bandwidth"])
        except UnitError as exc:
            raise InputError(str(exc), path=(*path, "bandwidth")) from None
        try:
            size = parse_size(raw["bytes_per_sample"], allow_zero=False)
        except UnitError as exc:
            raise InputError(str(exc), path=(*path, "bytes_per_sample")) from None
        rate = raw.get("decode_rate")
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float))
                                 or not rate > 0):
            raise InputError(f"must be a positive number of samples/s, not {rate!r}",
                             path=(*path, "decode_rate"))
        return cls(bw, size, None if rate is None else float(rate))

    @property
    def io_rate(self) -> float:
        return self.bandwidth / self.bytes_per_sample

    @property
    def rate(self) -> float:
        """Samples per second the pipeline delivers."""
        return self.io_rate if self.decode_rate is None else min(self.io_rate, self.decode_rate)

    @property
    def limit(self) -> str:
        """``io`` or ``decode``: which stage sets :attr:`rate`."""
        return "decode" if self.decode_rate is not None and self.decode_rate < self.io_rate else "io"

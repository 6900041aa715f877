"""Per-scenario overrides of a device's compute parameters (efficiency per kernel class,
memory efficiency, kernel overhead): what a calibration profile or a scenario's
``workload.compute`` sets on top of the catalog's :class:`~clustersim.catalog.DeviceSpec`.

Apart from :mod:`clustersim.workload.compute` (the roofline that uses them) because parsing and
validating user input is a job of its own; ``compute`` re-exports :class:`ComputeOverrides`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clustersim.catalog import DeviceSpec
from clustersim.errors import InputError, unknown_name
from clustersim.units import UnitError, parse_time
from clustersim.workload.layer import KERNEL_CLASSES

__all__ = ["ComputeOverrides", "FC_WGRAD", "EFFICIENCY_CLASSES", "as_overrides"]

#: The weight-gradient GEMM of fully connected layers (batch as the inner dimension).
FC_WGRAD = "fc_wgrad"

#: Keys of :attr:`ComputeOverrides.efficiency`: the layer kernel classes plus ``fc_wgrad``,
#: which is not a layer's class but one kernel of an fc layer's backward pass.
EFFICIENCY_CLASSES: tuple[str, ...] = (*KERNEL_CLASSES, FC_WGRAD)


def _fraction(value: Any, path: Sequence[str | int]) -> float:
    # from 1e-6: an efficiency of 1e-300 would push layer times past float range
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1e-6 <= value <= 1:
        raise InputError(f"must be a number in [1e-6, 1], not {value!r}", path=tuple(path))
    return float(value)


@dataclass(frozen=True)
class ComputeOverrides:
    """Calibrated replacements for the device defaults.

    ``efficiency`` maps kernel classes (``conv``, ``fc``, ``other``) to fractions of peak; a
    missing class uses ``DeviceSpec.efficiency``.  It may also carry ``fc_wgrad``, the rate of
    fc weight-gradient GEMMs: only then is an fc layer's backward pass split into two kernels
    (:func:`layer_time`).  A single number for ``efficiency`` sets the three kernel classes,
    not ``fc_wgrad``.  ``None`` fields use the device's value.
    """

    efficiency: Mapping[str, float] = field(default_factory=dict)
    mem_efficiency: float | None = None
    overhead: float | None = None

    def __post_init__(self) -> None:
        for cls, value in self.efficiency.items():
            if cls not in EFFICIENCY_CLASSES:
                raise unknown_name("efficiency class", str(cls), EFFICIENCY_CLASSES,
                                   path=("efficiency", cls))
            _fraction(value, ("efficiency", cls))
        if self.mem_efficiency is not None:
            _fraction(self.mem_efficiency, ("mem_efficiency",))
        if self.overhead is not None and not (math.isfinite(self.overhead) and self.overhead >= 0):
            raise InputError(f"must be a non-negative time, not {self.overhead!r}",
                             path=("overhead",))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None,
                  path: Sequence[str | int] = ()) -> ComputeOverrides:
        """From ``{efficiency: 0.6 | {conv: 0.6, fc: 0.4, other: 0.3, fc_wgrad: 0.5},
        mem_efficiency: 0.8, overhead: "8 us"}``; errors name the field path."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise InputError("compute overrides must be a mapping", path=tuple(path))
        allowed = ("efficiency", "mem_efficiency", "overhead")
        for key in raw:
            if key not in allowed:
                raise unknown_name("compute field", str(key), allowed, path=(*path, key))
        eff_raw = raw.get("efficiency", {})
        if isinstance(eff_raw, Mapping):
            eff = dict(eff_raw)
        else:
            eff = {c: _fraction(eff_raw, (*path, "efficiency")) for c in KERNEL_CLASSES}
        overhead = None
        if "overhead" in raw:
            try:
                overhead = parse_time(raw["overhead"])
            except UnitError as exc:
                raise InputError(str(exc), path=(*path, "overhead")) from None
        try:
            return cls(efficiency=eff, mem_efficiency=raw.get("mem_efficiency"), overhead=overhead)
        except InputError as exc:
            raise exc.located(prefix=tuple(path)) from None

    def efficiency_for(self, device: DeviceSpec, kclass: str) -> float:
        return self.efficiency.get(kclass, device.efficiency)

    def mem_efficiency_for(self, device: DeviceSpec) -> float:
        return device.mem_efficiency if self.mem_efficiency is None else self.mem_efficiency

    def overhead_for(self, device: DeviceSpec) -> float:
        return device.overhead if self.overhead is None else self.overhead


def as_overrides(overrides: ComputeOverrides | Mapping[str, Any] | None) -> ComputeOverrides:
    """``overrides`` as a :class:`ComputeOverrides`: one as it is, a mapping parsed
    (:meth:`ComputeOverrides.from_dict`), None the empty one (every device default)."""
    if isinstance(overrides, ComputeOverrides):
        return overrides
    return ComputeOverrides.from_dict(overrides)

"""Topology builders: functions from a few parameters to a :class:`Platform`.

Every builder takes the device spec and link specs explicitly (the scenario layer resolves
names through the catalog) so that builders stay pure and testable.
"""

from __future__ import annotations

from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.platform.model import Platform, PlatformBuilder

__all__ = ["star"]


def star(hosts: int, device: DeviceSpec, link: LinkSpec, *, devices_per_host: int = 1,
         name: str = "star") -> Platform:
    """``hosts`` machines on one non-blocking switch (a crossbar): the closed-form platform."""
    if hosts < 1:
        raise ValueError("star needs at least one host")
    b = PlatformBuilder(name)
    b.add_node("sw", "switch")
    for h in range(hosts):
        for g in range(devices_per_host):
            dev = b.add_device(f"h{h}.d{g}" if devices_per_host > 1 else f"h{h}", device, host=h)
            b.add_link(dev, "sw", link)
    return b.build()

"""Applying a calibration profile to a scenario (``--calibration``): the catalog entries,
network parameters and per-link-class protocol tables it overrides, and a report of what
moved (``format_changes``).

Apart from :mod:`.profile` (the file: writing, reading, validating) because applying is about
the scenario, not the file; ``predict``, ``whatif``, ``run --real``, calibration's own
validation and the uncertainty tools call :func:`apply_profile` / :func:`apply_profile_data`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from clustersim.calibration.params import format_value, lookup, scenario_values
from clustersim.calibration.profile import Change, Profile
from clustersim.calibration.profilecheck import load_checked
from clustersim.calibration.retune import DEVICE_FIELDS, retune_platform
from clustersim.network.params import ANY_CLASS, NetworkParams

__all__ = ["apply_profile", "apply_profile_data", "change_rows", "format_changes",
           "load_applicable", "profile_identity"]


@dataclass
class _Applied:
    scenario: Any
    changes: list[Change]
    notes: list[str]
    applied: bool  # a device or link class of the profile is in the platform (or a variant's)


def _device_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k in DEVICE_FIELDS}


def _apply_one(scn: Any, prof: Profile) -> _Applied:
    from clustersim.workload import ComputeOverrides

    plat = scn.platform
    dev_names = {plat.spec(d).name for d in range(plat.num_devices)}
    kinds = set(plat.link_kind)
    dev_over = {n: _device_fields(f) for n, f in prof.devices.items() if n in dev_names}
    link_over = {c: dict(f) for c, f in prof.links.items() if c in kinds}
    notes = [f"device {n!r} is not in this platform: not applied"
             for n in sorted(set(prof.devices) - dev_names)]
    notes += [f"link class {c!r} is not in this platform: not applied"
              for c in sorted(set(prof.links) - kinds)]
    new_plat = retune_platform(plat, dev_over, link_over) if (dev_over or link_over) else plat
    net = scn.network
    if dev_over or link_over:
        protocols = dict(net.protocols)
        for cls, segs in prof.protocols.items():
            if cls in kinds or cls == ANY_CLASS:
                protocols[cls] = segs
            else:
                notes.append(f"protocol table of link class {cls!r} is not used by this "
                             f"platform: not applied")
        net = NetworkParams(
            overhead=prof.network.get("overhead", net.overhead),
            efficiency=prof.network.get("efficiency", net.efficiency),
            step_overhead=prof.network.get("step_overhead", net.step_overhead),
            collective_efficiency=prof.network.get("collective_efficiency",
                                                   net.collective_efficiency),
            protocols=protocols, execution=net.execution)
    elif prof.network or prof.protocols:
        notes.append("no device or link class of the profile is in this platform: its "
                     "network parameters (step overhead, protocols) were not applied")
    wl = scn.workload
    if wl is not None and dev_over:
        if dev_names <= set(dev_over):
            tables = [prof.devices[n].get("efficiency_by_class") for n in sorted(dev_names)]
            same = all(t == tables[0] for t in tables) and tables[0]
            comp = ComputeOverrides(efficiency=dict(tables[0]) if same else {})
            if not same:
                notes.append("devices carry different per-class efficiencies: each uses its "
                             "own overall efficiency")
            wl = replace(wl, compute=comp)
            jitters = [prof.devices[n].get("jitter") for n in sorted(dev_names)]
            if all(j is not None for j in jitters):
                # the machine's measured noise replaces the scenario's guess (one value per
                # run: the noisiest device's, as a straggler sets a synchronous step)
                wl = replace(wl, jitter=min(max(jitters), 1.0))
        elif wl.compute is not None and (wl.compute.efficiency or wl.compute.overhead
                                         is not None or wl.compute.mem_efficiency is not None):
            notes.append("the platform also has uncalibrated devices: the scenario's "
                         "workload.compute overrides stay and apply to every device")
    catalog = scn.catalog
    known = {n: f for n, f in dev_over.items() if n in catalog.devices}
    if known or any(c in catalog.links for c in link_over):
        from dataclasses import replace as dc_replace

        from clustersim.catalog import Catalog

        devices = {n: (dc_replace(d, **known[n]) if n in known else d)
                   for n, d in catalog.devices.items()}
        links = {n: (dc_replace(lk, **link_over[n]) if n in link_over else lk)
                 for n, lk in catalog.links.items()}  # LinkSpec has bandwidth/latency/duplex
        catalog = Catalog(devices, links)
    variants = []
    applied = bool(dev_over or link_over)
    for label, v in scn.variants:
        sub = _apply_one(v, prof)
        variants.append((label, sub.scenario))
        applied = applied or sub.applied
    new = replace(scn, platform=new_plat, network=net, workload=wl, catalog=catalog,
                  variants=tuple(variants))
    before, after = scenario_values(scn), scenario_values(new)
    changes = [Change(k, before.get(k), v) for k, v in after.items()
               if before.get(k) is None or not math.isclose(before[k], v, rel_tol=1e-9,
                                                             abs_tol=0.0)]
    return _Applied(new, changes, notes, applied)


def apply_profile_data(scn: Any, prof: Profile) -> tuple[Any, list[Change], list[str]]:
    """(calibrated scenario, parameters that moved, notes) - nothing is printed."""
    res = _apply_one(scn, prof)
    return res.scenario, res.changes, res.notes


def change_rows(changes: Sequence[Change]) -> list[tuple[str, str, str, str]]:
    """Each change as (name, before, after, relative change) texts: the cells of
    :func:`format_changes` and of ``calibrate``'s table of what moved."""
    rows = []
    for c in changes:
        old = format_value(c.name, c.before) if c.before is not None else "(none)"
        new = format_value(c.name, c.after)
        rel = c.relative
        pct = f"{rel * 100:+.1f}%" if rel is not None else "new"
        if lookup(c.name).unit == "bool":
            pct = ""
        rows.append((c.name, old, new, pct))
    return rows


def format_changes(changes: Sequence[Change], notes: Sequence[str] = (),
                   title: str = "calibration profile") -> str:
    """What moved, one parameter per line: name, before -> after, relative change."""
    lines = [f"{title}: {len(changes)} parameter{'s' if len(changes) != 1 else ''} moved"]
    if changes:
        width = max(len(c.name) for c in changes)
        for name, old, new, pct in change_rows(changes):
            lines.append(f"  {name:<{width}}  {old:>13} -> {new:<13} {pct:>8}")
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines)


def apply_profile(scenario: Any, path: str | Path, *, stream: IO[str] | None = None,
                  quiet: bool = False) -> Any:
    """``scenario`` with the calibration profile at ``path`` applied.

    Prints which parameters moved and by how much to ``stream`` (default stderr, so that
    machine-readable output on stdout stays clean; nothing with ``quiet``, a command's
    ``-q``).  Bad profiles raise
    :class:`~clustersim.errors.InputError` naming the file, field and line - a rate no
    device or link has (a bare ``bandwidth: 1.4``, read as B/s) and a collective efficiency
    the fitter cannot produce included (:mod:`.profilecheck`).
    """
    prof = load_checked(path)
    res = _apply_one(scenario, prof)
    if not res.applied:
        _applies_to_nothing(scenario, prof, path)
    new, changes, notes = res.scenario, res.changes, res.notes
    if not quiet:
        out = stream if stream is not None else sys.stderr
        print(format_changes(changes, notes, title=f"calibration profile {path}"), file=out)
    return new


def _applies_to_nothing(scn: Any, prof: Profile, path: str | Path) -> None:
    """A profile none of whose devices or link classes is in the scenario's platform is an
    input error, not a note.  Why: everything it holds - network parameters and protocol
    tables included - is applied only beside a device or link it calibrated, so the run was
    the catalog's uncalibrated prediction under a ``--calibration`` flag, with exit 0 (a
    profile of an H200 node on ``knl_4253``).  Partly applying profiles keep their notes."""
    from clustersim.errors import InputError

    plat = scn.platform
    mine = sorted({plat.spec(d).name for d in range(plat.num_devices)})
    theirs = [f"device {n!r}" for n in sorted(prof.devices)]
    theirs += [f"link class {c!r}" for c in sorted(prof.links)]
    raise InputError(f"applies to nothing in platform {plat.name!r}: the profile calibrated "
                     f"{', '.join(theirs) or 'no device or link class'}; the platform has "
                     f"device(s) {', '.join(map(repr, mine))} and link class(es) "
                     f"{', '.join(map(repr, sorted(set(plat.link_kind))))} (calibrate on this "
                     f"platform: clustersim calibrate --real, docs/calibration.md)",
                     file=str(path))


def load_applicable(scn: Any, path: str | Path) -> Profile:
    """The profile at ``path``, refused (exit 2) as :func:`apply_profile` refuses it when it
    applies to nothing in ``scn``'s platform - for the commands that sample the profile
    rather than apply it once (``sensitivity``: it had ignored such a profile, exit 0)."""
    prof = load_checked(path)
    if not _apply_one(scn, prof).applied:
        _applies_to_nothing(scn, prof, path)
    return prof


def profile_identity(path: str | Path) -> dict[str, str]:
    """The profile a prediction used, for its JSON: the path given and the SHA-256 of the
    bytes.  Why: every number of a calibrated prediction hangs on the profile, and the JSON
    did not say which one (a file rewritten by the next ``calibrate`` has the same name)."""
    import hashlib

    return {"file": str(path), "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()}

"""Fuzz: every shipped scenario and topology, mutated thousands of ways, ends in a result or in
one clear error - never a traceback, a hang, a memory blow-up or a half-written output.

Why in-process: a subprocess per mutant costs ~0.5 s of interpreter start on this machine, so
5,000 of them would take most of an hour; ``clustersim.cli.main([...])`` runs the same code
(argument parsing, loading, validation, error printing) in milliseconds.  A small sample also
runs through the real console script, and ``predict --json --csv`` runs on a subset (it
simulates, seconds each).  Hypothesis draws the (file, mutation, seed) triples, derandomized so
that CI sees the same mutants every run; the counts are printed for the record.

What must hold for every mutant:

* exit 0 (accepted) or 2 (rejected); anything escaping ``main`` is a bug;
* a rejection is one ``error:`` line naming the file (the mutant, or the ``--set`` item) and,
  except for an empty file, its line;
* no run using more than :data:`LIMIT_S` of CPU (a profiling timer: a loaded machine - CI
  beside other jobs - must not turn a slow 100,000-GPU platform build into a "hang"), nor
  more than :data:`WALL_LIMIT_S` of wall time (a blocked run), no process above 1 GiB
  resident;
* after a failed ``predict`` no output file exists; after a good one both parse.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clustersim.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
TOPOLOGIES = sorted((ROOT / "topologies").glob("*.yaml"))
FILES = SCENARIOS + TOPOLOGIES
#: files drawn from: every file, the ones with a 4,352-device platform (200 ms a validation,
#: 10x the others) once, the rest three times - to keep the test within its time budget
HEAVY = ("knl_4253", "knl_easgd_compare", "cori_knl_cores")
WEIGHTED = [f for f in FILES for _ in range(1 if f.stem in HEAVY else 3)]
#: a scenario that puts a (mutated) topology file to work: one rank, one message
TOPO_SCENARIO = ("name: fuzz\nplatform: t\nbenchmark: {op: allreduce, ranks: [1], sizes: [4 B]}\n"
                 "run: {fidelity: analytic}\n")
#: scenarios cheap enough to predict (seconds) for the predict subset
PREDICTABLE = {"real_bsp_mlp", "real_async_ps"}

N_MUTANTS = int(os.environ.get("CLUSTERSIM_FUZZ_MUTANTS", "5200"))
N_PREDICT = 40
N_SUBPROCESS = 12
#: a mutant may legitimately build the 100,000-GPU platform (or 128,000 GPUs when a delete
#: drops bsp_100k's host count): ~6 s of CPU alone, several times that beside other jobs; a
#: real hang (a loop that never ends) is past any of these
LIMIT_S = 60
WALL_LIMIT_S = 300
GIB = 1 << 30

KINDS = ("delete", "wrong_type", "zero", "negative", "huge", "nan_inf", "tiny", "absurd_unit",
         "unknown_name", "syntax", "tab", "bom_crlf", "duplicate_key", "alias_bomb",
         "deep_nesting", "binary_junk", "empty", "path_trick", "set_override")

HUGE = (10**12, 2**62, 2**63, 2**64, 1e308, 1e30, 10**9 + 7, 99999999999)
NAN_INF = (".nan", ".inf", "-.inf", ".NaN", "nan GB", "inf us", "1e999 B")
ABSURD = ("5 parsecs", "1 Gb/fortnight", "3 kilofurlongs", "10 GB/s/s", "1 uss", "-0 B",
          "12 TFLOP/hour", "1e-400 s", "0x10 GB", "∞ B", "1,5 GB")
PATHS = ("/", ".", "..", "/etc/passwd", "/dev/zero", "../../../../etc/hosts.yaml", "~", "",
         "topologies/", "a" * 300, "/proc/self/status", "nul\x01name", "../scenarios/knl_4253",
         "t.yaml/..", "C:\\x.yaml", "//", "/dev/null.yaml")


class Hang(BaseException):
    """Raised by the alarm: a run took longer than LIMIT_S (BaseException: nothing in the
    code under test may swallow it)."""


def _alarm(signum, frame):
    raise Hang()


# -- mutations -----------------------------------------------------------------------------
def _paths(node, prefix=()):
    """Every (path, value) of a parsed document."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _replace(doc, path, fn):
    if not path:
        return fn(doc)
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = fn(parent[path[-1]])
    return doc


def _delete(doc, path):
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    del parent[path[-1]]
    return doc


def _dump(doc) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)


def _tree_mutation(text: str, kind: str, rnd: random.Random) -> str:
    doc = yaml.safe_load(text)
    paths = [p for p, _ in _paths(doc) if p]
    numeric = [p for p, v in _paths(doc) if p and isinstance(v, (int, float, str))
               and not isinstance(v, bool) and re.match(r"^\s*[-+.\d]", str(v))]
    scalars = [p for p, v in _paths(doc) if p and not isinstance(v, (dict, list))]
    path = rnd.choice(numeric if kind in ("zero", "negative", "huge", "nan_inf", "tiny",
                                          "absurd_unit") and numeric else paths)
    if kind == "delete":
        return _dump(_delete(doc, path))
    if kind == "wrong_type":
        new = rnd.choice([[1, 2], {"x": 1}, "text", True, None, 3.5, -7, [], {}])
        return _dump(_replace(doc, path, lambda v: new))
    if kind == "zero":
        return _dump(_replace(doc, path, lambda v: rnd.choice([0, 0.0, "0 B", "0 us"])))
    if kind == "negative":
        return _dump(_replace(doc, path, lambda v: rnd.choice([-1, -1e9, "-5 GB/s", "-1 us"])))
    if kind == "huge":
        return _dump(_replace(doc, path, lambda v: rnd.choice(HUGE)))
    if kind == "tiny":
        return _dump(_replace(doc, path, lambda v: rnd.choice([1e-300, 5e-324, "1e-300 B/s"])))
    if kind == "nan_inf":
        new = rnd.choice(NAN_INF)
        dumped = _dump(_replace(doc, path, lambda v: "@@MARK@@"))
        return dumped.replace("'@@MARK@@'", new).replace("@@MARK@@", new)
    if kind == "absurd_unit":
        return _dump(_replace(doc, path, lambda v: rnd.choice(ABSURD)))
    if kind == "unknown_name":
        if rnd.random() < 0.5 and scalars:  # a value that names nothing
            return _dump(_replace(doc, rnd.choice(scalars), lambda v: "zzz_" + str(v)[:8]))
        parent = doc  # a key that means nothing
        for p in path[:-1]:
            parent = parent[p]
        if isinstance(parent, dict):
            parent[str(path[-1]) + "x"] = parent.pop(path[-1])
        else:
            parent.append({"bogus_field": 1})
        return _dump(doc)
    raise AssertionError(kind)


def _text_mutation(text: str, kind: str, rnd: random.Random) -> str | bytes:
    lines = text.splitlines()
    i = rnd.randrange(len(lines))
    if kind == "syntax":
        junk = rnd.choice(["[", "]", "{", "}", ": :", "- - -", "'", '"', "&", "*x", "!!python/object:os.system", "? ", "%YAML 9", "|-\n x", "key: [1, 2"])
        lines.insert(i, lines[i] + junk if rnd.random() < 0.5 else junk)
        return "\n".join(lines) + "\n"
    if kind == "tab":
        cand = [j for j, ln in enumerate(lines) if ln.startswith("  ")] or [i]
        j = rnd.choice(cand)
        lines[j] = "\t" + lines[j].lstrip(" ")
        return "\n".join(lines) + "\n"
    if kind == "bom_crlf":
        return "\ufeff" + "\r\n".join(lines) + "\r\n"
    if kind == "duplicate_key":
        cand = [j for j, ln in enumerate(lines) if re.match(r"^\w+:", ln)] or [0]
        j = rnd.choice(cand)
        key = lines[j].split(":")[0]
        return "\n".join(lines) + f"\n{key}: duplicate\n"
    if kind == "alias_bomb":
        levels = rnd.randint(5, 9)
        bomb = ["lol0: &l0 [a, a, a, a, a, a, a, a, a]"]
        bomb += [f"lol{k}: &l{k} [" + ", ".join([f"*l{k - 1}"] * 9) + "]"
                 for k in range(1, levels + 1)]
        target = rnd.choice(["variants: [{label: x, set: {label: *l%d}}]",
                             "about: *l%d", "assumptions: *l%d", "label: *l%d"])
        return "\n".join(lines + bomb + [target % levels]) + "\n"
    if kind == "deep_nesting":
        depth = rnd.choice([60, 300, 3000, 50000])
        o, c = rnd.choice([("[", "]"), ("{a: ", "}")])
        return "\n".join(lines) + "\nlabel: " + o * depth + "1" + c * depth + "\n"
    if kind == "binary_junk":
        data = bytearray(text.encode())
        pos = rnd.randrange(len(data) + 1)
        data[pos:pos] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 64)))
        return bytes(data)
    if kind == "empty":
        return rnd.choice(["", "\n\n", "# nothing\n", "   \n", "---\n", "...\n"])
    raise AssertionError(kind)


def make_mutant(base: Path, kind: str, seed: int) -> tuple[str | bytes, list[str]]:
    """The mutant's content and extra CLI arguments (``--set`` items)."""
    rnd = random.Random(seed)
    text = base.read_text()
    if kind in ("syntax", "tab", "bom_crlf", "duplicate_key", "alias_bomb", "deep_nesting",
                "binary_junk", "empty"):
        return _text_mutation(text, kind, rnd), []
    if kind == "path_trick":
        bad = rnd.choice(PATHS)
        if base.parent.name == "topologies":  # a topology's own file name can be a trick too
            return text, ["--set", f"platform={bad}"]
        return text, ["--set", f"platform={bad}" if rnd.random() < 0.7
                      else f"platform.file={bad}"]
    if kind == "set_override":
        key = rnd.choice(["run.iterations", "run.seed", "run.warmup", "run.repeats",
                          "platform.hosts", "platform.node.devices", "network.efficiency",
                          "workload.batch_per_worker", "sweep.workers", "benchmark.ranks",
                          "platform.link.bandwidth", "run", "platform", "", "a..b"])
        value = rnd.choice(["1e9", "[1", "{", ".nan", "-1", "9223372036854775808", "1e3",
                            "0", "", "!!binary AA==", "*x", "&a [*a]", "1e400", "'x"])
        return text, ["--set", f"{key}={value}"]
    return _tree_mutation(text, kind, rnd), []


# -- running ---------------------------------------------------------------------------------
def run_main(argv: list[str]) -> tuple[int, str]:
    """``clustersim ARGV`` in this process under the alarm; (exit code, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    old_prof = signal.signal(signal.SIGPROF, _alarm)
    signal.alarm(WALL_LIMIT_S)
    signal.setitimer(signal.ITIMER_PROF, LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        signal.signal(signal.SIGPROF, old_prof)
    return code, err.getvalue()


#: the console script's entry point, then the process's VmHWM into $CLUSTERSIM_FUZZ_HWM
CHILD = r"""
import atexit, os, re, sys
def _hwm():
    kb = re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)
    open(os.environ["CLUSTERSIM_FUZZ_HWM"], "w").write(str(int(kb) * 1024))
atexit.register(_hwm)
from clustersim.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_child(argv: list[str], tmp: Path) -> tuple[int, str, int]:
    """(exit code, stderr, peak RSS in bytes) of one child process, measured for that child
    alone (``os.wait4``): the session-wide RUSAGE_CHILDREN maximum would also count every child
    that earlier tests started (a documented 100,000-GPU bench among them)."""
    err_path = tmp / "child.err"
    hwm_path = tmp / "child.hwm"
    hwm_path.unlink(missing_ok=True)
    with open(err_path, "w") as err_file:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err_file,
                                env={**os.environ, "PYTHONPATH": str(ROOT),
                                     "CLUSTERSIM_FUZZ_HWM": str(hwm_path)})
        timer = threading.Timer(60, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    # the child's own high-water mark (VmHWM of its image, written at exit by CHILD):
    # ru_maxrss would also carry the parent's peak, which Linux hands to a vforked child at exec
    hwm = int(hwm_path.read_text()) if hwm_path.exists() else usage.ru_maxrss * 1024
    return proc.returncode, err_path.read_text(), hwm


def check_rejection(err: str, kind: str, files: list[Path], argv: list[str]) -> dict[str, bool]:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), (kind, argv, err)
    msg = lines[0]
    named = [f for f in files if str(f) in msg]
    from_set = "(--set " in msg
    assert named or from_set, (kind, argv, msg)
    has_line = bool(re.search(r"\.ya?ml:\d+", msg))
    if kind != "empty" and not from_set:
        assert has_line, (kind, argv, msg)
    field = bool(re.search(r"(:\d+|\)), [\w\[\].]+: ", msg))
    return {"line": has_line or from_set, "field": field}


def setup_mutant(work: Path, base: Path, kind: str, seed: int) -> tuple[Path, list[Path], list]:
    content, extra = make_mutant(base, kind, seed)
    for f in work.iterdir():
        f.unlink()
    if base.parent.name == "topologies":
        target = work / "t.yaml"
        (work / "s.yaml").write_text(TOPO_SCENARIO)
    else:
        target = work / "s.yaml"
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8", newline="")
    return work / "s.yaml", [work / "s.yaml", target], extra


def test_fuzz_inputs():
    counts: Counter = Counter()
    by_kind: dict[str, Counter] = {k: Counter() for k in KINDS}
    predicted: Counter = Counter()
    biggest: list = [0, ""]  # peak RSS growth (KiB) of one validation, and its mutant
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "m"
        work.mkdir()
        outdir = Path(tmp) / "out"
        outdir.mkdir()

        @settings(max_examples=N_MUTANTS, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.sampled_from(WEIGHTED), st.sampled_from(KINDS), st.integers(0, 2**31))
        def one(base, kind, seed):
            scn, files, extra = setup_mutant(work, base, kind, seed)
            argv = ["validate", str(scn), *extra]
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            try:
                code, err = run_main(argv)
            except Hang:
                pytest.fail(f"hang (> {LIMIT_S} s CPU or {WALL_LIMIT_S} s): {base.name} {kind} {seed}")
            grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
            if grew > biggest[0]:  # the mutant that raised this process's peak the most
                biggest[:] = [grew, f"{base.name} {kind} seed {seed} {extra} exit {code}"]
            assert code in (0, 2), (base.name, kind, seed, code, err)
            counts["mutants"] += 1
            by_kind[kind]["mutants"] += 1
            if code == 0:
                counts["accepted"] += 1
                by_kind[kind]["accepted"] += 1
            else:
                counts["rejected"] += 1
                by_kind[kind]["rejected"] += 1
                found = check_rejection(err, kind, files, argv)
                counts["rejected with line"] += found["line"]
                counts["rejected with field"] += found["field"]
            # predict on a subset: cheap scenarios accepted, and any rejected mutant
            if (predicted["runs after acceptance"] < N_PREDICT // 2 and code == 0
                    and base.stem in PREDICTABLE) or \
                    (predicted["runs after rejection"] < N_PREDICT // 2 and code == 2
                     and seed % 5 == 0):
                predicted["runs after " + ("acceptance" if code == 0 else "rejection")] += 1
                js, cs = outdir / "p.json", outdir / "p.csv"
                for f in (js, cs):
                    f.unlink(missing_ok=True)
                before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                try:
                    pcode, perr = run_main(["predict", str(scn), *extra, "--json", str(js),
                                            "--csv", str(cs), "-q"])
                except Hang:
                    pytest.fail(f"predict hang (> {LIMIT_S} s CPU or {WALL_LIMIT_S} s): {base.name} {kind} {seed}")
                grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
                if grew > biggest[0]:
                    biggest[:] = [grew, f"predict {base.name} {kind} seed {seed} {extra}"]
                assert pcode in (0, 2), (base.name, kind, seed, pcode, perr)
                predicted["runs"] += 1
                if pcode == 0:
                    predicted["ok"] += 1
                    json.loads(js.read_text())
                    assert cs.read_text().count("\n") >= 2
                else:
                    predicted["rejected"] += 1
                    assert not js.exists() and not cs.exists(), (base.name, kind, seed)

        one()

        # a sample through the real console script: exit codes, no traceback, memory
        peak_child = 0
        rnd = random.Random(12)
        for n in range(N_SUBPROCESS):
            base, kind = rnd.choice(FILES), KINDS[n % len(KINDS)]
            scn, files, extra = setup_mutant(work, base, kind, rnd.randrange(2**31))
            code, err, rss = run_child([sys.executable, "-c", CHILD, "validate", str(scn),
                                        *extra], Path(tmp))
            assert code in (0, 2) and "Traceback" not in err, err
            peak_child = max(peak_child, rss)
            counts["subprocess runs"] += 1

    peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"\nfuzz: {dict(counts)}; predict: {dict(predicted)}")
    for kind in KINDS:
        print(f"  {kind:14s} {dict(by_kind[kind])}")
    print(f"  peak RSS: this process {peak_self / 2**20:.0f} MiB, children "
          f"{peak_child / 2**20:.0f} MiB; the largest rise, {biggest[0] / 1024:.0f} MiB, "
          f"was {biggest[1]}")
    assert counts["mutants"] >= min(N_MUTANTS, 5000)
    assert counts["accepted"] > 0 and counts["rejected"] > 0
    assert predicted["ok"] > 0 and predicted["rejected"] > 0
    # one input must not cost a GiB: the rise of this process's peak during any one run, and
    # each console-script child's own high-water mark.  (The process's lifetime peak is
    # printed, not bounded: it also holds what earlier tests of the session used.)
    assert biggest[0] * 1024 < GIB and peak_child < GIB, (peak_self, peak_child, biggest)

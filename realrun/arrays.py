"""One array interface for the real backend: NumPy on CPUs, CuPy on GPUs.

Why one class for both: CuPy mirrors NumPy's API (``empty``, ``add(out=)``, ``matmul(out=)``,
``astype``), so a backend is the array module ``xp`` plus the few things that differ -
whether work is asynchronous (``synchronize``), how to reach host memory, and whether MPI may
read device memory directly (CUDA-aware MPI).  The NumPy path is therefore the *same code* as
the GPU path, which is what lets tests on a machine without a GPU exercise it.

CuPy is imported only when a GPU is present (``/dev/nvidia*`` or ``/proc/driver/nvidia``) and
the user did not ask for NumPy - importing CuPy on a machine without a driver is slow and can
fail in confusing ways.
"""

from __future__ import annotations

import glob
import importlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from clustersim.errors import InputError

__all__ = ["Backend", "GemmKernel", "check_backend", "get_backend", "gpu_present", "as_dtype", "BACKEND_CHOICES"]

BACKEND_CHOICES = ("auto", "numpy", "cupy")
DTYPES = {"float32": np.float32, "fp32": np.float32, "float16": np.float16, "fp16": np.float16,
          "float64": np.float64, "fp64": np.float64, "int8": np.int8}  # int8: raw byte buffers


def gpu_present() -> bool:
    """True when an NVIDIA driver exposes at least one device (no CUDA import needed)."""
    if glob.glob("/dev/nvidia[0-9]*"):
        return True
    return bool(glob.glob("/proc/driver/nvidia/gpus/*"))


def as_dtype(dtype: Any) -> np.dtype:
    """A NumPy dtype from a name of :data:`DTYPES` (bad names are input errors) or a dtype."""
    if isinstance(dtype, str):
        if dtype not in DTYPES:
            raise InputError(f"unknown dtype {dtype!r} (allowed: {', '.join(DTYPES)})",
                             path=("dtype",))
        return np.dtype(DTYPES[dtype])
    return np.dtype(dtype)


@dataclass
class GemmKernel:
    """``C = A @ B`` on preallocated operands; calling it runs one GEMM (not synchronised).

    Preallocation keeps allocation out of the timed region, as a real training step would.
    """

    m: int
    n: int
    k: int
    dtype: np.dtype
    run: Callable[[], Any]
    #: the dtype name traces record (``tf32``/``bfloat16`` where ``dtype`` cannot say it)
    label: str = ""

    @property
    def dtype_name(self) -> str:
        return self.label or self.dtype.name

    @property
    def flops(self) -> float:
        """Floating-point operations of one call (a multiply-add counts as two)."""
        return 2.0 * self.m * self.n * self.k

    def __call__(self) -> Any:
        return self.run()


class Backend:
    """Arrays on one device kind.  ``xp`` is ``numpy`` or ``cupy``."""

    def __init__(self, xp: ModuleType, *, name: str, is_gpu: bool, cuda_aware: bool = False,
                 sync: Callable[[], None] | None = None) -> None:
        self.xp = xp
        self.name = name
        self.is_gpu = is_gpu
        # MPI may be handed device arrays directly only if the library is CUDA-aware;
        # otherwise communication goes through host copies (``to_host``/``from_host``).
        self.direct_mpi = (not is_gpu) or cuda_aware
        self._sync = sync

    def __repr__(self) -> str:
        return f"Backend({self.name!r}, direct_mpi={self.direct_mpi})"

    # --- allocation -------------------------------------------------------------------------
    def empty(self, n: int, dtype: Any = "float32") -> Any:
        return self.xp.empty(int(n), dtype=as_dtype(dtype))

    def zeros(self, n: int, dtype: Any = "float32") -> Any:
        return self.xp.zeros(int(n), dtype=as_dtype(dtype))

    def random(self, n: int, dtype: Any = "float32", seed: int = 0) -> Any:
        """Uniform [0, 1) values, reproducible from ``seed`` (drawn in fp32, then cast)."""
        dt = as_dtype(dtype)
        rng = self.xp.random.default_rng(seed)
        draw = np.float64 if dt == np.float64 else np.float32
        out = rng.random(int(n), dtype=draw)
        return out if out.dtype == dt else out.astype(dt)

    # --- arithmetic -------------------------------------------------------------------------
    def add_(self, a: Any, b: Any) -> Any:
        """``a += b`` in place (the reduction of a received buffer); returns ``a``."""
        self.xp.add(a, b, out=a)
        return a

    def to_fp16(self, a: Any) -> Any:
        return a.astype(np.float16)

    def to_fp32(self, a: Any) -> Any:
        return a.astype(np.float32)

    def gemm(self, m: int, n: int, k: int, dtype: Any = "float32", seed: int = 0,
             precision: str | None = None) -> GemmKernel:
        """A GEMM kernel of shape (m x k) @ (k x n) on this device.

        ``precision`` (``realrun.precision.PRECISIONS``) overrides ``dtype``: tf32 and bf16
        run through cuBLAS on a GPU and are refused on NumPy, which has neither.
        """
        if precision is not None and precision != "fp32":
            from realrun import precision as prec

            prec.meta_dtype(precision)
            if precision == "fp16" and not self.is_gpu:
                dtype = "float16"
            elif not self.is_gpu:
                raise InputError(f"GEMM precision {precision!r} needs a GPU (cuBLAS); on the "
                                 f"{self.name} backend the allowed precisions are "
                                 f"{', '.join(prec.CPU_PRECISIONS)}", path=("precision",))
            else:
                prec.check(self.xp, precision)
                run, _ = prec.cublas_gemm(self.xp, m, n, k, precision, seed)
                return GemmKernel(m, n, k, np.dtype(np.float32), run,
                                  label=prec.meta_dtype(precision))
        elif precision == "fp32":
            dtype = "float32"
        dt = as_dtype(dtype)
        a = self.random(m * k, dt, seed).reshape(m, k)
        b = self.random(k * n, dt, seed + 1).reshape(k, n)
        c = self.xp.empty((m, n), dtype=dt)
        matmul = self.xp.matmul
        return GemmKernel(m, n, k, dt, lambda: matmul(a, b, out=c))

    def synchronize(self) -> None:
        """Wait for queued device work (a no-op for NumPy, whose calls are synchronous)."""
        if self._sync is not None:
            self._sync()

    # --- host/device ------------------------------------------------------------------------
    def host_empty(self, n: int, dtype: Any = "float32") -> np.ndarray:
        """A host buffer for staging messages: page-locked (pinned) on a GPU, plain on NumPy.

        Why pinned: a device<->host copy into pageable memory goes through the driver's own
        pinned bounce buffer in chunks (a second copy, synchronous), while a pinned buffer is
        a DMA target - the copy a GPU parameter server or a non-CUDA-aware MPI job pays is
        the pinned one when it is written with care, so that is the one the calibration
        should measure.  Allocated once at set-up: pinning costs far more than a copy.
        """
        dt = as_dtype(dtype)
        if self.is_gpu:
            import cupyx  # lazy: only a GPU rank gets here

            return cupyx.empty_pinned((int(n),), dtype=dt)
        return np.empty(int(n), dtype=dt)

    def stage_out(self, dev: Any, host: np.ndarray) -> None:
        """Copy device buffer ``dev`` into host buffer ``host`` (same size) before a send."""
        if self.is_gpu:
            dev.get(out=host)
        else:
            np.copyto(host, dev)

    def stage_in(self, host: np.ndarray, dev: Any) -> None:
        """Copy a received host buffer onto the device buffer ``dev`` (same size)."""
        if self.is_gpu:
            dev.set(host)
        else:
            np.copyto(dev, host)

    def to_host(self, a: Any) -> np.ndarray:
        return a if isinstance(a, np.ndarray) else self.xp.asnumpy(a)

    def from_host(self, a: np.ndarray, out: Any = None) -> Any:
        """Copy host data onto the device (into ``out`` when given)."""
        if out is None:
            return self.xp.asarray(a)
        if self.is_gpu:
            out.set(a)
        else:
            np.copyto(out, a)
        return out


def _numpy_backend() -> Backend:
    return Backend(np, name="numpy", is_gpu=False)


def _cuda_aware_mpi() -> bool:
    """Whether MPI may read device memory: ``REALRUN_CUDA_AWARE`` decides, else the library.

    There is no portable query; Open MPI and MPICH builds with CUDA say so in their version
    string, and mpi4py exposes ``Query_cuda_support`` where the library has it.
    """
    flag = os.environ.get("REALRUN_CUDA_AWARE")
    if flag is not None:
        return flag.strip().lower() in ("1", "true", "yes", "on")
    from mpi4py import MPI  # lazy: only a GPU rank gets here

    query = getattr(MPI, "Query_cuda_support", None)
    if query is not None:
        try:
            return bool(query())
        except Exception:  # noqa: BLE001 - an unsupported query just means "unknown"
            return False
    return "cuda" in MPI.Get_library_version().lower()


def _cupy_backend() -> Backend:
    cp = importlib.import_module("cupy")
    local = int(os.environ.get("MPI_LOCALRANKID", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK",
                                                                   "0")))
    ndev = cp.cuda.runtime.getDeviceCount()
    cp.cuda.Device(local % max(ndev, 1)).use()  # one GPU per local rank, round robin
    return Backend(cp, name="cupy", is_gpu=True, cuda_aware=_cuda_aware_mpi(),
                   sync=lambda: cp.cuda.get_current_stream().synchronize())


def check_backend(prefer: str) -> None:
    """Raise :class:`InputError` unless backend ``prefer`` can be had on this machine.

    Cheap (a /dev scan and a module lookup, no CUDA import), so the launcher runs it before
    starting any rank: found only inside the ranks, ``--backend cupy`` on a machine without a
    GPU was a failed run (exit 1, "partial traces") instead of bad input (QA 10 M4).
    """
    if prefer not in BACKEND_CHOICES:
        raise InputError(f"unknown array backend {prefer!r} (allowed: "
                         f"{', '.join(BACKEND_CHOICES)})", path=("backend",))
    if prefer != "cupy":
        return
    if importlib.util.find_spec("cupy") is None:
        raise InputError("backend 'cupy' needs CuPy and an NVIDIA GPU; CuPy is not installed "
                         "here (pip install 'clustersim[gpu]'; allowed: auto, numpy)",
                         path=("backend",))
    if not gpu_present():
        raise InputError("backend 'cupy' needs an NVIDIA GPU and none was found (allowed: "
                         "auto, numpy)", path=("backend",))


def get_backend(prefer: str = "auto") -> Backend:
    """The array backend: ``auto`` = CuPy when a GPU and CuPy are present, else NumPy."""
    check_backend(prefer)
    if prefer == "numpy":
        return _numpy_backend()
    has_cupy = importlib.util.find_spec("cupy") is not None
    if prefer == "cupy":
        return _cupy_backend()
    if has_cupy and gpu_present():
        return _cupy_backend()
    return _numpy_backend()

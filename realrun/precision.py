"""GEMMs by arithmetic precision: fp32, tf32, bf16 and fp16 through cuBLAS on a GPU.

Why a module of its own: NumPy (and CuPy's ``matmul``) know float32 and float16 but neither
TensorFloat-32 - a *compute mode* of float32 GEMMs on Ampere and later GPUs, not a storage
type - nor bfloat16, which NumPy has no dtype for.  Training frameworks use both (PyTorch's
``allow_tf32``, bf16 autocast), so a calibration of an H100/H200 has to measure them.  cuBLAS's
``cublasGemmEx`` takes the storage type of each operand and the compute type separately, and
CuPy exposes it (``cupy_backends.cuda.libs.cublas.gemmEx``), so one call covers all four:

=========  ===============  ==========================  ===========================
precision  operands (A, B)  result C                    compute type
=========  ===============  ==========================  ===========================
fp32       float32          float32                     CUBLAS_COMPUTE_32F
tf32       float32          float32                     CUBLAS_COMPUTE_32F_FAST_TF32
bf16       bfloat16         bfloat16                    CUBLAS_COMPUTE_32F
fp16       float16          float16                     CUBLAS_COMPUTE_32F
=========  ===============  ==========================  ===========================

bfloat16 operands are held as ``uint16`` arrays with the upper half of each float32's bits
(truncation: the rounding mode does not matter for timing).  cuBLAS is column-major, so the
row-major ``C = A @ B`` (``m x k`` times ``k x n``) is issued as ``C^T = B^T A^T``: the same
FLOPs, no transposes.  :func:`check` compares a small product with CuPy's float32 ``matmul``
so that a wrong argument shows up as an error, not as a fast wrong number.

On NumPy only fp32 and fp16 exist; tf32 and bf16 are refused with an error naming the
precisions that are available (never emulated: a CPU figure called a tensor-core one would be
a wrong calibration).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from clustersim.errors import InputError

__all__ = ["PRECISIONS", "CPU_PRECISIONS", "meta_dtype", "cublas_gemm", "check"]

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
CPU_PRECISIONS = ("fp32", "fp16")
#: the ``dtype`` a GEMM trace event records for each precision (fp32 keeps the plain name,
#: so traces recorded before precisions existed read the same)
_META = {"fp32": "float32", "tf32": "tf32", "bf16": "bfloat16", "fp16": "float16"}
# cuBLAS / CUDA enumerations (cublas_api.h, library_types.h; stable since CUDA 11)
_CUDA_R_32F, _CUDA_R_16F, _CUDA_R_16BF = 0, 2, 14
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32 = 68, 77
_GEMM_DEFAULT = -1
_OP_N = 0
#: precision -> (operand/result CUDA type, compute type, bytes per element)
_TYPES = {"fp32": (_CUDA_R_32F, _COMPUTE_32F, 4),
          "tf32": (_CUDA_R_32F, _COMPUTE_32F_FAST_TF32, 4),
          "bf16": (_CUDA_R_16BF, _COMPUTE_32F, 2),
          "fp16": (_CUDA_R_16F, _COMPUTE_32F, 2)}


def meta_dtype(precision: str) -> str:
    """The ``dtype`` recorded for a GEMM of ``precision`` (input errors name the allowed)."""
    if precision not in _META:
        raise InputError(f"unknown GEMM precision {precision!r} (allowed: "
                         f"{', '.join(PRECISIONS)})", path=("precision",))
    return _META[precision]


def _operand(cp: Any, n: int, precision: str, seed: int) -> Any:
    """``n`` values in [0, 1) on the GPU in the precision's storage type."""
    vals = cp.random.default_rng(seed).random(n, dtype=cp.float32)
    if precision == "bf16":
        return (vals.view(cp.uint32) >> 16).astype(cp.uint16)
    if precision == "fp16":
        return vals.astype(cp.float16)
    return vals


def cublas_gemm(cp: Any, m: int, n: int, k: int, precision: str, seed: int = 0
                ) -> tuple[Callable[[], None], tuple[Any, Any, Any]]:
    """A preallocated ``C = A @ B`` of ``precision`` on the current GPU: (call, (A, B, C)).

    The call only enqueues the GEMM on the current stream (synchronise to time it).
    """
    from cupy_backends.cuda.libs import cublas  # lazy: GPU ranks only

    meta_dtype(precision)
    ctype, compute, _ = _TYPES[precision]
    a = _operand(cp, m * k, precision, seed)
    b = _operand(cp, k * n, precision, seed + 1)
    c = cp.zeros(m * n, dtype=a.dtype)
    # host scalars, float32 for a 32F compute type; kept alive by the closure
    alpha = np.ones(1, dtype=np.float32)
    beta = np.zeros(1, dtype=np.float32)
    handle = cp.cuda.device.get_cublas_handle()
    pa, pb, pc = a.data.ptr, b.data.ptr, c.data.ptr
    pal, pbe = alpha.ctypes.data, beta.ctypes.data

    def run(_alive=(alpha, beta, a, b, c)) -> None:  # the closure keeps the buffers alive
        # column-major C^T (n x m) = B^T (n x k) @ A^T (k x m)
        cublas.gemmEx(handle, _OP_N, _OP_N, n, m, k, pal, pb, ctype, n, pa, ctype, k,
                      pbe, pc, ctype, n, compute, _GEMM_DEFAULT)

    return run, (a, b, c)


def _as_float32(cp: Any, x: Any, precision: str) -> Any:
    if precision == "bf16":
        return (x.astype(cp.uint32) << 16).view(cp.float32)
    return x.astype(cp.float32)


def check(cp: Any, precision: str, size: int = 64) -> float:
    """Largest relative error of a ``size``-cubed product against CuPy's float32 matmul.

    Raises RuntimeError beyond the precision's tolerance (bf16 keeps 8 significant bits,
    fp16/tf32 11): a GEMM issued with wrong arguments must not be timed.
    """
    run, (a, b, c) = cublas_gemm(cp, size, size, size, precision, seed=7)
    run()
    cp.cuda.get_current_stream().synchronize()
    ref = _as_float32(cp, a, precision).reshape(size, size) @ \
        _as_float32(cp, b, precision).reshape(size, size)
    got = _as_float32(cp, c, precision).reshape(size, size)
    err = float(cp.max(cp.abs(got - ref)) / cp.max(cp.abs(ref)))
    tol = {"fp32": 1e-5, "tf32": 5e-3, "bf16": 2e-2, "fp16": 5e-3}[precision]
    if not err <= tol:
        raise RuntimeError(f"cuBLAS {precision} GEMM check failed: relative error {err:.3g} "
                           f"> {tol:g} against float32 matmul")
    return err

"""Per-rank random generators, ``np.random.default_rng([*prefix, rank])``, made in bulk.

Why: the cost model draws each rank's compute jitter from its own generator, seeded by
``(seed, 7, rank)`` - a pure function of seed and rank, whatever else runs.  Making one with
``default_rng`` costs ~20 us, almost all of it in :class:`numpy.random.SeedSequence`'s
hashing of the three seed words into the 128-bit seed of the PCG64 generator.  A
4,253-worker point makes 4,253 of them (0.1 s, more than its first round of compute costs to
simulate), and the KNL sweep makes 30,000.

:class:`RankStreams` computes what ``SeedSequence([*prefix, rank]).generate_state(4,
np.uint64)`` returns for a whole block of ranks at once, with numpy arithmetic on uint32
arrays (the hash's state advances the same way for every rank; only the mixed words differ),
and hands each rank's words to :class:`numpy.random.PCG64` through numpy's
:class:`~numpy.random.bit_generator.ISeedSequence` interface - so the generator is seeded by
numpy itself, from the same words, and draws the same stream, bit for bit
(``tests/test_sim_streams.py`` compares them).  The hash is Melissa O'Neill's seed_seq
design as numpy implements it (``numpy/random/bit_generator.pyx``: ``mix_entropy``,
``generate_state``); numpy promises this stream stays the same across versions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.random.bit_generator import ISeedSequence

__all__ = ["RankStreams"]

_MASK32 = 0xFFFFFFFF
# SeedSequence's constants (numpy/random/bit_generator.pyx)
_POOL = 4
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_SHIFT = np.uint32(16)

#: ranks whose seeds are computed together (one vectorised pass)
_BLOCK = 1024


def _words(n: int) -> list[int]:
    """An entropy integer as numpy's SeedSequence splits it: uint32 words, lowest first."""
    out = [n & _MASK32]
    n >>= 32
    while n:
        out.append(n & _MASK32)
        n >>= 32
    return out


def pcg64_seeds(prefix: Sequence[int], ranks: np.ndarray) -> np.ndarray:
    """``SeedSequence([*prefix, r]).generate_state(4, np.uint64)`` for every ``r`` in
    ``ranks`` (non-negative, below 2**32), as a ``(len(ranks), 4)`` uint64 array."""
    ranks = np.asarray(ranks, dtype=np.uint32)
    n = ranks.size
    entropy = [np.full(n, w, np.uint32) for p in prefix for w in _words(int(p))] + [ranks]
    hash_const = _INIT_A

    def hashmix(value: np.ndarray) -> np.ndarray:
        nonlocal hash_const
        value = value ^ np.uint32(hash_const)
        hash_const = (hash_const * _MULT_A) & _MASK32
        value = value * np.uint32(hash_const)  # uint32 arrays wrap, as the C code does
        return value ^ (value >> _SHIFT)

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r = np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y
        return r ^ (r >> _SHIFT)

    zero = np.zeros(n, np.uint32)
    pool = [hashmix(entropy[i] if i < len(entropy) else zero) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(_POOL, len(entropy)):
        for dst in range(_POOL):
            pool[dst] = mix(pool[dst], hashmix(entropy[src]))
    # generate_state(4, uint64): 8 uint32 words from the pool, read as little-endian pairs
    hash_const = _INIT_B
    words = []
    for k in range(8):
        value = pool[k % _POOL] ^ np.uint32(hash_const)
        hash_const = (hash_const * _MULT_B) & _MASK32
        value = value * np.uint32(hash_const)
        words.append((value ^ (value >> _SHIFT)).astype(np.uint64))
    out = np.empty((n, 4), np.uint64)
    for k in range(4):
        out[:, k] = words[2 * k] | (words[2 * k + 1] << np.uint64(32))
    return out


class _Seed(ISeedSequence):
    """A seed sequence whose state was computed already (numpy's seeding interface)."""

    __slots__ = ("_state",)

    def __init__(self, state: np.ndarray) -> None:
        self._state = state

    def generate_state(self, n_words: int, dtype=np.uint32) -> np.ndarray:
        if n_words != 4 or np.dtype(dtype) != np.uint64:  # what PCG64 asks for, nothing else
            raise ValueError("a precomputed seed serves PCG64 only")
        return self._state


class RankStreams:
    """``generator(rank)`` is ``np.random.default_rng([*prefix, rank])``, cheaply."""

    def __init__(self, prefix: Sequence[int]) -> None:
        self.prefix = tuple(int(p) for p in prefix)
        if any(p < 0 for p in self.prefix):
            raise ValueError("seed words must be >= 0")
        self._blocks: dict[int, np.ndarray] = {}

    def generator(self, rank: int) -> np.random.Generator:
        if not 0 <= rank <= _MASK32:
            return np.random.default_rng([*self.prefix, rank])
        b = rank // _BLOCK
        block = self._blocks.get(b)
        if block is None:
            block = self._blocks[b] = pcg64_seeds(
                self.prefix, np.arange(b * _BLOCK, (b + 1) * _BLOCK))
        return np.random.Generator(np.random.PCG64(_Seed(block[rank - b * _BLOCK])))

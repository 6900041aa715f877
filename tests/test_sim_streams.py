"""The cost model's per-rank generators are numpy's own ``default_rng([seed, 7, rank])``.

:class:`clustersim.sim.streams.RankStreams` computes SeedSequence's hash for many ranks at
once; a run must draw exactly what ``default_rng`` would, or results would depend on how the
generators were made.  The jitter buffer draws in growing batches; the sequence must not
depend on them either.
"""

from __future__ import annotations

import numpy as np
import pytest

from clustersim.sim.streams import RankStreams, pcg64_seeds


@pytest.mark.parametrize("seed", [0, 1, 7, 12345, 2**32 - 1, 2**32 + 5, 2**70 + 3])
def test_streams_equal_default_rng(seed):
    streams = RankStreams((seed, 7))
    # block edges (1024), the KNL sweep's largest rank, and a few others
    for rank in (0, 1, 2, 1023, 1024, 1025, 2047, 4252, 9999):
        ours = streams.generator(rank).lognormal(-0.1, 0.3, 300)
        ref = np.random.default_rng([seed, 7, rank]).lognormal(-0.1, 0.3, 300)
        assert np.array_equal(ours, ref), (seed, rank)


def test_seed_words_equal_seedsequence_state():
    ranks = np.arange(0, 5000, 37)
    words = pcg64_seeds((3, 7), ranks)
    for r, w in zip(ranks, words):
        ref = np.random.SeedSequence([3, 7, int(r)]).generate_state(4, np.uint64)
        assert np.array_equal(w, ref)


def test_ranks_beyond_uint32_fall_back_to_numpy():
    rank = 2**33 + 1
    ours = RankStreams((0, 7)).generator(rank).random(5)
    assert np.array_equal(ours, np.random.default_rng([0, 7, rank]).random(5))


def test_negative_seed_is_refused():
    with pytest.raises(ValueError):
        RankStreams((-1, 7))


def test_jitter_sequence_does_not_depend_on_batch_sizes():
    """CostModel.draw_jitter draws 8, 8, 16, 32, ... at a time: the factors are the rank's
    lognormal stream in order, as one big draw gives them."""
    from types import SimpleNamespace

    from clustersim.sim.costs import CostModel

    cv = 0.05
    wl = SimpleNamespace(model=SimpleNamespace(layers=(), grad_bytes=0.0), optimizer="sgd",
                         bucket_bytes=None, pipeline=None, compute={}, jitter=cv)
    cm = CostModel(SimpleNamespace(workload=wl, platform=None), 1, seed=4)
    got = [cm.draw_jitter(9) for _ in range(700)]
    s = np.sqrt(np.log1p(cv * cv))
    ref = np.random.default_rng([4, 7, 9]).lognormal(-0.5 * s * s, s, 700)
    assert np.array_equal(np.array(got), ref)

"""Theano-MPI's K80 node against its README table (docs/references.md): 8-GPU speedup within 10%.

Parameters: per model, the conv/fc efficiency fitted to the 1-GPU column; for the node, one
link efficiency, message overhead and QPI peer-to-peer bandwidth (see the scenario files).
AlexNet's 8-GPU row is a reproduction (the QPI bandwidth is fitted to its exchange); the other
models' 8-GPU rows are predictions given the node figures - but of their speedup, which the
fitted compute dominates (GoogLeNet and ResNet-50 would pass with no communication at all);
the communication column, the part predicted, misses by up to 55 % (GoogLeNet) and is
reported in docs/references.md, not asserted.  Speedup = 1-GPU time / (training + communication) at 8.
One exception, written in its scenario (``sweep.at``): VGG16-16's 8-GPU compute efficiency is
taken from the README's 8-GPU training column, which is 23% above what the 1-GPU column
implies; the last test shows what the model predicts without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.scenario.schema import load_scenario
from clustersim.sim.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]

#: seconds per 5,120 images: 1 GPU, then (training, communication) at 8 GPUs
TABLE = {
    "alexnet": (128, 20.50, (2.63, 0.61)),
    "googlenet": (32, 63.89, (7.69, 0.80)),
    "vgg16_16": (16, 358.29, (55.12, 12.59)),
    "vgg16_32": (32, 343.37, (43.29, 5.41)),
    "resnet50": (64, 163.15, (20.12, 0.57)),
}


def predict(name: str, *sets: str):
    scn = load_scenario(ROOT / "scenarios" / f"theano_mpi_{name}.yaml",
                        ["sweep.workers=[1, 8]", "compare=[]", *sets])
    return run_sweep(scn).points["nccl32"]


@pytest.mark.parametrize("name", ["alexnet", "googlenet", "vgg16_16", "vgg16_32", "resnet50"])
def test_eight_gpu_speedup_within_ten_percent(name):
    batch, t1, (train8, comm8) = TABLE[name]
    one, eight = predict(name)
    # the fitted compute reproduces the 1-GPU column (seconds per 5,120 images)
    assert one.iteration_time * 5120 / batch == pytest.approx(t1, rel=0.01)
    measured = t1 / (train8 + comm8)
    assert eight.speedup == pytest.approx(measured, rel=0.10)


def test_vgg16_batch16_deviation_is_outside_the_communication_model():
    """VGG16-16's 8-GPU *training* column (55.12 s) is 23% above 1/8 of its 1-GPU time while
    VGG16-32's is 1% above: no exchange model can produce that (it is compute time).  With
    the 1-GPU efficiency at every point (``sweep.at`` removed), what we model - the
    communication - is within 10%, and the speedup is over-predicted by ~20%; with the
    scenario's 8-GPU efficiency the 8-GPU training column is reproduced."""
    batch, t1, (train8, comm8) = TABLE["vgg16_16"]
    iters = 5120 / (batch * 8)
    one, eight = predict("vgg16_16", "sweep.at={}")
    assert eight.comm * iters == pytest.approx(comm8, rel=0.10)
    assert train8 / (t1 / 8) > 1.2  # the anomaly, in the published table itself
    assert eight.speedup == pytest.approx(1.2 * t1 / (train8 + comm8), rel=0.03)
    _, fitted = predict("vgg16_16")
    assert fitted.compute * iters == pytest.approx(train8, rel=0.01)
    assert fitted.comm == pytest.approx(eight.comm, rel=1e-9)  # the exchange is untouched

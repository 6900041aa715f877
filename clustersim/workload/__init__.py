"""Training workloads: models as layer lists, and what one training step costs on a device.

* :mod:`.layer`, :mod:`.model` - the data (per-sample counts per layer);
* :mod:`.builder`, :mod:`.blocks`, :mod:`.zoo` - layer lists built with shape propagation;
* :mod:`.loader` - models from YAML (zoo name, layer list or totals);
* :mod:`.compute` - roofline times, the backward timeline and gradient buckets.

This package sits at the bottom of the import graph beside ``platform``: it imports only the
catalog, units and errors.
"""

from clustersim.workload.builder import NetBuilder, ShapeError, Tensor
from clustersim.workload.compute import (
    OPTIMIZERS,
    BackwardStep,
    Bucket,
    ComputeOverrides,
    ComputeProfile,
    InputPipeline,
    KernelTime,
    layer_time,
    roofline,
    update_time,
)
from clustersim.workload.layer import KERNEL_CLASSES, KINDS, Layer, kernel_class
from clustersim.workload.loader import model_from_dict, resolve_model
from clustersim.workload.model import Model
from clustersim.workload.zoo import get_model, list_models, model_options, register_model

__all__ = [
    "OPTIMIZERS", "KERNEL_CLASSES", "KINDS",
    "BackwardStep", "Bucket", "ComputeOverrides", "ComputeProfile", "InputPipeline",
    "KernelTime", "Layer", "Model", "NetBuilder", "ShapeError", "Tensor",
    "get_model", "kernel_class", "layer_time", "list_models", "model_from_dict",
    "model_options", "register_model", "resolve_model", "roofline", "update_time",
]

"""Models from YAML: a zoo name, a layer list with shapes, or just totals.

Three forms, chosen by the keys present (see docs/workloads.md):

* ``{zoo: resnet50, options: {image: 192}}`` - a built-in model with options;
* ``{name: mynet, input: [3, 224, 224], layers: [{kind: conv, out: 64, kernel: 7, ...}, ...]}``
  - a sequential layer list; shapes propagate, so parameters and FLOPs follow.  A layer that
  gives ``params``/``fwd_flops``/``multiply_adds`` itself is taken as written (any kind);
* ``{name: bert, params: 110e6, fwd_flops: 22e9}`` - totals only.  The model is split into
  ``split`` (default 16) equal layers so gradients still become ready gradually during
  backward and buckets still form.  Equal shares are the neutral assumption: exact for uniform
  stacks (transformers, MLPs of equal width), pessimistic about overlap for CNNs, whose
  parameter-heavy last layers finish backward first.

Every error is an :class:`~clustersim.errors.InputError` naming the field path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from clustersim.errors import InputError, unknown_name
from clustersim.units import UnitError, parse_size
from clustersim.workload.builder import NetBuilder, ShapeError, Tensor
from clustersim.workload.layer import KERNEL_CLASSES, KINDS, Layer
from clustersim.workload.model import Model
from clustersim.workload.zoo import get_model, list_models

__all__ = ["model_from_dict", "resolve_model"]

Path = tuple[str | int, ...]

#: Fields each shape-propagating layer kind accepts (``*`` marks required ones).
_SHAPE_FIELDS: dict[str, tuple[str, ...]] = {
    "conv": ("out*", "kernel*", "stride", "pad", "groups", "bias"),
    "fc": ("out*", "bias"),
    "pool": ("kernel", "stride", "pad", "mode", "ceil", "global"),
    "norm": ("type", "size"),
    "act": ("fn",),
    "dropout": ("p",),
    "softmax": (),
}
_EXPLICIT_FIELDS = ("params", "multiply_adds", "fwd_flops", "out_shape")
_TOTAL_FIELDS = ("name", "input", "params", "fwd_flops", "multiply_adds", "bwd_flops",
                 "mem_bytes", "split", "kind")


#: Bounds on a model's numbers.  Why: a typo (a layer 10**400 wide, a 1e300-FLOP model) must
#: be an error naming the field, not an OverflowError or a MemoryError later.  The largest
#: real values are far below: widths and sizes ~10^5, parameters ~10^12, FLOP ~10^15.
MAX_WHOLE = 10**9
MAX_TOTAL = 1e20
MAX_SPLIT = 10_000
#: most parameters of a model given by its totals: 4 B of fp32 gradient each must stay within
#: the 2^60 B every size is bounded by (docs/scenarios.md); 1e20 parameters had run, exit 0
MAX_PARAMS = 2**58


def _number(value: Any, path: Path, *, integer: bool = False, positive: bool = False,
            maximum: float | None = None) -> Any:
    """A non-negative number up to ``maximum`` (default :data:`MAX_WHOLE` for whole numbers,
    :data:`MAX_TOTAL` otherwise); numeric strings are accepted because YAML 1.1 reads ``8.2e9``
    (no dot-sign exponent) as a string."""
    if isinstance(value, str):
        try:
            value = float(value.replace("_", ""))
        except ValueError:
            raise InputError(f"must be a number, not {value[:80]!r}", path=path) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or (isinstance(value, float) and not math.isfinite(value)):
        raise InputError(f"must be a finite number, not {str(value)[:80]}", path=path)
    if value < 0 or (positive and value == 0):
        raise InputError(f"must be {'positive' if positive else 'non-negative'}, not {value!r}",
                         path=path)
    top = maximum if maximum is not None else (MAX_WHOLE if integer else MAX_TOTAL)
    if value > top:
        raise InputError(f"must be <= {top:,g}, not {str(value)[:40]}", path=path)
    if integer:
        if float(value) != int(value):
            raise InputError(f"must be a whole number, not {value!r}", path=path)
        return int(value)
    return float(value)


def _int_or_pair(value: Any, path: Path) -> int | tuple[int, int]:
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise InputError(f"must be an integer or a pair [h, w], not {value!r}", path=path)
        return (_number(value[0], (*path, 0), integer=True),
                _number(value[1], (*path, 1), integer=True))
    return _number(value, path, integer=True)


def _shape(value: Any, path: Path) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or not value:
        raise InputError(f"must be a list of positive sizes like [3, 224, 224], not {value!r}",
                         path=path)
    return tuple(_number(v, (*path, i), integer=True, positive=True) for i, v in enumerate(value))


def _check_keys(raw: Mapping[str, Any], allowed: Sequence[str], kind: str, path: Path) -> None:
    for key in raw:
        if key not in allowed:
            raise unknown_name(f"{kind} field", str(key), allowed, path=(*path, key))


def _bool(value: Any, path: Path) -> bool:
    if not isinstance(value, bool):
        raise InputError(f"must be true or false, not {value!r}", path=path)
    return value


def _choice(value: Any, allowed: Sequence[str], what: str, path: Path) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise unknown_name(what, str(value), allowed, path=path)
    return value


def _add_layer(nb: NetBuilder, x: Tensor, raw: Any, path: Path) -> Tensor:
    if not isinstance(raw, Mapping):
        raise InputError("each layer must be a mapping with a 'kind'", path=path)
    if "kind" not in raw:
        raise InputError(f"layer needs a 'kind' (allowed: {', '.join(sorted(KINDS))})", path=path)
    kind = _choice(raw["kind"], sorted(KINDS), "layer kind", (*path, "kind"))
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        raise InputError(f"must be a string, not {name!r}", path=(*path, "name"))
    explicit = any(k in raw for k in ("params", "multiply_adds", "fwd_flops"))
    if explicit:
        _check_keys(raw, ("kind", "name", *_EXPLICIT_FIELDS), f"explicit {kind} layer", path)
        out_shape = _shape(raw["out_shape"], (*path, "out_shape")) if "out_shape" in raw else None
        return nb.layer(
            x, kind, name=name, out_shape=out_shape,
            params=_number(raw.get("params", 0), (*path, "params"), integer=True),
            macs=_number(raw.get("multiply_adds", 0), (*path, "multiply_adds"), integer=True),
            fwd_flops=(_number(raw["fwd_flops"], (*path, "fwd_flops"))
                       if "fwd_flops" in raw else None),
        )
    if kind not in _SHAPE_FIELDS:
        raise InputError(
            f"kind {kind!r} needs its totals (params, fwd_flops or multiply_adds): only "
            f"{', '.join(_SHAPE_FIELDS)} are derived from shapes in a layer list "
            "(branches need the Python builder)", path=path)
    spec = _SHAPE_FIELDS[kind]
    fields = [f.rstrip("*") for f in spec]
    _check_keys(raw, ("kind", "name", *fields), f"{kind} layer", path)
    for f in spec:
        if f.endswith("*") and f[:-1] not in raw:
            raise InputError(f"{kind} layer needs {f[:-1]!r}", path=(*path, f[:-1]))

    def get(key: str, default: Any) -> Any:
        return raw.get(key, default)

    def p(key: str) -> Path:
        return (*path, key)

    if kind == "conv":
        return nb.conv(x, _number(get("out", 0), p("out"), integer=True, positive=True),
                       _int_or_pair(get("kernel", 1), p("kernel")),
                       _int_or_pair(get("stride", 1), p("stride")),
                       _int_or_pair(get("pad", 0), p("pad")),
                       groups=_number(get("groups", 1), p("groups"), integer=True, positive=True),
                       bias=_bool(get("bias", True), p("bias")), name=name)
    if kind == "fc":
        return nb.fc(x, _number(get("out", 0), p("out"), integer=True, positive=True),
                     bias=_bool(get("bias", True), p("bias")), name=name)
    if kind == "pool":
        mode = _choice(get("mode", "max"), ("max", "avg"), "pool mode", p("mode"))
        if _bool(get("global", False), p("global")):
            return nb.global_pool(x, mode=mode, name=name)
        if "kernel" not in raw:
            raise InputError("pool layer needs 'kernel' (or global: true)", path=p("kernel"))
        kernel = _int_or_pair(raw["kernel"], p("kernel"))
        stride = _int_or_pair(raw["stride"], p("stride")) if "stride" in raw else None
        return nb.pool(x, kernel, stride, _int_or_pair(get("pad", 0), p("pad")), mode=mode,
                       ceil=_bool(get("ceil", False), p("ceil")), name=name)
    if kind == "norm":
        ntype = _choice(get("type", "batch"), ("batch", "layer", "lrn"), "norm type", p("type"))
        return nb.norm(x, ntype, size=_number(get("size", 5), p("size"), integer=True,
                                              positive=True), name=name)
    if kind == "act":
        fn = _choice(get("fn", "relu"), ("relu", "tanh", "sigmoid", "gelu"), "activation",
                     p("fn"))
        return nb.act(x, fn, name=name)
    if kind == "dropout":
        rate = _number(get("p", 0.5), p("p"))
        if rate >= 1:
            raise InputError(f"must be below 1, not {rate!r}", path=p("p"))
        return nb.dropout(x, rate, name=name)
    return nb.softmax(x, name=name)


def _from_layers(raw: Mapping[str, Any], path: Path) -> Model:
    _check_keys(raw, ("name", "input", "layers"), "layer-list model", path)
    if "input" not in raw:
        raise InputError("a layer list needs the input shape, e.g. input: [3, 224, 224]",
                         path=(*path, "input"))
    layers = raw["layers"]
    if not isinstance(layers, list) or not layers:
        raise InputError("layers must be a non-empty list", path=(*path, "layers"))
    nb = NetBuilder(str(raw.get("name", "custom")), _shape(raw["input"], (*path, "input")))
    x = nb.input
    for i, item in enumerate(layers):
        where = (*path, "layers", i)
        try:
            x = _add_layer(nb, x, item, where)
        except (ShapeError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{exc} (input shape {list(x.shape)})", path=where) from None
    return nb.build()


def _split(total: float, n: int) -> list[float]:
    return [total / n] * n


def _split_int(total: int, n: int) -> list[int]:
    base, extra = divmod(total, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def _from_totals(raw: Mapping[str, Any], path: Path) -> Model:
    _check_keys(raw, _TOTAL_FIELDS, "model totals", path)
    if "params" not in raw:
        raise InputError("model totals need 'params'", path=(*path, "params"))
    if "fwd_flops" not in raw and "multiply_adds" not in raw:
        raise InputError("model totals need 'fwd_flops' or 'multiply_adds' (per sample)",
                         path=(*path, "fwd_flops"))
    params = round(_number(raw["params"], (*path, "params"), positive=True))
    if params > MAX_PARAMS:
        raise InputError(f"{params:.3g} parameters would be {4 * params:.3g} B of fp32 "
                         f"gradients, past the largest size, 2^60 B; allowed: 1 to 2^58 "
                         f"({MAX_PARAMS:.3g}) parameters", path=(*path, "params"))
    macs = (round(_number(raw["multiply_adds"], (*path, "multiply_adds")))
            if "multiply_adds" in raw else 0)
    fwd = _number(raw["fwd_flops"], (*path, "fwd_flops")) if "fwd_flops" in raw else 2.0 * macs
    if not macs:
        macs = round(fwd / 2)
    bwd = _number(raw["bwd_flops"], (*path, "bwd_flops")) if "bwd_flops" in raw else 2.0 * fwd
    mem = 0.0
    if "mem_bytes" in raw:
        try:
            mem = parse_size(raw["mem_bytes"])
        except UnitError as exc:
            raise InputError(str(exc), path=(*path, "mem_bytes")) from None
    n = _number(raw.get("split", 16), (*path, "split"), integer=True, positive=True,
                maximum=MAX_SPLIT)
    kind = _choice(raw.get("kind", "conv"), KERNEL_CLASSES, "kernel class", (*path, "kind"))
    name = str(raw.get("name", "custom"))
    shape = _shape(raw["input"], (*path, "input")) if "input" in raw else ()
    layers = tuple(
        Layer(name=f"part{i + 1}", kind=kind, params=p, macs=m, fwd_flops=f, bwd_flops=b,
              out_bytes=mb / 2.0, mem_bytes=mb)
        for i, (p, m, f, b, mb) in enumerate(zip(
            _split_int(params, n), _split_int(macs, n), _split(fwd, n), _split(bwd, n),
            _split(mem, n)))
    )
    return Model(name, layers, shape)


def _from_zoo(raw: Mapping[str, Any], path: Path) -> Model:
    _check_keys(raw, ("zoo", "options"), "zoo model", path)
    name = raw["zoo"]
    if not isinstance(name, str) or name not in list_models():
        raise unknown_name("model", str(name), list_models(), path=(*path, "zoo"))
    options = raw.get("options") or {}
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise InputError("options must be a mapping of option names to values",
                         path=(*path, "options"))
    return get_model(name, path=(*path, "options"), **options)


def model_from_dict(raw: Mapping[str, Any], path: Sequence[str | int] = ()) -> Model:
    """A :class:`Model` from one of the three YAML forms; ``path`` prefixes error locations."""
    where: Path = tuple(path)
    if not isinstance(raw, Mapping):
        raise InputError("model must be a zoo name or a mapping (zoo / layers / totals)",
                         path=where)
    if "zoo" in raw:
        return _from_zoo(raw, where)
    if "layers" in raw:
        return _from_layers(raw, where)
    if "params" in raw or "fwd_flops" in raw or "multiply_adds" in raw:
        return _from_totals(raw, where)
    raise InputError("model needs 'zoo', 'layers' or totals ('params' and 'fwd_flops')",
                     path=where)


def resolve_model(spec: str | Mapping[str, Any] | Model,
                  path: Sequence[str | int] = ()) -> Model:
    """A zoo name, a YAML mapping, or an already built :class:`Model`."""
    if isinstance(spec, Model):
        return spec
    if isinstance(spec, str):
        return get_model(spec, path=tuple(path))
    return model_from_dict(spec, path)

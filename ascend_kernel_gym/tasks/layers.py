"""Elements of the parameters of ``torch.nn`` layers, from their constructor arguments (used by
:mod:`.sizes` to estimate a model's size without building it)."""

from __future__ import annotations

import math
from typing import Any

from ascend_kernel_gym.tasks.constants import NotConstantError


def _prod(shape: Any) -> int:
    if isinstance(shape, int) and not isinstance(shape, bool):
        return shape
    if isinstance(shape, (tuple, list)) and all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
        return math.prod(shape)
    raise NotConstantError("shape")


def _arg(args: list[Any], kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else default


def _conv(dims: int, transposed: bool = False):
    def count(args: list[Any], kwargs: dict[str, Any]) -> int:
        cin, cout = _arg(args, kwargs, 0, "in_channels"), _arg(args, kwargs, 1, "out_channels")
        kernel = _arg(args, kwargs, 2, "kernel_size")
        groups = _arg(args, kwargs, 6, "groups", 1) or 1
        kernel_elems = _prod(kernel) if isinstance(kernel, (tuple, list)) else _prod(kernel) ** dims
        weight = (cin * (cout // groups) if transposed else (cin // groups) * cout) * kernel_elems
        has_bias = _arg(args, kwargs, 7, "bias", True)
        return weight + (cout if has_bias else 0)

    return count


def _recurrent(gates: int):
    def count(args: list[Any], kwargs: dict[str, Any]) -> int:
        size_in, hidden = _arg(args, kwargs, 0, "input_size"), _arg(args, kwargs, 1, "hidden_size")
        layers = _arg(args, kwargs, 2, "num_layers", 1)
        directions = 2 if _arg(args, kwargs, 6, "bidirectional", False) else 1
        first = gates * hidden * (size_in + hidden + 2)
        rest = gates * hidden * (hidden * directions + hidden + 2)
        return directions * (first + (layers - 1) * rest)

    return count


#: ``torch.nn`` layer name -> ``count(args, kwargs)``: elements of its parameters and buffers.
LAYER_PARAMETERS: dict[str, Any] = {
    "Linear": lambda a, k: (
        _arg(a, k, 0, "in_features") * _arg(a, k, 1, "out_features")
        + (_arg(a, k, 1, "out_features") if _arg(a, k, 2, "bias", True) else 0)
    ),
    "Bilinear": lambda a, k: a[0] * a[1] * a[2] + a[2],
    "Conv1d": _conv(1),
    "Conv2d": _conv(2),
    "Conv3d": _conv(3),
    "ConvTranspose1d": _conv(1, True),
    "ConvTranspose2d": _conv(2, True),
    "ConvTranspose3d": _conv(3, True),
    "BatchNorm1d": lambda a, k: 4 * _arg(a, k, 0, "num_features"),
    "BatchNorm2d": lambda a, k: 4 * _arg(a, k, 0, "num_features"),
    "BatchNorm3d": lambda a, k: 4 * _arg(a, k, 0, "num_features"),
    "InstanceNorm1d": lambda a, k: 2 * _arg(a, k, 0, "num_features"),
    "InstanceNorm2d": lambda a, k: 2 * _arg(a, k, 0, "num_features"),
    "InstanceNorm3d": lambda a, k: 2 * _arg(a, k, 0, "num_features"),
    "LayerNorm": lambda a, k: 2 * _prod(_arg(a, k, 0, "normalized_shape")),
    "RMSNorm": lambda a, k: _prod(_arg(a, k, 0, "normalized_shape")),
    "GroupNorm": lambda a, k: 2 * _arg(a, k, 1, "num_channels"),
    "Embedding": lambda a, k: _arg(a, k, 0, "num_embeddings") * _arg(a, k, 1, "embedding_dim"),
    "PReLU": lambda a, k: _arg(a, k, 0, "num_parameters", 1),
    "MultiheadAttention": lambda a, k: 4 * _arg(a, k, 0, "embed_dim") * (_arg(a, k, 0, "embed_dim") + 1),
    "LSTM": _recurrent(4),
    "GRU": _recurrent(3),
    "RNN": _recurrent(1),
    "TransformerEncoderLayer": lambda a, k: (
        4 * _arg(a, k, 0, "d_model") ** 2 + 2 * _arg(a, k, 0, "d_model") * _arg(a, k, 2, "dim_feedforward", 2048)
    ),
}

"""Values as plain bytes: how outputs and reference results leave an evaluation child.

A child ships a *payload*: a JSON header (``{"tree": ..., "tensors": [...], ...}``) and the raw
bytes of every tensor, back to back. The tree keeps the structure (exact ``tuple`` / ``list`` /
``dict`` with string keys, ``None``, ``int`` / ``float`` / ``bool``, tensor references); each
tensor entry gives dtype, shape, device type and byte count. Nothing is pickled: the receiving
side (the judge, :mod:`.judge`) rebuilds plain CPU tensors (``meta`` ones as meta) from the
bytes alone, after checking every field, so a payload can carry no object of the sender's
making. Only exact ``torch.Tensor`` / ``nn.Parameter`` leaves are encoded; anything else is
refused by :func:`encode_tree` before a byte is written.

Imports torch: only the zygote and its children import this module.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import torch

from ascend_kernel_gym.evaluation.wire import HEADER, WireError

_TENSOR = torch.Tensor
_PARAMETER = torch.nn.Parameter

#: the dtypes a payload may carry, by name
DTYPES: dict[str, torch.dtype] = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float64,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.complex64,
        torch.complex128,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
    )
}
#: how deep a tree may nest
MAX_DEPTH = 16
#: the most tensors one payload may carry
MAX_TENSORS = 4096
#: every tensor's bytes start at a multiple of this in a payload's body (any dtype can view them)
ALIGN = 16


def _dtype_name(dtype: torch.dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise WireError(f"tensors of dtype {name} cannot be compared")
    return name


def encode_tree(value: Any, tensors: list[torch.Tensor], depth: int = 0) -> Any:
    """The JSON form of ``value``; its tensors are appended to ``tensors`` (referenced by index).

    Types are checked with ``type(x) is ...`` before anything else is touched, so no method of a
    subclass runs here.
    """
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return {"v": value}
    if kind is float:
        return {"f": repr(value)}  # repr keeps nan / inf and every bit of the value
    if kind is _TENSOR or kind is _PARAMETER:
        if len(tensors) >= MAX_TENSORS:
            raise WireError(f"more than {MAX_TENSORS} tensors")
        tensors.append(value)
        return {"t": len(tensors) - 1}
    if depth >= MAX_DEPTH:
        raise WireError(f"values nest more than {MAX_DEPTH} deep")
    if kind is tuple or kind is list:
        items = [encode_tree(item, tensors, depth + 1) for item in value]
        return {"tuple" if kind is tuple else "list": items}
    if kind is dict:
        out = {}
        for key, item in dict.items(value):
            if type(key) is not str:
                raise WireError("dictionaries must have string keys")
            out[key] = encode_tree(item, tensors, depth + 1)
        return {"dict": out}
    raise WireError(f"a value of type {type.__dict__['__name__'].__get__(kind, type)} cannot be shipped")


def tensor_bytes(tensor: torch.Tensor) -> tuple[dict[str, Any], memoryview | bytes]:
    """``tensor``'s header entry and its bytes (a contiguous CPU copy; none for a meta tensor)."""
    entry = {
        "dtype": _dtype_name(tensor.dtype),
        "shape": [int(s) for s in tensor.shape],
        "device": tensor.device.type,
    }
    if tensor.device.type == "meta":
        entry["nbytes"] = 0
        return entry, b""
    flat = _TENSOR.reshape(_TENSOR.contiguous(_TENSOR.detach(tensor)), (-1,))
    flat = _TENSOR.to(flat, "cpu")
    data: memoryview | bytes = memoryview(_TENSOR.view(flat, torch.uint8).numpy()) if flat.numel() else b""
    entry["nbytes"] = len(data)
    return entry, data


def _padding(size: int) -> int:
    """Zero bytes after a tensor of ``size`` bytes, so that the next one starts aligned for any dtype."""
    return -size % ALIGN


#: how a device tensor is handed over instead of its bytes (:func:`.device_ipc.export_tensor`)
Exporter = Callable[[torch.Tensor], dict[str, Any]]
#: how the receiving side turns such an entry into a tensor: ``(entry["ipc"], dtype, shape)``
Importer = Callable[[dict[str, Any], torch.dtype, list[int]], torch.Tensor]


class ExportError(RuntimeError):
    """Raised by an :data:`Exporter` that cannot hand this tensor over (its bytes are sent instead)."""


def encode_payload_parts(
    header: dict[str, Any], tensors: list[torch.Tensor], export: Exporter | None = None, export_device: str = ""
) -> list[memoryview | bytes]:
    """:func:`encode_payload` as pieces to write one after the other (no joined copy of the bytes).

    With ``export``, tensors on ``export_device`` are described by ``export(tensor)`` (an
    ``"ipc"`` entry, no bytes) where it does not raise :class:`ExportError`.
    """
    entries: list[dict[str, Any]] = []
    blobs: list[memoryview | bytes] = []
    body_size = 0
    for tensor in tensors:
        if export is not None and tensor.device.type == export_device:
            try:
                shared = export(tensor)
            except ExportError:
                pass
            else:
                entries.append(
                    {"dtype": _dtype_name(tensor.dtype), "shape": [int(s) for s in tensor.shape],
                     "device": export_device, "nbytes": 0, "ipc": shared}
                )  # fmt: skip
                continue
        entry, data = tensor_bytes(tensor)
        entries.append(entry)
        blobs.append(data)
        pad = _padding(len(data))
        if pad:
            blobs.append(bytes(pad))
        body_size += len(data) + pad
    head = json.dumps({**header, "tensors": entries}).encode()
    return [HEADER.pack(len(head)), head, HEADER.pack(body_size), *blobs]


def encode_payload(header: dict[str, Any], tensors: list[torch.Tensor]) -> bytes:
    """``header`` (JSON) with the tensor table added, then the tensors' bytes: two frames.

    Each tensor's bytes start at a multiple of :data:`ALIGN` in the body (zero padding between).
    """
    return b"".join(encode_payload_parts(header, tensors))


def decode_tensors(
    header: dict[str, Any], body: bytes | bytearray, importer: Importer | None = None
) -> list[tuple[torch.Tensor, str]]:
    """The payload's tensors as CPU tensors (meta ones as meta), each with its device type.

    A ``bytearray`` body is used in place (the tensors share its memory); ``bytes`` are copied once.
    Entries handed over by reference (``"ipc"``) are accepted only with an ``importer``, which
    returns the tensor (and raises :class:`WireError` for an entry it refuses).
    """
    if not isinstance(body, bytearray):
        body = bytearray(body)
    entries = header.get("tensors")
    if not isinstance(entries, list) or len(entries) > MAX_TENSORS:
        raise WireError("payload has no valid tensor table")
    out: list[tuple[torch.Tensor, str]] = []
    offset = 0
    for entry in entries:
        if not isinstance(entry, dict):
            raise WireError("tensor entry is not an object")
        dtype = DTYPES.get(str(entry.get("dtype")))
        shape, device, nbytes = entry.get("shape"), entry.get("device"), entry.get("nbytes")
        if dtype is None or not isinstance(shape, list) or not isinstance(device, str) or type(nbytes) is not int:
            raise WireError("tensor entry has a bad dtype, shape, device or size")
        if len(shape) > 64 or not all(type(s) is int and 0 <= s < 1 << 40 for s in shape):
            raise WireError("tensor entry has a bad shape")
        numel = math.prod(shape)
        if "ipc" in entry:
            if importer is None or nbytes != 0 or not isinstance(entry["ipc"], dict):
                raise WireError("a tensor entry handed over by reference is not accepted here")
            out.append((importer(entry["ipc"], dtype, list(shape)), device))
            continue
        if device == "meta":
            if nbytes != 0:
                raise WireError("a meta tensor carries bytes")
            out.append((torch.empty(shape, dtype=dtype, device="meta"), device))
            continue
        itemsize = torch.empty((), dtype=dtype).element_size()
        end = offset + nbytes + _padding(nbytes)
        if nbytes != numel * itemsize or end > len(body):
            raise WireError("tensor entry's size does not match its shape")
        if nbytes:
            raw = torch.frombuffer(body, dtype=torch.uint8, count=nbytes, offset=offset)
            tensor = raw.view(dtype).reshape(shape)
        else:
            tensor = torch.empty(shape, dtype=dtype)
        offset = end
        out.append((tensor, device))
    if offset != len(body):
        raise WireError("payload carries bytes no tensor entry accounts for")
    return out


def decode_tree(node: Any, tensors: list[Any], depth: int = 0) -> Any:
    """The value of an :func:`encode_tree` node; tensor references index ``tensors``."""
    if not isinstance(node, dict) or len(node) != 1 or depth > MAX_DEPTH:
        raise WireError("malformed value tree")
    ((key, item),) = node.items()
    if key == "v":
        if item is None or type(item) in (bool, int, str):
            return item
        raise WireError("malformed scalar")
    if key == "f":
        try:
            return float(item)
        except (TypeError, ValueError):
            raise WireError("malformed float") from None
    if key == "t":
        if type(item) is not int or not 0 <= item < len(tensors):
            raise WireError("tensor reference out of range")
        return tensors[item]
    if key in ("tuple", "list") and isinstance(item, list):
        values = [decode_tree(v, tensors, depth + 1) for v in item]
        return tuple(values) if key == "tuple" else values
    if key == "dict" and isinstance(item, dict):
        return {str(k): decode_tree(v, tensors, depth + 1) for k, v in item.items()}
    raise WireError("malformed value tree")

"""A CUDA tensor of one process read by another on the same GPU (CUDA IPC, through the driver API).

The candidate's child hands its outputs to the judge in the reference child this way instead of
copying hundreds of megabytes through the host: :func:`export_tensor` describes a device tensor
by an IPC handle of the allocation that holds it, an offset, dtype, shape and strides (plain
JSON); :func:`import_tensor` opens the handle in the judge's process, checks that the described
view lies inside the allocation the driver reports, copies the bytes into memory of its own
(device to device) and closes the handle again. The copy is what the judge compares: whatever
the exporting process writes afterwards does not reach it.

The driver library is called through ``ctypes`` (``libcuda.so.1``): PyTorch's own sharing
(``torch.multiprocessing``) keeps a reference count in ``/dev/shm``, which every sandboxed child
has privately. Only the legacy IPC calls are used (``cuIpcGetMemHandle`` / ``cuIpcOpenMemHandle``);
memory from the expandable-segments allocator is not exportable that way, and the export fails
cleanly (:class:`IpcError`).

Imports torch: only evaluation children import this module.
"""

from __future__ import annotations

import ctypes
from typing import Any

import torch

from ascend_kernel_gym.evaluation.tensor_wire import ExportError

HANDLE_BYTES = 64
#: cuIpcOpenMemHandle's flag: enable peer access lazily (required by the API; one GPU here)
_LAZY_PEER_ACCESS = 1


class IpcError(ExportError):
    """A CUDA IPC step failed (the driver's error name in the message); ``malformed`` when the
    entry itself is bad (a handle that is no handle, a view outside its allocation): only a
    tampered sender makes those."""

    def __init__(self, message: str, malformed: bool = False) -> None:
        super().__init__(message)
        self.malformed = malformed


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


_DRIVER: ctypes.CDLL | None = None


def _driver() -> ctypes.CDLL:
    global _DRIVER
    if _DRIVER is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise IpcError(f"the CUDA driver library cannot be loaded: {exc}") from None
        ptr = ctypes.c_uint64
        lib.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(ptr), ctypes.POINTER(ctypes.c_size_t), ptr]
        lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(_Handle), ptr]
        lib.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(ptr), _Handle, ctypes.c_uint]
        lib.cuIpcCloseMemHandle.argtypes = [ptr]
        lib.cuMemcpyDtoD_v2.argtypes = [ptr, ptr, ctypes.c_size_t]
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _DRIVER = lib
    return _DRIVER


def _check(code: int, what: str) -> None:
    if code != 0:
        name = ctypes.c_char_p()
        _driver().cuGetErrorName(code, ctypes.byref(name))
        raise IpcError(f"{what} failed: {name.value.decode() if name.value else f'error {code}'}")


def _span_bytes(shape: list[int], stride: list[int], itemsize: int) -> int:
    """Bytes from a view's first element to one past its last (0 for an empty view)."""
    if any(s == 0 for s in shape):
        return 0
    return (sum((n - 1) * st for n, st in zip(shape, stride, strict=True)) + 1) * itemsize


def export_tensor(tensor: torch.Tensor) -> dict[str, Any]:
    """The IPC description of a CUDA ``tensor`` (its device work must be finished: synchronise first)."""
    if tensor.layout != torch.strided:
        raise IpcError("only dense tensors are handed over by handle")
    lib = _driver()
    try:
        address = int(torch.Tensor.data_ptr(tensor))
    except RuntimeError as exc:
        raise IpcError(f"no device address: {exc}") from None
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _check(
        lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(address)),
        "cuMemGetAddressRange",
    )
    handle = _Handle()
    _check(lib.cuIpcGetMemHandle(ctypes.byref(handle), base), "cuIpcGetMemHandle")
    return {
        "handle": ctypes.string_at(ctypes.addressof(handle), HANDLE_BYTES).hex(),
        "offset": address - base.value,
        "stride": [int(s) for s in torch.Tensor.stride(tensor)],
    }


def import_tensor(entry: dict[str, Any], dtype: torch.dtype, shape: list[int], device: torch.device) -> torch.Tensor:
    """A private contiguous copy, on ``device``, of the view an :func:`export_tensor` entry describes.

    Raises:
        IpcError: a malformed entry, a view outside the exported allocation, or a driver failure.
    """
    handle_hex, offset, stride = entry.get("handle"), entry.get("offset"), entry.get("stride")
    if not isinstance(handle_hex, str) or len(handle_hex) != 2 * HANDLE_BYTES or type(offset) is not int:
        raise IpcError("malformed IPC entry", malformed=True)
    if not isinstance(stride, list) or len(stride) != len(shape) or not all(type(s) is int and s >= 0 for s in stride):
        raise IpcError("malformed strides", malformed=True)
    try:
        raw = bytes.fromhex(handle_hex)
    except ValueError:
        raise IpcError("malformed IPC handle", malformed=True) from None
    itemsize = torch.empty((), dtype=dtype).element_size()
    span = _span_bytes(shape, stride, itemsize)
    if span == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    lib = _driver()
    opened = ctypes.c_uint64()
    _check(
        lib.cuIpcOpenMemHandle_v2(ctypes.byref(opened), _Handle.from_buffer_copy(raw), _LAZY_PEER_ACCESS),
        "cuIpcOpenMemHandle",
    )
    try:
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        _check(lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), opened), "cuMemGetAddressRange")
        if offset < 0 or offset % itemsize or offset + span > size.value - (opened.value - base.value):
            raise IpcError(f"the view ({span} bytes at offset {offset}) lies outside the shared allocation", True)
        raw_copy = torch.empty(span, dtype=torch.uint8, device=device)
        torch.cuda.synchronize(device)
        _check(
            lib.cuMemcpyDtoD_v2(
                ctypes.c_uint64(int(raw_copy.data_ptr())), ctypes.c_uint64(opened.value + offset), span
            ),
            "cuMemcpyDtoD",
        )
        torch.cuda.synchronize(device)
    finally:
        lib.cuIpcCloseMemHandle(opened)
    view = raw_copy.view(dtype).as_strided(shape, stride)
    return view.contiguous() if not view.is_contiguous() else view

"""Values as plain bytes (evaluation/tensor_wire.py, wire.split_payload): what a child ships is
rebuilt exactly, and nothing but well-formed plain data is accepted."""

from __future__ import annotations

import json
import math

import pytest
import torch

from ascend_kernel_gym.evaluation.tensor_wire import (
    DTYPES,
    decode_tensors,
    decode_tree,
    encode_payload,
    encode_tree,
)
from ascend_kernel_gym.evaluation.wire import HEADER, WireError, frame, split_payload


def _round_trip(value):
    tensors: list[torch.Tensor] = []
    tree = encode_tree(value, tensors)
    data = encode_payload({"tree": tree}, tensors)
    used, header, body = split_payload(data)
    assert used == len(data)
    decoded = decode_tensors(header, body)
    return decode_tree(header["tree"], [t for t, _ in decoded]), [d for _, d in decoded]


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_every_dtype_round_trips_bit_exactly(name: str) -> None:
    dtype = DTYPES[name]
    source = (torch.randn(3, 5, dtype=torch.float64) * 100).to(dtype)
    if dtype.is_floating_point:
        source.view(-1)[0] = float("nan")
        source.view(-1)[1] = float("-inf")
    back, devices = _round_trip(source.t())  # a non-contiguous view ships as its values
    assert devices == ["cpu"] and back.dtype == dtype and back.shape == (5, 3)
    assert torch.equal(back.view(torch.uint8), source.t().contiguous().view(torch.uint8))


def test_structures_scalars_and_meta_round_trip() -> None:
    value = (
        [torch.arange(4), None, 3, True, "x"],
        {"a": 1.5, "b": float("nan"), "c": -float("inf")},
        torch.empty(2, 3, device="meta"),
        torch.zeros(0, 4),
        torch.tensor(7.0),
        torch.nn.Parameter(torch.ones(2)),
    )
    back, devices = _round_trip(value)
    assert type(back) is tuple and type(back[0]) is list and type(back[1]) is dict
    assert torch.equal(back[0][0], torch.arange(4)) and back[0][1:] == [None, 3, True, "x"]
    assert back[1]["a"] == 1.5 and math.isnan(back[1]["b"]) and back[1]["c"] == -math.inf
    assert back[2].device.type == "meta" and back[2].shape == (2, 3)
    assert back[3].shape == (0, 4) and back[4].shape == () and float(back[4]) == 7.0
    assert type(back[5]) is torch.Tensor and devices == ["cpu", "meta", "cpu", "cpu", "cpu"]


class _Sub(torch.Tensor):
    pass


@pytest.mark.parametrize(
    "value",
    [
        torch.zeros(2).as_subclass(_Sub),
        {1: torch.zeros(1)},
        object(),
        type("T", (tuple,), {})((1,)),
        torch.zeros(2, dtype=torch.float8_e4m3fn) if hasattr(torch, "float8_e4m3fn") else object(),
    ],
    ids=["tensor_subclass", "int_key", "object", "tuple_subclass", "odd_dtype"],
)
def test_anything_but_plain_values_is_refused(value) -> None:
    with pytest.raises(WireError):
        encode_payload({}, _encoded(value))


def _encoded(value) -> list[torch.Tensor]:
    tensors: list[torch.Tensor] = []
    encode_tree(value, tensors)
    return tensors


def test_nesting_is_bounded() -> None:
    value: list = []
    for _ in range(40):
        value = [value]
    with pytest.raises(WireError):
        encode_tree(value, [])


def _payload(entries, body: bytes) -> tuple[dict, bytes]:
    return {"tensors": entries}, body


@pytest.mark.parametrize(
    "entries, body",
    [
        ([{"dtype": "float32", "shape": [2], "device": "cpu", "nbytes": 4}], b"\0" * 4),  # size != shape
        ([{"dtype": "float32", "shape": [1], "device": "cpu", "nbytes": 4}], b"\0" * 8),  # bytes left over
        ([{"dtype": "object", "shape": [1], "device": "cpu", "nbytes": 8}], b"\0" * 8),  # unknown dtype
        ([{"dtype": "float32", "shape": [-1], "device": "cpu", "nbytes": 0}], b""),  # negative size
        ([{"dtype": "float32", "shape": [1], "device": "meta", "nbytes": 4}], b"\0" * 4),  # meta with bytes
        ([{"dtype": "float32", "shape": [4], "device": "cpu", "nbytes": 16}], b"\0" * 8),  # body too short
        ("not a list", b""),
    ],
)
def test_malformed_tensor_tables_are_refused(entries, body) -> None:
    with pytest.raises(WireError):
        decode_tensors(*_payload(entries, body))


@pytest.mark.parametrize(
    "node",
    [{"t": 3}, {"t": "0"}, {"x": 1}, {"v": [1]}, {"f": "abc"}, {"v": 1, "f": "1"}, [1], {"list": "x"}],
)
def test_malformed_trees_are_refused(node) -> None:
    with pytest.raises(WireError):
        decode_tree(node, [torch.zeros(1)])


def test_split_payload_waits_for_both_frames_and_refuses_a_bad_header() -> None:
    data = encode_payload({"k": 1}, [torch.ones(3)])
    for cut in range(len(data)):
        assert split_payload(data[:cut]) is None
    used, header, body = split_payload(data + b"trailing")
    assert used == len(data) and header["k"] == 1 and len(body) == 16  # 12 bytes and their padding
    with pytest.raises(WireError):
        split_payload(frame(b"[1, 2]") + frame(b""))
    with pytest.raises(WireError):
        split_payload(frame(b"{not json") + frame(b""))
    assert HEADER.size == 8 and json.loads(data[8 : 8 + HEADER.unpack(data[:8])[0]])["k"] == 1


def test_tensors_handed_over_by_reference_need_an_importer_and_refusals_fall_back_to_bytes() -> None:
    from ascend_kernel_gym.evaluation.tensor_wire import ExportError, decode_tensors, encode_payload_parts
    from ascend_kernel_gym.evaluation.wire import split_payload

    shared = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    refused = torch.ones(4, dtype=torch.int32)
    kept: dict[str, torch.Tensor] = {}

    def export(t: torch.Tensor) -> dict:
        if t is refused:
            raise ExportError("not exportable")
        kept["x"] = t
        return {"key": "x"}

    parts = encode_payload_parts({"n": 1}, [shared, refused], export, "cpu")
    _, header, body = split_payload(b"".join(bytes(p) for p in parts))
    assert header["tensors"][0] == {
        "dtype": "float32",
        "shape": [2, 3],
        "device": "cpu",
        "nbytes": 0,
        "ipc": {"key": "x"},
    }
    assert header["tensors"][1]["nbytes"] == 16 and len(body) == 16  # only the refused one's bytes
    with pytest.raises(WireError, match="by reference"):
        decode_tensors(header, body)
    calls = []

    def importer(entry: dict, dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
        calls.append((entry, dtype, shape))
        return kept[entry["key"]].clone()

    (a, label_a), (b, _) = decode_tensors(header, body, importer)
    assert torch.equal(a, shared) and label_a == "cpu" and torch.equal(b, refused)
    assert calls == [({"key": "x"}, torch.float32, [2, 3])]
    header["tensors"][0]["nbytes"] = 24  # a handed-over tensor that also claims bytes
    with pytest.raises(WireError):
        decode_tensors(header, body, importer)

"""The candidate's output: plain copies, tensor checks, pairing with the reference (evaluation/outputs.py)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ascend_kernel_gym.evaluation.outputs import (  # noqa: E402
    OutputCheckError,
    check_output_tensors,
    detach_copy,
    flatten_outputs,
    output_leaves,
    plain_output,
)


def test_flatten_outputs_checks_structure() -> None:
    t = torch.ones(2)
    assert len(flatten_outputs((t, t), (t, t))) == 2
    with pytest.raises(OutputCheckError) as info:
        flatten_outputs(t, (t, t))
    assert info.value.kind == "wrong_output_type"
    with pytest.raises(OutputCheckError) as info:
        flatten_outputs((t,), (t, t))
    assert info.value.kind == "shape_mismatch"
    with pytest.raises(OutputCheckError):
        flatten_outputs(torch.nn.Parameter(t), t)  # subclasses are not plain tensors


class _RecordingList(list):
    touched = False

    def __iter__(self):
        _RecordingList.touched = True
        raise ValueError("candidate code ran")

    def __len__(self):
        _RecordingList.touched = True
        raise ValueError("candidate code ran")


class _RecordingTuple(tuple):
    def __iter__(self):
        _RecordingList.touched = True
        return super().__iter__()


def test_plain_output_copies_exact_containers_only() -> None:
    a, b = torch.ones(2), torch.zeros(3)
    out = plain_output([a, (b, 2.5)])
    assert type(out) is list and type(out[1]) is tuple
    assert out[0] is a and out[1][0] is b and out[1][1] == 2.5
    source = [a, b]
    copied = plain_output(source)
    assert copied == [a, b] and copied is not source  # a new container: later changes to the candidate's don't count
    assert plain_output(a) is a
    assert plain_output((a, None)) == (a, None)  # ``(out, None)`` where the reference returns that

    _RecordingList.touched = False
    for bad, what in [
        (_RecordingList([a]), "Boom-like list subclass"),
        ((a, _RecordingList([b])), "nested list subclass"),
        (_RecordingTuple((a, b)), "tuple subclass"),
        ({"out": a}, "dict"),
        (torch.nn.Parameter(a), "tensor subclass"),
    ]:
        with pytest.raises(OutputCheckError) as info:
            plain_output(bad)
        assert info.value.kind == "wrong_output_type", what
    assert not _RecordingList.touched, "the harness ran a method of the candidate's container"
    with pytest.raises(OutputCheckError, match=r"output\[1\] is an instance of _RecordingList \(a list subclass\)"):
        plain_output((a, _RecordingList([b])))
    loop: list = [a]
    loop.append(loop)
    with pytest.raises(OutputCheckError, match="nests"):
        plain_output(loop)


def test_check_output_tensors_refuses_non_dense_tensors() -> None:
    plain = torch.ones(2)
    assert check_output_tensors((plain, 3)) == [plain]
    cases = {
        "sparse_coo": torch.empty((3, 3), layout=torch.sparse_coo),
        "sparse_csr": torch.eye(3).to_sparse_csr(),
        "carries Python attributes": torch.ones(2),
    }
    cases["carries Python attributes"].note = "hidden"
    for expected, tensor in cases.items():
        with pytest.raises(OutputCheckError, match=expected) as info:
            check_output_tensors((plain, tensor))
        assert info.value.kind == "wrong_output_type"
        assert "output[1]" in info.value.message
    meta = torch.empty(2, device="meta")
    assert check_output_tensors(meta) == [meta]  # refused later, by the device check


def test_output_leaves_follow_flatten_outputs() -> None:
    t = torch.ones(2)
    value = (t, [t.clone(), 1.0])
    reference = (t, [t, 1.0])
    assert [label for label, _ in output_leaves(value)] == [label for _, _, label in flatten_outputs(value, reference)]
    assert [label for label, _ in output_leaves(t)] == ["output"]


def test_detach_copy_builds_plain_containers() -> None:
    ref = torch.max(torch.tensor([[1.0, 3.0], [4.0, 2.0]]), dim=1)  # a torch.return_types structseq
    copy = detach_copy(ref)
    assert type(copy) is tuple and torch.equal(copy[0], ref.values) and copy[0] is not ref.values
    assert type(detach_copy([torch.ones(1)])) is list

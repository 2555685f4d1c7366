"""Facts read from triton-ascend's IR (ascend/lower_ir.py), on IR the real triton-ascend 3.2.0 produced
(tests/ascend/lowering_corpus/ir/) and on small hand-written pieces."""

from __future__ import annotations

from pathlib import Path

from ascend_kernel_gym.ascend.lower_ir import adapter_facts, loc_lines, pointer_choices, shape_bytes

IR = Path(__file__).with_name("lowering_corpus") / "ir"


def test_shape_bytes_reads_static_and_dynamic_shapes() -> None:
    assert shape_bytes("128x64xf16") == ([128, 64], "f16", 16384)
    assert shape_bytes("1048576xf32") == ([1048576], "f32", 4 * 1048576)
    assert shape_bytes("?x64xf32")[2] is None
    assert shape_bytes("16xcomplex")[2] is None  # an element type without a known size


def test_matmul_ir_is_mix_with_its_operand_tiles_staged_for_the_cube() -> None:
    facts = adapter_facts((IR / "matmul.ttadapter.mlir").read_text())
    assert facts.core_type == "mix"
    assert [(a.shape, a.element, a.bytes) for a in facts.allocations] == [([64, 64], "f16", 8192)] * 2
    assert all(a.in_loop and a.cube_operand for a in facts.allocations)
    assert [a.line for a in facts.allocations] == [25, 28]  # the two tl.load lines of the kernel
    assert facts.cube_bytes == 16384 and facts.vector_bytes == 0
    assert facts.matmuls == [
        {"batched": False, "a": "64x64xf16", "b": "64x64xf16", "acc": "64x64xf32", "acc_bytes": 16384}
    ]
    assert facts.accumulator_bytes == 16384
    assert facts.loops == 1 and facts.scalar_access_loops == 0


def test_gather_ir_shows_the_scalar_access_loop() -> None:
    facts = adapter_facts((IR / "gather.ttadapter.mlir").read_text())
    assert facts.core_type == "aiv"
    assert [(a.bytes, a.in_loop, a.cube_operand) for a in facts.allocations] == [(4096, False, False)]
    assert facts.vector_bytes == 4096
    assert facts.scalar_access_loops == 1 and facts.scalar_accesses == 1024  # one scalar load per index
    assert facts.discrete_ops >= 1


def test_allocation_nesting_and_unknown_trip_counts() -> None:
    ir = "\n".join(
        [
            'func.func @k(%arg0: i32) attributes {mix_mode = "aiv"} {',
            "  %c0 = arith.constant 0 : index",
            "  %top = memref.alloc() : memref<256xf32>",
            "  scf.if %cond {",
            "    %in_if = memref.alloc() : memref<8xf32>",
            "  } else {",
            "    %in_else = memref.alloc() : memref<8xf16>",
            "  }",
            "  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %t) -> (tensor<4xf32>) {",
            "    %in_loop = memref.alloc() : memref<?xf32>",
            "    scf.yield %a : tensor<4xf32>",
            "  } {ExtractedLoadOrStore}",
            "  %after = memref.alloc() : memref<4xi8>",
            "}",
        ]
    )
    facts = adapter_facts(ir)
    where = {a.name: a.in_loop for a in facts.allocations}
    assert where == {"%top": False, "%in_if": False, "%in_else": False, "%in_loop": True, "%after": False}
    assert facts.dynamic_allocations == 1 and facts.vector_bytes == 1024 + 32 + 16 + 4
    assert facts.scalar_access_loops == 1 and facts.scalar_accesses is None  # %n is not a constant


def test_pointer_choices_find_selects_and_branches_with_their_lines() -> None:
    assert pointer_choices((IR / "where_pointer.ttir.mlir").read_text()) == [
        {"kind": "select", "line": 44, "in_loop": False}
    ]
    assert pointer_choices((IR / "while_if_pointer.ttir.mlir").read_text()) == [
        {"kind": "branch", "line": 57, "in_loop": True}
    ]
    plain = "%0 = arith.select %c, %a, %b : tensor<4xi1>, tensor<4xf32> loc(#loc1)\n"
    assert pointer_choices(plain) == []  # a select of values, not of pointers


def test_loc_lines_reads_the_location_table() -> None:
    text = '#loc1 = loc("kernel.py":12:4)\n#loc12 = loc("/x/kernel.py":7:20)\n#loc3 = loc(unknown)\n'
    assert loc_lines(text) == {"#loc1": 12, "#loc12": 7}

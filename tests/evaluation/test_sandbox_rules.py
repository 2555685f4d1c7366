"""The sandbox policy tables (evaluation/sandbox_rules.py): dotted-path refusals and the tables' consistency.

How the static stage and the runtime guard apply these tables is tested in test_static.py and
test_guard.py; here, the lookup itself and the invariants a table edit could break.
"""

from __future__ import annotations

import pytest

from ascend_kernel_gym.evaluation import sandbox_rules as rules


@pytest.mark.parametrize(
    ("path", "refused_by"),
    [
        ("torch.compile", "torch.compile"),
        ("torch.cuda.graphs.CUDAGraph", "torch.cuda.graphs"),  # anything below a refused prefix
        ("torch.utils.cpp_extension.load_inline", "torch.utils"),
        ("torch.manual_seed", "torch.manual_seed"),
        ("triton.runtime.driver.active", None),  # prefix of nothing refused
        ("triton.tools.disasm", "triton.tools"),
        ("triton.tools.tensor_descriptor", None),  # the one allowed path below triton.tools
        ("triton.tools.tensor_descriptor.TensorDescriptor", None),
        ("torch.jitter", None),  # "torch.jit" refuses a path segment, not a string prefix
        ("torch.utilsx", None),
        ("torch.relu", None),
        ("torch.cuda.synchronize", None),
        ("triton.language.load", None),
    ],
)
def test_a_path_is_refused_exactly_below_its_prefix(path: str, refused_by: str | None) -> None:
    expected = None if refused_by is None else rules.FORBIDDEN_PATHS[refused_by]
    assert rules.forbidden_path_reason(path) == expected


def test_seeding_is_refused_with_the_advice_to_drop_the_call() -> None:
    for path in ("torch.manual_seed", "torch.seed", "torch.cuda.manual_seed_all"):
        assert rules.forbidden_path_reason(path) == rules.SEEDING_REFUSED
    assert "drop the call" in rules.SEEDING_REFUSED


def test_allowed_and_forbidden_modules_never_overlap() -> None:
    assert not rules.ALLOWED_IMPORT_ROOTS & rules.FORBIDDEN_MODULES
    assert {"torch", "triton", "math"} <= rules.ALLOWED_IMPORT_ROOTS
    assert {"os", "sys", "subprocess", "socket", "ctypes", "importlib", "builtins", "numpy", "pickle"} <= (
        rules.FORBIDDEN_MODULES
    )


def test_every_refused_path_lies_under_an_importable_root_and_every_exception_under_a_refusal() -> None:
    # a refused path whose root cannot be imported anyway would be dead policy (a typo, most likely)
    assert {path.split(".")[0] for path in rules.FORBIDDEN_PATHS} <= rules.ALLOWED_IMPORT_ROOTS
    for allowed in rules.ALLOWED_PATHS:
        assert any(allowed.startswith(prefix + ".") for prefix in rules.FORBIDDEN_PATHS), allowed


def test_dangerous_module_names_are_refused_as_attributes_too() -> None:
    # ``[torch][0].sys`` spells the module as an attribute the resolver cannot follow
    for name in ("os", "sys", "subprocess", "builtins", "importlib", "ctypes", "gc", "inspect", "numpy"):
        assert name in rules.FORBIDDEN_ATTR_NAMES, name
    assert {"_getframe", "settrace", "import_module"} <= rules.FORBIDDEN_ATTR_NAMES


def test_np_is_a_forbidden_module_name_but_not_a_forbidden_attribute() -> None:
    # issue 22: ``self.np`` (number of programs) is an honest attribute; ``np`` reached through a
    # module is a resolved path, refused by the module rules (static stage and the live check)
    assert "np" in rules.FORBIDDEN_MODULES and "np" not in rules.FORBIDDEN_ATTR_NAMES
    assert "numpy" in rules.FORBIDDEN_ATTR_NAMES
    assert rules.ATTRIBUTE_WORDS <= rules.FORBIDDEN_MODULES  # only module names are left out


def test_operator_tables_nest_and_hooks_are_refused_as_keywords_and_attributes() -> None:
    assert rules.REARRANGING_TORCH_OPS <= rules.DATA_TORCH_OPS
    assert set(rules.FORBIDDEN_KEYWORDS) == {"pre_hook", "post_hook", "do_bench"}
    assert all(rules.FORBIDDEN_ATTRS[name] == reason for name, reason in rules.FORBIDDEN_KEYWORDS.items())
    assert {"eval", "exec", "compile", "open", "__import__", "globals"} <= set(rules.FORBIDDEN_BUILTINS)
    assert not rules.ATTR_BUILTINS & set(rules.FORBIDDEN_BUILTINS)  # allowed, but only as direct calls


def test_every_refusal_says_why() -> None:
    tables = [rules.FORBIDDEN_PATHS, rules.FORBIDDEN_BUILTINS, rules.FORBIDDEN_ATTRS, rules.FORBIDDEN_KERNEL_ATTRS]
    for table in tables:
        assert all(isinstance(reason, str) and reason.strip() for reason in table.values())

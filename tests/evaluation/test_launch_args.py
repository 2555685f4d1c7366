"""Kernel launch arguments (evaluation/launch_args.py), issue 22 point 5: IntEnum members and
namedtuple classes with their own properties are honest arguments; reading them runs nothing of
the candidate's, and Triton gets plain ints in place of the enum members."""

from __future__ import annotations

import collections
import enum
import typing

import pytest
import torch

from ascend_kernel_gym.evaluation.launch_args import NOT_A_NAMEDTUPLE, LaunchArgumentPolicy, NamedtupleShape


@pytest.fixture(scope="module")
def policy() -> LaunchArgumentPolicy:
    return LaunchArgumentPolicy()


RAN: list[str] = []


class Act(enum.IntEnum):
    IDENTITY = 0
    RELU = 1

    @property
    def label(self) -> str:
        RAN.append("Act.label")
        return self.name.lower()

    def __index__(self) -> int:  # never called: the harness reads the int through int's own slot
        RAN.append("Act.__index__")
        return 7

    def __repr__(self) -> str:
        RAN.append("Act.__repr__")
        return "Act?"


class Flags(enum.IntFlag):
    A = 1
    B = 2


class Tiling(typing.NamedTuple):
    n: int
    block: int = 128
    LIMIT = 4096

    @property
    def programs(self) -> int:
        RAN.append("Tiling.programs")
        return -(-self.n // self.block)

    def describe(self) -> str:
        RAN.append("Tiling.describe")
        return "tiling"

    @staticmethod
    def build(n: int) -> Tiling:
        return Tiling(n)


class Buffers(typing.NamedTuple):
    src: torch.Tensor
    dst: torch.Tensor
    mode: int


def test_int_enum_members_pass_and_become_plain_ints(policy: LaunchArgumentPolicy) -> None:
    RAN.clear()
    assert policy.problem(Act.RELU) is None and policy.problem(Flags.A | Flags.B) is None
    plain = policy.plain(Act.RELU)
    assert type(plain) is int and plain == 1  # the int value, not what ``__index__`` says
    assert type(policy.plain(Flags.A | Flags.B)) is int and policy.plain(Flags.A | Flags.B) == 3
    x = torch.zeros(3)
    args, kwargs = policy.plain_arguments((x, Act.IDENTITY, (Act.RELU, 2)), {"ACT": Act.RELU, "n": 4})
    assert args[0] is x and type(args[1]) is int and args[1] == 0
    assert type(args[2]) is tuple and [type(v) for v in args[2]] == [int, int]
    assert type(kwargs["ACT"]) is int and kwargs["n"] == 4
    assert policy.check("act_kernel", [("x_ptr", x), ("ACT", Act.RELU)]) is None
    assert RAN == [], RAN


def test_int_subclasses_that_are_not_int_enums_are_refused(policy: LaunchArgumentPolicy) -> None:
    class Count(int):
        pass

    class Colour(enum.Enum):  # not an int
        RED = 1

    class Text(str, enum.Enum):
        A = "a"

    for value in (Count(3), Colour.RED, Text.A):
        refusal = policy.check("k", [("ACT", value)])
        assert refusal is not None and "argument `ACT`" in refusal.message, value
        assert policy.plain(value) is value


def test_an_int_enum_that_imitates_a_tensor_is_refused(policy: LaunchArgumentPolicy) -> None:
    class Slot(enum.IntEnum):
        OUT = 0

        def data_ptr(self) -> int:
            RAN.append("Slot.data_ptr")
            return 0

    RAN.clear()
    refusal = policy.check("k", [("out_ptr", Slot.OUT)])
    assert refusal is not None and "`Slot`, not a torch.Tensor" in refusal.message
    assert RAN == []


def test_namedtuples_with_properties_pass_without_running_them(policy: LaunchArgumentPolicy) -> None:
    RAN.clear()
    x = torch.zeros(4)
    assert policy.problem(Tiling(1000, 256)) is None
    assert policy.problem(Buffers(x, x.clone(), 1)) is None
    assert policy.problem(collections.namedtuple("Pair", "a b")(x, 3)) is None
    mixed = Buffers(x, x, Act.RELU)
    assert policy.problem(mixed) is None
    plain = policy.plain(mixed)
    assert type(plain) is Buffers and plain.src is x and type(plain.mode) is int and plain.mode == 1
    assert policy.plain(Tiling(5)) == (5, 128)
    assert RAN == [], RAN


def test_namedtuples_whose_items_are_refused_say_which(policy: LaunchArgumentPolicy) -> None:
    class Sub(torch.Tensor):
        pass

    refusal = policy.check("k", [("bufs", Buffers(torch.zeros(2), torch.zeros(2).as_subclass(Sub), 0))])
    assert refusal is not None and "holds an item that is a `Sub`" in refusal.message


def _odd_namedtuples() -> dict[str, type]:
    class Probed(typing.NamedTuple):
        a: int

        @property
        def dtype(self) -> torch.dtype:
            return torch.float32

    class Private(typing.NamedTuple):
        a: int

        def _helper(self) -> int:
            return 1

    class Dunder(typing.NamedTuple):
        a: int

        def __len__(self) -> int:  # what Triton's tuple handling would call
            return 5

    class Holder(typing.NamedTuple):
        a: int
        table = [1, 2]  # noqa: RUF012 - a mutable class attribute, the point of the case

    class Replaced(typing.NamedTuple):
        a: int

    Replaced._make = classmethod(lambda cls, items: None)  # type: ignore[method-assign,assignment]

    class Getter(typing.NamedTuple):
        a: int

    Getter.a = property(lambda self: 5)  # type: ignore[assignment,misc]

    class Fields(typing.NamedTuple):
        a: int

    Fields._fields = property(lambda self: ("a",))  # type: ignore[assignment,misc]
    return {
        "that defines `dtype`": Probed,
        "that defines `_helper`": Private,
        "that defines `__len__`": Dunder,
        "that holds a `list` as `table`": Holder,
        "that has a `_make` of its own": Replaced,
        "that replaces the accessor of its field `a`": Getter,
        "`Fields` object, not a tensor or a plain value": Fields,  # a property as ``_fields``: no namedtuple
    }


def test_namedtuples_that_change_what_triton_calls_are_refused(policy: LaunchArgumentPolicy) -> None:
    for why, kind in _odd_namedtuples().items():
        value = tuple.__new__(kind, (1,))
        refusal = policy.check("k", [("cfg", value)])
        assert refusal is not None and why in refusal.message, (why, refusal and refusal.message)
        assert policy.plain(value) is value


def test_namedtuple_shape_reads_nothing_of_the_class() -> None:
    shape = NamedtupleShape()
    ran: list[str] = []

    class Meta(type):
        def __getattribute__(cls, name):
            ran.append(name)
            return super().__getattribute__(name)

    class Tricky(tuple, metaclass=Meta):
        _fields = ("a",)

    assert shape.problem(Tricky) == NOT_A_NAMEDTUPLE
    assert shape.problem(tuple) == NOT_A_NAMEDTUPLE
    assert shape.problem(Tiling) is None
    assert ran == []

"""``core.record`` behaves as ``dataclasses`` for what the package uses.

Each case builds the same class twice, once with ``dataclasses`` and once with
``core.record``, and compares what a caller sees: construction (positional,
keyword, defaults, factories, the TypeError of a bad call), equality, hashing,
``repr``, frozen assignment, ``replace``, ``fields`` and ``asdict``.
"""

from __future__ import annotations

import dataclasses

import pytest

from lsp_bridge.core import record
from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.record import FrozenInstanceError


def pair(frozen: bool = True):
    def make(dataclass, field):
        @dataclass(frozen=frozen)
        class Point:
            x: int
            y: int = 0
            tags: tuple[str, ...] = field(default=())
            extra: list[int] = field(default_factory=list, compare=False, repr=False)

        return Point

    return make(dataclasses.dataclass, dataclasses.field), make(record.dataclass, record.field)


def calls():
    return [((1,), {}), ((1, 2), {}), ((), {"x": 3, "y": 4}), ((1,), {"tags": ("a",)}),
            ((1, 2, ("t",), [5]), {}), ((1,), {"extra": [9]})]


@pytest.mark.parametrize("count", [1, 40])  # the shared __init__, then the compiled one
def test_instances_behave_as_dataclass_instances(count: int):
    Std, Ours = pair()
    for _ in range(count):
        for args, kwargs in calls():
            std, ours = Std(*args, **kwargs), Ours(*args, **kwargs)
            assert repr(ours) == repr(std)
            assert dataclasses.astuple(ours) == dataclasses.astuple(std)
            assert dataclasses.asdict(ours) == dataclasses.asdict(std)
            assert ours == Ours(*args, **kwargs) and hash(ours) == hash(Ours(*args, **kwargs))
            assert ours != Ours(x=-1)
            assert ours != std  # another class, as between two dataclasses
    a, b = Ours(1), Ours(1)
    assert a.extra is not b.extra  # a fresh list each time
    assert Ours(1, extra=[1]) == Ours(1, extra=[2])  # compare=False


@pytest.mark.parametrize("count", [1, 40])
def test_bad_calls_raise_the_same_type_error(count: int):
    Std, Ours = pair()
    for _ in range(count):
        Ours(1)
    for args, kwargs in [((), {}), ((1,), {"x": 2}), ((1,), {"z": 1}), ((1, 2, 3, 4, 5), {})]:
        with pytest.raises(TypeError) as std:
            Std(*args, **kwargs)
        with pytest.raises(TypeError) as ours:
            Ours(*args, **kwargs)
        assert str(ours.value).split("() ", 1)[1] == str(std.value).split("() ", 1)[1]


def test_frozen_and_mutable():
    _, Ours = pair(frozen=True)
    point = Ours(1)
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'x'"):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del point.y  # type: ignore[misc]
    _, Mutable = pair(frozen=False)
    box = Mutable(1)
    box.x = 5
    assert box.x == 5 and Mutable.__hash__ is None  # eq without frozen: unhashable, as a dataclass


def test_replace_fields_and_match_args():
    Std, Ours = pair()
    point = Ours(1, 2, ("a",))
    assert record.replace(point, y=7) == Ours(1, 7, ("a",))
    assert dataclasses.replace(point, y=7) == Ours(1, 7, ("a",))
    assert [f.name for f in dataclasses.fields(point)] == [f.name for f in dataclasses.fields(Std)]
    assert dataclasses.is_dataclass(Ours) and Ours.__match_args__ == Std.__match_args__
    with pytest.raises(TypeError):
        record.replace(point, z=1)
    match point:
        case Ours(1, y):
            assert y == 2
        case _:
            pytest.fail("no match")


def test_post_init_and_init_false():
    @record.dataclass
    class Folded:
        items: tuple[str, ...]
        lowered: tuple[str, ...] = record.field(init=False)

        def __post_init__(self) -> None:
            self.lowered = tuple(i.lower() for i in self.items)

    assert Folded(("A", "b")).lowered == ("a", "b")
    with pytest.raises(TypeError):
        Folded(("A",), ("x",))  # type: ignore[call-arg]


def test_the_package_records_keep_their_dataclass_surface():
    diagnostic = Diagnostic("error", "code", "message", file="f.toml")
    assert diagnostic == Diagnostic("error", "code", "message", file="f.toml")
    assert repr(diagnostic) == ("Diagnostic(severity='error', code='code', message='message', file='f.toml', "
                                "range=None, tags=())")
    assert dataclasses.replace(diagnostic, severity="warning").severity == "warning"
    assert {diagnostic: 1}[Diagnostic("error", "code", "message", file="f.toml")] == 1


def test_lazy_pattern_compiles_on_first_use():
    pattern = record.lazy_pattern(r"(a+)b", 0)
    assert "_compiled" not in vars(pattern)
    assert pattern.match("aab").group(1) == "aa" and pattern.fullmatch("ab") and not pattern.search("b")
    assert pattern.pattern == r"(a+)b" and pattern.sub("x", "aab!") == "x!"


def test_named_tuple_and_literals_at_run_time():
    class Info(record.NamedTuple):
        """Counts."""

        hits: int
        misses: int = 0

    info = Info(1)
    assert info == (1, 0) and info._replace(misses=2).misses == 2 and Info.__doc__ == "Counts."
    from typing import Literal

    from lsp_bridge.core.settings import Verdict

    assert Verdict == Literal["allow", "request", "deny"]

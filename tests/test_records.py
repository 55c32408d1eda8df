"""`core.records.record`: the value classes every layer returns behave as the frozen
dataclasses they replaced (construction, defaults, equality, hashing, repr, frozenness,
`evolve`, copying), and a class that `dataclass` would refuse is refused."""

from __future__ import annotations

import copy
import pickle

import pytest

from vaultmem.core.records import FrozenError, evolve, field, record


@record
class Point:
    x: int
    label: str = "p"
    tags: list[str] = field(default_factory=list)
    cache: int = field(default=0, repr=False, compare=False)


@record(frozen=False)
class Counter:
    name: str
    n: int = 0


def test_construction_by_position_and_keyword_in_field_order() -> None:
    assert Point(1) == Point(x=1) == Point(1, "p", [])
    p = Point(2, tags=["a"])
    assert (p.x, p.label, p.tags, p.cache) == (2, "p", ["a"], 0)
    assert Point.__match_args__ == ("x", "label", "tags", "cache")


def test_each_instance_gets_its_own_default_from_the_factory() -> None:
    a, b = Point(1), Point(1)
    a.tags.append("only a")
    assert b.tags == []


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: Point(), "missing the argument 'x'"),  # type: ignore[call-arg]
        (lambda: Point(1, x=2), "two values for 'x'"),  # type: ignore[misc]
        (lambda: Point(1, colour="red"), "unexpected argument 'colour'"),  # type: ignore[call-arg]
        (lambda: Point(1, "a", [], 0, "extra"), "takes 4 arguments, 5 given"),  # type: ignore[call-arg]
    ],
)
def test_bad_construction_says_what_is_wrong(make: object, says: str) -> None:
    with pytest.raises(TypeError, match=says):
        make()  # type: ignore[operator]


def test_frozen_records_refuse_assignment_and_hash_by_their_compared_fields() -> None:
    p = Point(1, "a")
    with pytest.raises(FrozenError, match="cannot assign to field 'x'"):
        p.x = 5  # type: ignore[misc]
    with pytest.raises(FrozenError):
        del p.label
    assert Point(1, "a", cache=1) == Point(1, "a", cache=2)  # compare=False is left out
    assert Point(1) != Point(2) and Point(1).__eq__((1, "p", [], 0)) is NotImplemented

    @record
    class Key:
        a: int
        b: str = ""

    assert hash(Key(1, "x")) == hash(Key(1, "x")) and len({Key(1), Key(1), Key(2)}) == 2


def test_mutable_records_assign_and_are_unhashable() -> None:
    c = Counter("turns")
    c.n += 1
    assert c == Counter("turns", 1)
    with pytest.raises(TypeError):
        hash(c)


def test_repr_is_the_dataclass_one_without_hidden_fields() -> None:
    assert repr(Point(1, cache=9)) == "Point(x=1, label='p', tags=[])"


def test_evolve_copies_with_changes_and_leaves_the_original() -> None:
    p = Point(1, "a")
    q = evolve(p, label="b")
    assert (p.label, q.label, q.x) == ("a", "b", 1)
    with pytest.raises(TypeError, match="unexpected argument"):
        evolve(p, nope=1)


def test_records_pickle_and_copy() -> None:
    p = Point(3, "c", ["t"])
    assert pickle.loads(pickle.dumps(p)) == p
    assert copy.copy(p) == p and copy.deepcopy(p).tags is not p.tags


def test_what_dataclass_refuses_is_refused() -> None:
    with pytest.raises(ValueError, match="mutable default"):

        @record
        class Shared:
            items: list[int] = []  # noqa: RUF012

    with pytest.raises(TypeError, match="without a default after one with"):

        @record
        class Order:
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(ValueError, match="both default and default_factory"):
        field(default=1, default_factory=int)  # type: ignore[call-overload]

"""trainproof.frozen.record: every class it makes behaves as the dataclass it stands for
(`@dataclass(frozen=..., slots=..., weakref_slot=...)` over the same fields): signature,
defaults, repr, equality, hash, frozenness and its errors, pickling, copying, replace."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import weakref

import pytest

from trainproof import config, frozen, model
from trainproof.commands.common import LogOptions
from trainproof.parsers.base import RawLog
from trainproof.rules.base import Rule

# (class, the dataclass flags it stands for)
RECORDS = [(model.Skip, {"slots": True}), (model.Series, {"slots": True, "weakref_slot": True}),
           (model.Run, {}), (model.Location, {"slots": True}), (model.Finding, {"slots": True}),
           (model.Report, {}), (model.ReportSet, {}), (config.Config, {}), (Rule, {}), (LogOptions, {})]


def _reference(cls: type, flags: dict[str, bool], frozen_: bool = True) -> type:
    """The dataclass the record stands for, made by dataclasses from its fields."""
    spec = []
    for f in dataclasses.fields(cls):
        kw = {} if f.default is dataclasses.MISSING else {"default": f.default}
        if f.default_factory is not dataclasses.MISSING:
            kw["default_factory"] = f.default_factory
        spec.append((f.name, f.type, dataclasses.field(**kw)))
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=frozen_, **flags)


def _required(cls: type) -> list[object]:
    return [f"{f.name}-value" for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]


def _outcome(call):  # what a call returns, or the type and message of what it raises
    try:
        return ("value", call())
    except Exception as exc:
        return ("raised", type(exc), str(exc))


@pytest.mark.parametrize(("cls", "flags"), RECORDS, ids=lambda x: getattr(x, "__name__", ""))
def test_a_record_is_the_dataclass_it_stands_for(cls: type, flags: dict[str, bool]) -> None:
    ref = _reference(cls, flags)
    assert str(inspect.signature(cls)) == str(inspect.signature(ref))
    assert cls.__match_args__ == ref.__match_args__
    assert getattr(cls, "__slots__", None) == getattr(ref, "__slots__", None)
    assert dataclasses.is_dataclass(cls)
    args = _required(cls)
    ours, theirs = cls(*args), ref(*args)
    assert repr(ours) == repr(theirs)
    for f in dataclasses.fields(cls):  # every default, a factory's made afresh
        assert getattr(ours, f.name) == getattr(theirs, f.name)
        if f.default_factory is not dataclasses.MISSING:
            assert getattr(ours, f.name) is not getattr(cls(*args), f.name)
    assert ours == cls(*args) and (ours != cls(*[f"{a}!" for a in args]) or not args)
    assert ours.__eq__(theirs) is NotImplemented and (ours == theirs) is False
    assert _outcome(lambda: hash(ours)) == _outcome(lambda: hash(theirs))  # the same tuple, or unhashable
    name = dataclasses.fields(cls)[0].name
    assert _outcome(lambda: setattr(ours, name, 1)) == _outcome(lambda: setattr(theirs, name, 1))
    assert _outcome(lambda: delattr(ours, name)) == _outcome(lambda: delattr(theirs, name))
    other = _outcome(lambda: setattr(ours, "other", 1)), _outcome(lambda: setattr(theirs, "other", 1))
    if flags.get("slots") and other[1][1] is TypeError:
        # dataclasses (3.11) refuse a new attribute on a slotted frozen instance with a TypeError of
        # their own making (their __setattr__ names the class before slots replaced it); a record
        # refuses it as it refuses a field
        assert other[0] == ("raised", dataclasses.FrozenInstanceError, "cannot assign to field 'other'")
    else:
        assert other[0] == other[1]
    assert isinstance(_outcome(lambda: setattr(ours, name, 1))[1], type) and \
        issubclass(_outcome(lambda: setattr(ours, name, 1))[1], dataclasses.FrozenInstanceError)
    changed = dataclasses.replace(ours, **{name: "changed"})
    assert repr(changed) == repr(dataclasses.replace(theirs, **{name: "changed"}))
    assert pickle.loads(pickle.dumps(ours)) == ours and copy.copy(ours) == ours and copy.deepcopy(ours) == ours
    assert (weakref.ref(ours)() is ours) if flags.get("weakref_slot") or not flags.get("slots") else True
    kw = {f.name: f"{f.name}-kw" for f in dataclasses.fields(cls)}
    assert repr(cls(**kw)) == repr(ref(**kw)) and hash(cls(**kw)) == hash(ref(**kw))


def test_a_record_nested_in_itself_repr_as_dataclasses_do() -> None:
    box: list[object] = []
    ours = model.Location(box)  # type: ignore[arg-type]
    box.append(ours)
    theirs_cls = _reference(model.Location, {"slots": True})
    box2: list[object] = []
    theirs = theirs_cls(box2)
    box2.append(theirs)
    assert repr(ours) == repr(theirs) == "Location(file=[...], step=None, line=None)"


def test_an_unfrozen_record_is_unhashable_and_mutable_as_dataclasses_make_it() -> None:
    ref = _reference(RawLog, {}, frozen_=False)
    assert str(inspect.signature(RawLog)) == str(inspect.signature(ref))
    ours, theirs = RawLog({"a": 1}, 3), ref({"a": 1}, 3)  # type: ignore[dict-item]
    ours.records = theirs.records = 4
    assert repr(ours) == repr(theirs) and ours == RawLog({"a": 1}, 4) and ours.notes is not RawLog({}, 0).notes
    assert RawLog.__hash__ is None and ref.__hash__ is None
    @frozen.record(frozen=False)
    class Box:
        items: list[int] = dataclasses.field(default_factory=list)
        n: int = 0

        def __init__(self, items: list[int] = frozen.FACTORY, n: int = 0) -> None:
            self.items = [] if items is frozen.FACTORY else items
            self.n = n

    ref = _reference(Box, {}, frozen_=False)
    assert str(inspect.signature(Box)) == str(inspect.signature(ref))
    box = Box()
    box.n = 3
    assert repr(box) == repr(ref(n=3)).replace(ref.__qualname__, Box.__qualname__)
    assert Box.__hash__ is None and ref.__hash__ is None
    assert box == Box([], 3) and box != Box([1], 3)


def test_a_record_must_write_its_init_and_nothing_else_it_is_given() -> None:
    with pytest.raises(TypeError, match="writes its own __init__"):
        @frozen.record()
        class NoInit:
            x: int

    with pytest.raises(TypeError, match="defines __repr__"):
        @frozen.record()
        class OwnRepr:
            x: int

            def __init__(self, x: int) -> None:
                object.__setattr__(self, "x", x)

            def __repr__(self) -> str:
                return "mine"


def _named_tuples() -> list[type]:
    """Every named tuple class defined in a module `epoch` or the rules import (each defined at
    its module's top level)."""
    import sys

    import trainproof.commands.epoch  # noqa: F401
    from trainproof.rules import catalogue

    catalogue()  # every rule module, the lazy groups' included
    found = {value for name, module in list(sys.modules.items()) if name.startswith("trainproof.")
             for value in vars(module).values()
             if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")
             and value.__module__ == name}
    assert len(found) >= 20  # the 23 of #14, and any added since
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


@pytest.mark.parametrize("cls", _named_tuples(), ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_named_tuple_is_the_one_typing_makes(cls: type) -> None:
    import typing

    ref = typing.NamedTuple(cls.__name__, list(cls.__annotations__.items()))  # type: ignore[misc]
    ref.__new__.__defaults__ = cls.__new__.__defaults__
    ref._field_defaults = dict(cls._field_defaults)  # type: ignore[attr-defined]
    assert cls.__mro__[1:] == (tuple, object) and cls._fields == ref._fields  # type: ignore[attr-defined]
    assert list(cls.__annotations__) == list(cls._fields)  # type: ignore[attr-defined]
    def params(c: type) -> list[tuple[object, ...]]:  # typing's annotations are ForwardRefs of the same text
        return [(p.name, p.kind, p.default, getattr(p.annotation, "__forward_arg__", p.annotation))
                for p in inspect.signature(c).parameters.values()]

    assert params(cls) == params(ref)
    args = [f"{name}-value" for name in cls._fields]  # type: ignore[attr-defined]
    ours, theirs = cls(*args), ref(*args)
    assert ours == theirs == tuple(args) and hash(ours) == hash(theirs)
    assert repr(ours) == repr(theirs) and ours._asdict() == theirs._asdict()  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(ours)) == ours and type(pickle.loads(pickle.dumps(ours))) is cls
    assert ours._replace(**{cls._fields[0]: 1}) == theirs._replace(**{cls._fields[0]: 1})  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        ours.__dict__  # noqa: B018  # slotted: no instance dict, as typing's
    assert cls.__doc__ and cls.__qualname__ == cls.__name__


def test_a_named_tuple_keeps_its_body_and_refuses_what_typing_refuses() -> None:
    class Point(frozen.NamedTuple):
        """A point."""

        x: float
        y: float = 0.0
        kind: str = "plain"

        @property
        def norm(self) -> float:
            return abs(self.x) + abs(self.y)

    assert Point(1).norm == 1 and Point(1, -2).norm == 3 and Point(1) == (1, 0.0, "plain")
    assert Point.__doc__ == "A point." and Point.__annotations__ == {"x": "float", "y": "float", "kind": "str"}
    assert Point.__qualname__.endswith("<locals>.Point") and Point.__module__ == __name__
    with pytest.raises(TypeError, match="without a default follows"):
        class Bad(frozen.NamedTuple):
            x: int = 0
            y: int

    with pytest.raises(AttributeError, match="cannot define _make"):
        class Worse(frozen.NamedTuple):
            x: int

            def _make(self) -> None: ...

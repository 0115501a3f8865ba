"""Dataclasses whose methods are written once, not compiled at every start-up.

`@dataclass(frozen=True)` builds each class's __init__, __repr__, __eq__, __hash__,
__setattr__ and __delattr__ from source text and compiles it when the module is
imported: ~1.4 ms a class here, ~15 ms of `trainproof epoch` for the eleven on its path
(#14). `record` gives a class the same methods without compiling anything: the class
writes its own __init__ (its signature stays the one dataclasses would give it; a field
whose default comes from a factory defaults to FACTORY, shown as `<factory>` as
dataclasses show it), and the others are the closures below, which do what the
generated ones do (same results, same errors and messages). The class is still a
dataclass (`dataclasses.fields`, `replace`, `asdict` and `__match_args__` work on it);
only its `__dataclass_params__` say init, repr and eq False, and frozen False.
tests/test_frozen.py holds every such class against the dataclass it stands for.

`NamedTuple` does the same for typing.NamedTuple, whose classes cost ~0.4 ms each here
(23 on `epoch`'s path): typing turns every annotation, a string under postponed
annotations, into a ForwardRef by compiling it. This one makes the same class
(collections.namedtuple's, with the body's defaults, methods and docstring) and keeps
the annotations as written. Type checkers are shown typing's."""

from __future__ import annotations

import collections
import reprlib
from dataclasses import FrozenInstanceError, dataclass, fields

from trainproof import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")


class _Factory:
    """The default of a field whose value a factory makes, in the written __init__."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


FACTORY: Any = _Factory()


def record(*, frozen: bool = True, slots: bool = False,
           weakref_slot: bool = False) -> Callable[[type[T]], type[T]]:
    """`@dataclass(frozen=frozen, slots=slots, weakref_slot=weakref_slot)` for a class
    that defines its own __init__ (taking every field, in order, with its default)."""

    def wrap(cls: type[T]) -> type[T]:
        init = cls.__dict__.get("__init__")
        if init is None:
            raise TypeError(f"{cls.__qualname__}: a record writes its own __init__")
        if init.__annotations__.get("return") == "None":  # the written one's, under postponed annotations
            init.__annotations__["return"] = None  # as a generated __init__ says it
        weakref = {"weakref_slot": True} if weakref_slot else {}  # a keyword dataclasses know from 3.11
        cls = dataclass(cls, init=False, repr=False, eq=False, slots=slots, **weakref)  # type: ignore[call-overload]
        names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

        def values(obj: Any) -> tuple[Any, ...]:
            return tuple([getattr(obj, name) for name in names])

        @reprlib.recursive_repr()
        def __repr__(self: Any) -> str:
            shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
            return f"{self.__class__.__qualname__}({shown})"

        def __eq__(self: Any, other: object) -> bool:
            if other.__class__ is self.__class__:
                return values(self) == values(other)
            return NotImplemented

        methods: dict[str, Any] = {"__repr__": __repr__, "__eq__": __eq__}
        if frozen:
            def __hash__(self: Any) -> int:
                return hash(values(self))

            def __setattr__(self: Any, name: str, value: Any) -> None:
                if type(self) is cls or name in names:
                    raise FrozenInstanceError(f"cannot assign to field {name!r}")
                super(cls, self).__setattr__(name, value)

            def __delattr__(self: Any, name: str) -> None:
                if type(self) is cls or name in names:
                    raise FrozenInstanceError(f"cannot delete field {name!r}")
                super(cls, self).__delattr__(name)

            methods.update(__hash__=__hash__, __setattr__=__setattr__, __delattr__=__delattr__)
            if slots:  # what pickle and copy use: a frozen instance refuses setattr
                def __getstate__(self: Any) -> list[Any]:
                    return [getattr(self, name) for name in names]

                def __setstate__(self: Any, state: list[Any]) -> None:
                    for name, value in zip(names, state, strict=False):  # as dataclasses do
                        object.__setattr__(self, name, value)

                methods.update(__getstate__=__getstate__, __setstate__=__setstate__)
        for name, fn in methods.items():
            if name in cls.__dict__:
                raise TypeError(f"{cls.__qualname__} defines {name}: a record writes it")
            fn.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, fn)
        if not frozen:
            cls.__hash__ = None  # type: ignore[assignment]  # as dataclasses do: eq without frozen
        return cls

    return wrap


# what a NamedTuple's body may not define (collections.namedtuple's machinery), and what
# is not copied from it onto the class
_NOT_DEFINABLE = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                            "_make", "_replace", "_asdict", "_source"})
_NOT_COPIED = frozenset({"__module__", "__name__", "__annotations__"})


class _NamedTupleMeta(type):
    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if not bases:  # the base below
            return super().__new__(mcs, name, bases, ns)
        if bases != (NamedTuple,):
            raise TypeError(f"{name}: a NamedTuple derives from NamedTuple alone")
        annotations = ns.get("__annotations__", {})
        names = list(annotations)
        with_default = [n for n in names if n in ns]
        if names[len(names) - len(with_default):] != with_default:
            raise TypeError(f"{name}: a field without a default follows one with a default")
        cls = collections.namedtuple(name, names, defaults=[ns[n] for n in with_default],
                                     module=ns["__module__"])
        cls.__annotations__ = cls.__new__.__annotations__ = dict(annotations)
        for key, value in ns.items():
            if key in _NOT_DEFINABLE:
                raise AttributeError(f"{name}: a NamedTuple cannot define {key}")
            if key not in _NOT_COPIED and key not in annotations:
                setattr(cls, key, value)
        return cls


if TYPE_CHECKING:
    from typing import NamedTuple
else:
    class NamedTuple(metaclass=_NamedTupleMeta):
        """Base of a typed named tuple, as typing.NamedTuple (`class P(NamedTuple): x: int`)."""

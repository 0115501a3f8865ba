"""Reads a pickle without running it. `pickletools.genops` only decodes opcodes;
this module replays them on a symbolic stack so that the structure torch.save
writes (dicts of `_rebuild_tensor_v2(storage, offset, size, stride, ...)` calls)
comes back as plain containers holding `TensorRef`s. Nothing is imported and no
callable is ever called: a global is only a name, and a call to anything this
module does not model becomes an `Opaque` value that remembers that name.

The replay is linear in the opcodes, and so is everything done with what it builds:
the memo lets a tiny pickle share one object many times (x1 = (x0, x0), forty levels
deep, is 2**40 paths), so nothing here hashes, prints or compares a built value
recursively; pickle_walk.py walks what it builds within a budget.

It measures; whether a global is acceptable is judged in rules/env_pickle.py."""

from __future__ import annotations

import gc
import io
import pickletools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# Storage classes torch.save names in persistent ids -> numpy-style dtype names.
STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
    "UntypedStorage": "uint8",
}
_TENSOR_REBUILDERS = {"_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3"}
_TORCH_DTYPES = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                 "uint8", "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
                 "float8_e4m3fnuz", "float8_e5m2fnuz", "uint16", "uint32", "uint64"}


MAX_DIMS = 64  # more dimensions than any framework allows: not a tensor's shape


class PickleError(Exception):
    """The opcode stream is malformed or exceeds what a checkpoint can plausibly hold."""




@dataclass(frozen=True)
class Global:
    module: str
    name: str

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(frozen=True)
class Storage:
    key: str
    dtype: str
    location: str
    numel: int


@dataclass
class TensorRef:
    storage: Storage
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str


@dataclass
class Opaque:
    """The result of calling (or building) something this scanner does not model."""

    what: str
    args: Any = None


@dataclass
class _Mark:
    pass


@dataclass
class Scan:
    root: Any
    globals: list[str] = field(default_factory=list)  # every global named, in order, deduplicated
    opcodes: int = 0


_MARK = _Mark()


def _pop_mark(stack: list[Any]) -> list[Any]:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is _MARK:
            items = stack[i + 1:]
            del stack[i:]
            return items
    raise PickleError("MARK expected but not found")


def _call(fn: Any, args: Any) -> Any:
    """What a REDUCE of `fn(*args)` stands for, without calling anything."""
    if not isinstance(fn, Global):
        return Opaque("call of a non-global", None)
    args = args if isinstance(args, tuple) else ()
    mod, name = fn.module, fn.name
    if mod == "torch._utils" and name in _TENSOR_REBUILDERS and args and isinstance(args[0], Storage):
        st = args[0]
        shape = _dims(args[2]) if len(args) > 2 and isinstance(args[2], tuple) else ()
        stride = _dims(args[3]) if len(args) > 3 and isinstance(args[3], tuple) else ()
        dtype = st.dtype
        if name == "_rebuild_tensor_v3" and len(args) > 4 and isinstance(args[4], Global):
            dtype = args[4].name
        return TensorRef(st, _dims(args[1:2])[0] if len(args) > 1 and isinstance(args[1], int) else 0,
                         shape, stride, dtype)
    if mod == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state") and args:
        return args[0]
    if mod == "torch._tensor" and name == "_rebuild_from_type_v2" and len(args) > 2 and isinstance(args[0], Global):
        inner = _call(args[0], args[2])
        return inner
    if (mod, name) == ("collections", "OrderedDict"):
        return {}
    if (mod, name) == ("torch", "Size") and args and isinstance(args[0], tuple):
        return tuple(args[0])
    if (mod, name) == ("_codecs", "encode") and args and isinstance(args[0], str):
        return args[0].encode("latin1", "replace")
    if mod == "builtins" and name in ("set", "frozenset"):
        return set()
    return Opaque(fn.dotted, args)


def _dims(t: tuple[Any, ...]) -> tuple[int, ...]:
    """A shape or stride: at most MAX_DIMS whole numbers in [0, 2**63)."""
    if len(t) > MAX_DIMS:
        raise PickleError(f"a tensor with {len(t)} dimensions")
    if not all(isinstance(x, int) and 0 <= x < 1 << 63 for x in t):
        raise PickleError("a tensor shape or stride that is not a list of sizes")
    return tuple(int(x) for x in t)


def _persistent(pid: Any) -> Any:
    if isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage":
        st_type = pid[1]
        dtype = STORAGE_DTYPES.get(st_type.name, "?") if isinstance(st_type, Global) else "?"
        numel = _dims(pid[4:5])[0] if isinstance(pid[4], int) else -1
        return Storage(_atom(pid[2]), dtype, _atom(pid[3]), numel)
    return Opaque("persistent id", pid)


def _scalar(x: Any) -> bool:
    """A value that hashes and prints in time proportional to its own bytes."""
    if isinstance(x, int):  # bool included; a LONG4 of 10**5 digits will not print
        return x.bit_length() <= 64
    return isinstance(x, (str, float, bytes)) or x is None


def _atom(x: Any) -> str:
    """A scalar as text; anything built is named by its type alone, since str() of a
    shared structure can cost 2**depth."""
    return str(x) if _scalar(x) else f"<{type(x).__name__}>"


def _key(k: Any) -> Any:
    """A dict key that hashing cannot blow up: scalars as they are, built values by type."""
    return k if _scalar(k) else _atom(k)


def _setitems(target: Any, items: list[Any]) -> None:
    if isinstance(target, dict):
        for k, v in zip(items[::2], items[1::2], strict=False):
            target[_key(k)] = v


def _build(obj: Any, state: Any) -> Any:
    # BUILD on an OrderedDict carries its `_metadata` attribute; state dicts of
    # modelled values are kept out of the tensor table.
    if isinstance(obj, Opaque):
        obj.args = (obj.args, state)
    return obj


_SIMPLE_PUSH = {"NONE": lambda a: None, "NEWTRUE": lambda a: True, "NEWFALSE": lambda a: False,
                "EMPTY_DICT": lambda a: {}, "EMPTY_LIST": lambda a: [], "EMPTY_TUPLE": lambda a: (),
                "EMPTY_SET": lambda a: set()}
_ARG_PUSH = {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT",
             "STRING", "BINSTRING", "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8",
             "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "BYTEARRAY8"}
_MEMO_GET = {"GET", "BINGET", "LONG_BINGET"}
_MEMO_PUT = {"PUT", "BINPUT", "LONG_BINPUT"}
_IGNORED = {"PROTO", "FRAME", "NEXT_BUFFER", "READONLY_BUFFER"}


@contextmanager
def gc_paused() -> Iterator[None]:
    """The replay and the walk allocate millions of small objects that live until the
    scan ends; the cyclic collector would rescan them all again and again (a 400k-tensor
    checkpoint: 13 s of a 15 s walk). Nothing here needs it until the scan is done."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def scan_pickle(data: bytes, max_opcodes: int = 50_000_000) -> Scan:
    """Replay the opcode stream symbolically. Raises PickleError on a malformed stream."""
    with gc_paused():
        return _replay(data, max_opcodes)


def _replay(data: bytes, max_opcodes: int) -> Scan:
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    seen: dict[str, None] = {}
    n = 0
    try:
        for op, arg, _pos in pickletools.genops(io.BytesIO(data)):
            n += 1
            if n > max_opcodes:
                raise PickleError(f"more than {max_opcodes} opcodes")
            if op.name == "STOP":
                if len(stack) != 1:
                    raise PickleError("STOP with a malformed stack")
                return Scan(stack[0], list(seen), n)
            _step(op.name, arg, stack, memo, seen)
    except PickleError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, RecursionError) as exc:
        raise PickleError(f"{type(exc).__name__}: {exc}") from None
    raise PickleError("the pickle stream ends before STOP")


def _step(name: str, arg: Any, stack: list[Any], memo: dict[int, Any], seen: dict[str, None]) -> None:
    if name in _SIMPLE_PUSH:
        stack.append(_SIMPLE_PUSH[name](arg))
    elif name in _ARG_PUSH:
        stack.append(arg)
    elif name in _IGNORED:
        pass
    elif name == "MARK":
        stack.append(_MARK)
    elif name in _MEMO_PUT:
        memo[int(arg)] = stack[-1]
    elif name == "MEMOIZE":
        memo[len(memo)] = stack[-1]
    elif name in _MEMO_GET:
        stack.append(memo[int(arg)])
    elif name in ("GLOBAL", "STACK_GLOBAL", "INST"):
        _global(name, arg, stack, seen)
    else:
        _structural(name, arg, stack)


def _global(name: str, arg: Any, stack: list[Any], seen: dict[str, None]) -> None:
    if name == "STACK_GLOBAL":
        attr, mod = stack.pop(), stack.pop()
        g = Global(_atom(mod), _atom(attr))
    else:
        mod, _, attr = str(arg).partition(" ")
        g = Global(mod, attr)
    seen[g.dotted] = None
    if name == "INST":  # INST both names a class and calls it with the marked items
        stack.append(Opaque(g.dotted, tuple(_pop_mark(stack))))
    else:
        stack.append(g)


def _structural(name: str, arg: Any, stack: list[Any]) -> None:
    if name == "TUPLE":
        stack.append(tuple(_pop_mark(stack)))
    elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
        k = int(name[-1])
        items = tuple(stack[-k:])
        del stack[-k:]
        stack.append(items)
    elif name == "LIST":
        stack.append(list(_pop_mark(stack)))
    elif name == "DICT":
        d: dict[Any, Any] = {}
        _setitems(d, _pop_mark(stack))
        stack.append(d)
    elif name == "SETITEM":
        v, k = stack.pop(), stack.pop()
        _setitems(stack[-1], [k, v])
    elif name == "SETITEMS":
        items = _pop_mark(stack)
        _setitems(stack[-1], items)
    elif name == "APPEND":
        v = stack.pop()
        if isinstance(stack[-1], list):
            stack[-1].append(v)
    elif name == "APPENDS":
        items = _pop_mark(stack)
        if isinstance(stack[-1], list):
            stack[-1].extend(items)
    elif name in ("ADDITEMS", "FROZENSET"):
        items = _pop_mark(stack)
        if name == "FROZENSET":
            stack.append(Opaque("frozenset", len(items)))
    elif name == "POP":
        stack.pop()
    elif name == "POP_MARK":
        _pop_mark(stack)
    elif name == "DUP":
        stack.append(stack[-1])
    elif name == "REDUCE":
        args, fn = stack.pop(), stack.pop()
        stack.append(_call(fn, args))
    elif name in ("NEWOBJ", "NEWOBJ_EX"):
        if name == "NEWOBJ_EX":
            stack.pop()
        args, cls = stack.pop(), stack.pop()
        stack.append(Opaque(cls.dotted if isinstance(cls, Global) else "object", args))
    elif name == "OBJ":
        items = _pop_mark(stack)
        cls = items[0] if items else None
        stack.append(Opaque(cls.dotted if isinstance(cls, Global) else "object", tuple(items[1:])))
    elif name == "BUILD":
        state = stack.pop()
        stack[-1] = _build(stack[-1], state)
    elif name in ("BINPERSID", "PERSID"):
        pid = stack.pop() if name == "BINPERSID" else arg
        stack.append(_persistent(pid))
    elif name in ("EXT1", "EXT2", "EXT4"):
        stack.append(Opaque(f"extension registry code {arg}"))
    else:
        raise PickleError(f"unsupported opcode {name}")


def is_torch_dtype_global(g: str) -> bool:
    mod, _, name = g.rpartition(".")
    return mod == "torch" and name in _TORCH_DTYPES

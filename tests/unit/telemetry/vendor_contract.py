"""Checks of the fake NVML and amdsmi against the real Python bindings, without a GPU.

Two checks: (1) every vendor name an adapter's source uses exists in the real module, and
every call binds to the real signature; (2) what a fake returns has the shape of what the real
binding returns. For (2) the real binding runs its own Python code over a stub C library that
fills every output with zeros, with 0xFFFF and with all bits set: the binding's conversions
(ctypes to int, 0xFFFF to "N/A", a uint64 flag to bool) decide the types, not a reading of them.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import inspect
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any
from unittest import mock

FILLS = (0, 0xFFFF, 2**64 - 1)  # zero, a 16-bit "not available", every bit set
_NUMBER_CODES = "bBhHiIlLqQfdg?"  # ctypes _type_ codes of integers, floats and bool


# -- (1) the names and calls in an adapter's source ----------------------------------------


@dataclass(frozen=True)
class VendorUse:
    """One use of a vendor name in an adapter's source."""

    name: str
    line: int
    argc: int | None = None  # positional arguments when called, None when not or unknown
    member: str | None = None  # for `module.Enum.MEMBER`


def vendor_uses(source: str, aliases: Collection[str], helpers: Collection[str]) -> list[VendorUse]:
    """Vendor names used in `source` through `aliases` ("pynvml", "self._api", ...).

    A reference passed to one of `helpers` (`_opt(what, pynvml.fn, *args)`) counts as called
    with the arguments after it; `getattr(alias, "name", ...)` counts as a use of "name".
    """
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) in aliases:
            uses.append(_use(node, parents.get(node), set(helpers)))
        elif _is_getattr_of(node, aliases):
            assert isinstance(node, ast.Call)
            name = node.args[1]
            assert isinstance(name, ast.Constant)
            uses.append(VendorUse(name=str(name.value), line=node.lineno))
    return sorted(uses, key=lambda u: (u.line, u.name))


def _use(node: ast.Attribute, parent: ast.AST | None, helpers: set[str]) -> VendorUse:
    if isinstance(parent, ast.Call) and parent.func is node:
        return VendorUse(name=node.attr, line=node.lineno, argc=_count(parent.args))
    if isinstance(parent, ast.Call) and node in parent.args and _callee(parent) in helpers:
        rest = parent.args[parent.args.index(node) + 1 :]
        return VendorUse(name=node.attr, line=node.lineno, argc=_count(rest))
    if isinstance(parent, ast.Attribute):
        return VendorUse(name=node.attr, line=node.lineno, member=parent.attr)
    return VendorUse(name=node.attr, line=node.lineno)


def _count(args: Sequence[ast.expr]) -> int | None:
    return None if any(isinstance(a, ast.Starred) for a in args) else len(args)


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _is_getattr_of(node: ast.AST, aliases: Collection[str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "getattr"
        and len(node.args) >= 2
        and ast.unparse(node.args[0]) in aliases
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def use_problems(uses: Sequence[VendorUse], module: ModuleType) -> list[str]:
    """One line per use the real module does not support: name, member or argument count."""
    problems = []
    for use in uses:
        where = f"line {use.line}: {module.__name__}.{use.name}"
        real = getattr(module, use.name, None)
        if real is None:
            problems.append(f"{where} does not exist")
        elif use.member is not None and not hasattr(real, use.member):
            problems.append(f"{where}.{use.member} does not exist")
        elif use.argc is not None:
            problems += _call_problems(where, real, use.argc)
    return problems


def _call_problems(where: str, real: Any, argc: int) -> list[str]:
    if not callable(real):
        return [f"{where} is called but is not callable"]
    signature = inspect.signature(real)
    try:
        signature.bind(*range(argc))
    except TypeError:
        return [f"{where} is called with {argc} argument(s); the real one is {signature}"]
    return []


# -- (2) the shape of what a function returns -------------------------------------------


@dataclass
class Allowed:
    """The kinds of value the real function returned at one place of its result."""

    kinds: set[str] = field(default_factory=set)
    keys: dict[str, Allowed] = field(default_factory=dict)
    items: Allowed | None = None

    def add(self, value: Any) -> None:
        """Record one real return value."""
        self.kinds.add(kind(value))
        for key, member in members(value).items():
            self.keys.setdefault(key, Allowed()).add(member)
        for item in elements(value):
            self.items = self.items or Allowed()
            self.items.add(item)


def kind(value: Any) -> str:
    """ "dict", "sequence", a ctypes structure's or an object's class, or the scalar's type."""
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, (list, tuple, ctypes.Array)):
        return "sequence"
    return type(value).__name__


def members(value: Any) -> dict[str, Any]:
    """A dict's items or a plain object's attributes (a ctypes structure is its class)."""
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, (ctypes.Structure, ctypes.Union)) or not hasattr(value, "__dict__"):
        return {}
    return dict(vars(value))


def elements(value: Any) -> list[Any]:
    """A sequence's items."""
    return list(value) if isinstance(value, (list, tuple, ctypes.Array)) else []


def mismatches(fake: Any, allowed: Allowed, where: str) -> list[str]:
    """One line per place where `fake` differs from every value the real function returned."""
    if kind(fake) not in allowed.kinds:
        real = " | ".join(sorted(allowed.kinds))
        return [f"{where}: the fake returns {kind(fake)}, the real binding {real}"]
    problems = []
    for key, member in members(fake).items():
        if key not in allowed.keys:
            problems.append(f"{where}[{key!r}]: the real binding returns no such key")
        else:
            problems += mismatches(member, allowed.keys[key], f"{where}[{key!r}]")
    if allowed.items is not None:
        for index, item in enumerate(elements(fake)):
            problems += mismatches(item, allowed.items, f"{where}[{index}]")
    return problems


# -- the real bindings over a stub C library --------------------------------------------


def fill(obj: Any, value: int) -> None:
    """Set every number in a ctypes object to `value`, cut to its width (text stays empty)."""
    if isinstance(obj, (ctypes.Structure, ctypes.Union)):
        for name, ctype, *_ in obj._fields_:
            if _is_number(ctype):
                setattr(obj, name, _coerce(ctype, value))
            elif _is_aggregate(ctype):
                fill(getattr(obj, name), value)
    elif isinstance(obj, ctypes.Array):
        for index in range(len(obj)):
            if _is_number(obj._type_):
                obj[index] = _coerce(obj._type_, value)
            elif _is_aggregate(obj._type_):
                fill(obj[index], value)
    elif _is_number(type(obj)):
        obj.value = _coerce(type(obj), value)


def _is_number(ctype: Any) -> bool:
    return isinstance(ctype, type) and getattr(ctype, "_type_", None) in tuple(_NUMBER_CODES)


def _is_aggregate(ctype: Any) -> bool:
    if not isinstance(ctype, type):
        return False
    if issubclass(ctype, ctypes.Array):
        return ctype._type_ not in (ctypes.c_char, ctypes.c_wchar)
    return issubclass(ctype, (ctypes.Structure, ctypes.Union))


def _coerce(ctype: Any, value: int) -> Any:
    code = ctype._type_
    if code == "?":
        return bool(value)
    return float(value) if code in "fdg" else value


def stub_c_function(value: int, *, insufficient_size: int) -> Callable[..., int]:
    """A C function that fills its outputs with `value` and reports success.

    A call with a NULL array asks for a size: it is told one item and `insufficient_size`.
    When an array is passed, the numbers passed by reference are its item count: one.
    """

    def c_function(*args: Any) -> int:
        outputs = [a._obj for a in args if hasattr(a, "_obj")]  # what ctypes.byref() wrapped
        arrays = [a for a in args if isinstance(a, ctypes.Array)]
        if any(a is None for a in args):
            for out in outputs:
                fill(out, 1)
            return insufficient_size
        for out in outputs:
            fill(out, 1 if arrays and _is_number(type(out)) else value)
        for array in arrays:
            fill(array, value)
        return 0

    return c_function


def nvml_returns(nvml: ModuleType, fn: str, args: tuple[Any, ...], *, handle: bool) -> Allowed:
    """What pynvml's `fn` returns, over a stub libnvidia-ml, for every fill."""
    allowed = Allowed()
    first = (nvml.c_nvmlDevice_t(),) if handle else ()
    for value in FILLS:
        c_function = stub_c_function(value, insufficient_size=nvml.NVML_ERROR_INSUFFICIENT_SIZE)
        with mock.patch.object(nvml, "_nvmlGetFunctionPointer", lambda name, f=c_function: f):
            allowed.add(getattr(nvml, fn)(*first, *args))
    return allowed


def amdsmi_returns(
    interface: ModuleType, wrapper: ModuleType, fn: str, args: tuple[Any, ...], *, handle: bool
) -> Allowed:
    """What amdsmi's `fn` returns, over a stub libamd_smi, for every fill.

    `wrapper` must be the copy whose libamd_smi is a mock (see import_real_amdsmi).
    """
    allowed = Allowed()
    first = (wrapper.amdsmi_processor_handle(),) if handle else ()
    for value in FILLS:
        with _stubbed_amdsmi(wrapper, stub_c_function(value, insufficient_size=-1)):
            allowed.add(getattr(interface, fn)(*first, *args))
    return allowed


@contextlib.contextmanager
def _stubbed_amdsmi(wrapper: ModuleType, c_function: Callable[..., int]) -> Iterator[None]:
    functions = [v for v in vars(wrapper).values() if isinstance(v, mock.Mock)]
    if not functions:
        raise RuntimeError("this amdsmi_wrapper loaded the real libamd_smi.so")
    for function in functions:
        function.side_effect = c_function
    try:
        yield
    finally:
        for function in functions:
            function.side_effect = None

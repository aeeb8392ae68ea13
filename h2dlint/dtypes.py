"""Whether a tensor expression certainly holds integers: what decides, for a tensor used as an index, whether it
selects by position (`index_put_`, which copies a Python number to the device first) or is a boolean mask
(`masked_fill_`, which does not). Read from the code alone, for the summaries (`project`) and a file's own
bindings (`values.is_integer_tensor`) alike: a `Reader` says how names resolve where."""

from __future__ import annotations

import ast
from typing import Protocol

from .syntax import dotted_name

# Index dtypes: PyTorch takes `long` and `int` tensors as positions (`byte` ones are masks).
INTEGER_DTYPES = frozenset({"torch.int64", "torch.long", "torch.int32", "torch.int"})
# torch functions whose result holds positions, of one dimension or more. Not `argmax`/`argmin`: a 0-d index is
# read back to the host as an int (`.item()`), and the write is then no `index_put_`.
INTEGER_FUNCTIONS = frozenset(f"torch.{name}" for name in (
    "arange", "randint", "randperm", "argsort", "nonzero", "argwhere", "searchsorted", "bucketize", "multinomial",
    "tril_indices", "triu_indices"))
# Tensor methods with such a result.
INTEGER_METHODS = frozenset({"long", "int", "argsort", "nonzero", "argwhere"})
# Tensor methods whose result has the dtype of the tensor they are called on, unless given one (`.view(torch.uint8)`);
# `to` only with devices besides (`.to(other)` takes another tensor's dtype).
SAME_DTYPE_METHODS = frozenset({"clone", "contiguous", "detach", "view", "reshape", "flatten", "unsqueeze",
                                "expand", "repeat", "flip", "t", "transpose", "permute", "cuda", "cpu", "to",
                                "pin_memory", "index_select", "gather", "repeat_interleave"})
# torch functions that join tensors of one dtype.
JOINING = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})
_INTEGER_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)


class Reader(Protocol):
    """How the code around an expression reads: `at` is where the expression is (a line, or nothing where the
    reader follows no flow)."""

    def qualify(self, dotted: str | None) -> str | None:
        """`th.long` -> `torch.long` by the file's imports."""

    def bindings(self, name: str, at) -> list[tuple[ast.expr | bool | None, object]] | None:
        """Each value bound to `name` where it is read at `at`, with where that value is: None for a binding whose
        value is not told, True or False for a parameter, as far as the reader found what every call passes it;
        None when `name` is no local whose bindings are known."""

    def is_int(self, expr: ast.expr, at) -> bool:
        """`expr` is certainly a Python int."""

    def is_device(self, expr: ast.expr, at) -> bool:
        """`expr` is certainly a device (`"cuda"`, `torch.device(...)`, a name bound only to one)."""


def integer_tensor(expr: ast.expr, reader: Reader, at=None, depth: int = 0,
                   evaluating: frozenset[int] = frozenset()) -> bool:
    """Whether `expr` certainly evaluates to a tensor of integers, of one dimension or more: a call given an
    integer `dtype=` (a torch factory's, `.to(dtype=torch.long)`, a project helper's `upload(ids,
    dtype=torch.int32)`), one of torch's index-making functions (`torch.arange`, `argsort`, `nonzero`), `.long()`,
    a view, copy, move, slice or join of such tensors, arithmetic keeping integers (with Python ints), or a name
    every binding of which is such a value (`ids = ids.to(device)` counts the other bindings: the first one to run
    cannot read itself). Not a comparison's result nor anything else a mask may be. `evaluating` holds the
    bindings whose values are being read (by `id`)."""
    if depth > 8:
        return False

    def of(node: ast.expr, where=at, within: frozenset[int] = evaluating) -> bool:
        return integer_tensor(node, reader, where, depth + 1, within)

    cls = expr.__class__
    if cls is ast.Call:
        return _call(expr, reader, at, of)  # type: ignore[arg-type]
    if cls is ast.Subscript:  # a slice keeps the dimension; an int index may leave a 0-d tensor
        parts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]  # type: ignore[attr-defined]
        return all(isinstance(part, ast.Slice) or of(part) for part in parts) and of(expr.value)  # type: ignore
    if cls is ast.BinOp and isinstance(expr.op, _INTEGER_ARITHMETIC):  # type: ignore[attr-defined]
        sides = (expr.left, expr.right)  # type: ignore[attr-defined]
        return any(of(side) for side in sides) and all(of(side) or reader.is_int(side, at) for side in sides)
    if cls is ast.Name:
        bound = reader.bindings(expr.id, at)  # type: ignore[attr-defined]
        others = [(value, where) for value, where in bound or () if id(value) not in evaluating]
        return bool(others) and all(
            value is True or isinstance(value, ast.expr) and of(value, where, evaluating | {id(value)})
            for value, where in others)
    return False


def _call(call: ast.Call, reader: Reader, at, of) -> bool:
    dtype = next((keyword.value for keyword in call.keywords if keyword.arg == "dtype"), None)
    if dtype is not None:
        return (reader.qualify(dotted_name(dtype)) or "") in INTEGER_DTYPES
    func = call.func
    qualified = reader.qualify(dotted_name(func)) or ""
    if qualified in INTEGER_FUNCTIONS:
        return True
    if qualified in JOINING:
        tensors = call.args[0] if call.args else None
        parts = tensors.elts if isinstance(tensors, (ast.List, ast.Tuple)) else []
        return bool(parts) and all(of(part) for part in parts)
    if not isinstance(func, ast.Attribute) or qualified.startswith("torch."):
        return False
    if func.attr in INTEGER_METHODS:
        return True
    if func.attr not in SAME_DTYPE_METHODS:
        return False
    named = [reader.qualify(dotted_name(argument)) or "" for argument in call.args]
    if any(name.startswith("torch.") for name in named):  # a dtype given: `.to(torch.long)`, `.view(torch.uint8)`
        return all(name in INTEGER_DTYPES for name in named if name.startswith("torch."))
    if func.attr == "to" and not all(isinstance(argument, ast.Attribute) and argument.attr == "device"
                                     or reader.is_device(argument, at) for argument in call.args):
        return False  # `.to(other)`, `.to(x.dtype)`: another dtype; `.to(x.device)`, `.to(self.device)` move it
    return of(func.value)

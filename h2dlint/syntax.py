"""Names in the `ast`: the small helpers every analysis module reads code with."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator


def name_words(name: str) -> list[str]:
    """The lower-case words of a (dotted) name: `self.log_stats` -> ["self", "log", "stats"]."""
    return [word for word in re.split(r"[._]", name.lower()) if word]


def dotted_name(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def is_none(expr: ast.expr | None) -> bool:
    """The literal `None`."""
    return isinstance(expr, ast.Constant) and expr.value is None


def annotated_name(annotation: ast.expr | None) -> str | None:
    """The dotted name of the one class an annotation names: `Foo`, `mod.Foo`, a forward reference `"Foo"`, or
    either of these or None (`Optional[Foo]`, `Foo | None`, `Union[Foo, None]`). None for anything else: a
    container's element type (`list[Foo]`) is no type of the object annotated."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value.strip(), mode="eval").body
        except SyntaxError:
            return None
        return None if isinstance(annotation, ast.Constant) else annotated_name(annotation)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        options = [annotation.left, annotation.right]
    elif isinstance(annotation, ast.Subscript) and (dotted_name(annotation.value) or "").rpartition(".")[2] in (
            "Optional", "Union"):
        options = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
    else:
        return dotted_name(annotation) if annotation is not None else None
    named = [option for option in options if not (isinstance(option, ast.Constant) and option.value is None)]
    return annotated_name(named[0]) if len(named) == 1 else None


def certainly_no_tensor(value: ast.expr) -> bool:
    """A value that by its shape is certainly no tensor: a constant other than None, a container display or
    comprehension, an f-string, a `not`, or a call of `int`, `float`, `bool`, `str`, `len`, `list`, `dict`, `set`
    or `tuple`. Not a comparison (`ids != pad` of a tensor is one) nor an `and`/`or` (it gives an operand)."""
    if isinstance(value, ast.Constant):
        return value.value is not None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value.func.id in ("int", "float", "bool", "str", "len", "list", "dict", "set", "tuple")
    return isinstance(value, (ast.JoinedStr, ast.List, ast.Dict, ast.Set, ast.Tuple, ast.ListComp, ast.DictComp,
                              ast.SetComp)) or (isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not))


def terminal_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The blocks of statements a compound statement holds: its body, `else` and `finally`, its `except`
    handlers' and its `match` cases' bodies (a function's or a class's body too)."""
    for name in _BLOCK_FIELDS:
        inner = getattr(statement, name, None)
        if inner:
            yield inner
    for handler in getattr(statement, "handlers", ()) or ():
        yield handler.body
    for case in getattr(statement, "cases", ()) or ():
        yield case.body


_BLOCK_FIELDS = ("body", "orelse", "finalbody")
# The statements that hold blocks (`blocks` yields nothing for any other): walks skip the others at once.
COMPOUND_STATEMENTS = frozenset(kind for kind in ast.stmt.__subclasses__()
                                if {*_BLOCK_FIELDS, "handlers", "cases"} & set(kind._fields))
TRY_STATEMENTS = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)  # `try ... except*`: 3.11


# Words of a device's name that say it is the host's: offloading code copies back to it with `non_blocking=True` too
# (`self.offload_device`, `cpu_device`).
_HOST_DEVICE_WORDS = frozenset({"cpu", "host", "offload", "offloaded", "storage", "pin", "pinned", "swap", "disk",
                                "staging"})


def async_copy_target(call: ast.Call) -> ast.Name | ast.Attribute | None:
    """The device `x.to(device, non_blocking=True)` (or `device=...`) copies to, a name or an attribute named for a
    device and not the host's (`device`, `self.target_device`; not `self.dtype`, which converts on the spot, nor
    `self.offload_device`); None for any other call. An asynchronous copy is worth asking for only to an
    accelerator."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr != "to" or not any(
            keyword.arg == "non_blocking" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
            for keyword in call.keywords):
        return None
    target = next((keyword.value for keyword in call.keywords if keyword.arg == "device"),
                  call.args[0] if call.args else None)
    name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else None
    if name is None:
        return None
    words = set(name_words(name))
    return target if "device" in words and words.isdisjoint(_HOST_DEVICE_WORDS) else None  # type: ignore[return-value]


def parameters(arguments: ast.arguments) -> list[ast.arg]:
    """Every parameter of a function or lambda: the positional ones, the keyword-only ones, then `*args` and
    `**kwargs` where there are."""
    return [arg for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg,
                            arguments.kwarg) if arg is not None]


def parameter_defaults(arguments: ast.arguments) -> list[tuple[ast.arg, ast.expr | None]]:
    """Each parameter with a default, and the default: the positional defaults are those of the last positional
    parameters; a keyword-only parameter without one has None."""
    positional = [*arguments.posonlyargs, *arguments.args]
    return [*zip(positional[::-1], arguments.defaults[::-1], strict=False),
            *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)]

"""Reasoning and LibCST helpers shared by the copy rules (HDL1xx) and the async-copy hazard rules (HDL4xx).

Kept apart from facts.py: these work on the LibCST nodes rules visit (and the
ast of the enclosing function), not on whole-file facts.
"""

from __future__ import annotations

import ast
import re
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .branches import non_tensor_branch
from .facts import CUDA_TENSOR_TYPES, HOST_TENSOR_TYPES, Device, FileFacts, Placement, tensor_type_name
from .hotness import context_at, only_when_empty, runs_once
from .placement import classify_device, classify_placement
from .project import short_name
from .syntax import dotted_name
from .values import PinData, pin_data_kind

if TYPE_CHECKING:
    import libcst as cst

    from .model import Position
    from .settings import Settings
else:
    from .deferred import libcst as cst

# torch factories that accept `pin_memory=` (checked against torch 2.13: `as_tensor` and the `*_like` do not).
PINNABLE_FACTORIES = frozenset({"tensor", "zeros", "ones", "empty", "full", "arange", "rand", "randn", "randint",
                                "randperm", "linspace", "eye"})
# The methods that copy a tensor to a device: `x.cuda()`, `x.to(device)`, `x.type(torch.cuda.FloatTensor)`.
COPY_METHODS = frozenset({"cuda", "to", "type"})
SYNC_CALLS = frozenset({"synchronize"})  # torch.cuda.synchronize(), event.synchronize(), stream.synchronize()


# Word tests, before parsing: a file without the word has no call the rule could report.
_DEVICE_WORD = re.compile("dev", re.IGNORECASE)


def left_unreported(facts: FileFacts, start: Position, end: Position, settings: Settings) -> str | None:
    """Why the blocking-copy rules (HDL101, HDL102, HDL103, HDL105) leave the copy from `start` to `end`
    unreported: nothing shows that it runs every step (no loop, no hot function by its name or through the
    project's calls, no CUDA graph capture around it) or that its branch runs at all (it converts a parameter
    known there not to be a tensor, and no call is seen passing it Python data: `non_tensor_branch`) and
    `copies-outside-hot-code` is off, or it runs once (see `runs_once`), or only on an empty input
    (`only_when_empty`). Read in held-out trees, copies without evidence that they run every step were right about
    as often as wrong (mostly set-up, an epoch's or an evaluation's bookkeeping, or weight conversion at load), and
    conversions of a parameter known not to be a tensor seldom (docs/precision.md, "Copies outside
    hot code"). None: report it. Hotness is asked
    first: outside hot code the project-model questions of `runs_once` (who calls the function) would decide
    nothing."""
    if not settings.copies_outside_hot_code:
        if not context_at(facts, start.line).hot:
            return "nothing shows that it runs every step"
        if (branch := non_tensor_branch(facts, start.line)) is not None:
            return branch
    return does_not_repeat(facts, start, end)


def does_not_repeat(facts: FileFacts, start: Position, end: Position) -> str | None:
    """Why the copy from `start` to `end` does not repeat however often its function may run: it runs once (see
    `runs_once`) or only on an empty input (`only_when_empty`). None otherwise. The part of `left_unreported`
    that HDL104 asks too: it reports code of unknown hotness, but not code that runs once."""
    return only_when_empty(facts, (start.line, start.column), (end.line, end.column)) or runs_once(facts, start.line)


def where_hot(facts: FileFacts, line: int) -> str:
    """Where the code at `line` runs every step, for a copy rule's message: " in a loop", " in `forward`, hot:
    A -> B", with its leading blank; "" where nothing says."""
    where = context_at(facts, line).describe()
    return f" {where}" if where else ""


def may_copy_to_a_named_device(text: str) -> bool:
    """False only when no `.to(...)` call in `text` can copy to a device that `copy_device` leaves unknown in a file
    without GPU evidence (where it finds no CUDA device): the target must then be a name such as `device`, `dev`,
    `self.out_device`, `DEVICE_ID`, a `torch.device(...)` call or a call of a function named for a device
    (`get_local_torch_device()`), so the text holds `dev` in some case."""
    return _DEVICE_WORD.search(text) is not None


def may_call_tensor_with_device(text: str) -> bool:
    """False only when no `torch.tensor(...)`/`torch.as_tensor(...)` call in `text` can have a `device=`."""
    return "device" in text


def dotted(node: cst.BaseExpression) -> str | None:
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def shown(node: cst.CSTNode, limit: int = 60) -> str:
    """The node's code on one line, shortened, for messages: the same wherever the node was parsed."""
    text = " ".join(code_of(node).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def to_ast(node: cst.BaseExpression) -> ast.expr:
    return ast.parse(f"(\n{code_of(node)}\n)", mode="eval").body


def is_pure(node: cst.BaseExpression, facts: FileFacts) -> bool:
    """True for expressions whose evaluation has no side effects: names, attributes, literals, `torch.device(...)`."""
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.Ellipsis)):
        return True
    if isinstance(node, cst.Attribute):
        return is_pure(node.value, facts)
    if isinstance(node, cst.Subscript):
        return is_pure(node.value, facts) and all(
            isinstance(element.slice, cst.Index) and is_pure(element.slice.value, facts) for element in node.slice)
    if isinstance(node, cst.Call):  # torch.device("cuda", 0), under whatever name the file imports it
        return facts.qualify(dotted(node.func)) == "torch.device" and all(
            is_pure(arg.value, facts) for arg in node.args)
    return False


def tight_equal() -> cst.AssignEqual:
    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value, keyword=cst.Name(name), equal=tight_equal())


def join_args(original: list[cst.Arg], new: list[cst.Arg]) -> list[cst.Arg]:
    """Lay out `new` like `original` was: same separators, same trailing comma and closing whitespace."""
    if not original:
        return [arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in new[:-1]] + new[-1:] if new else []
    last = original[-1]
    separator = next((arg.comma for arg in original[:-1] if isinstance(arg.comma, cst.Comma)),
                     cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    result = []
    for index, arg in enumerate(new):
        if index == len(new) - 1:
            result.append(arg.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg))
        elif arg is last or not isinstance(arg.comma, cst.Comma):
            result.append(arg.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace("")))
        else:
            result.append(arg)
    return result


def keywords_of(call: cst.Call) -> dict[str, cst.Arg]:
    return {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}


def is_literal(node: cst.BaseExpression | None, value: str) -> bool:
    return isinstance(node, cst.Name) and node.value == value


def torch_name(rule) -> tuple[str | None, list]:
    """The name this file uses for `torch`, and the edits that import it when only `from torch import` is used."""
    facts = rule.context.facts
    name = facts.local_name_for("torch")
    if name is not None:
        return name, []
    if facts.torch_from_import_line is None:
        return None, []
    return "torch", [rule.context.insert_line_before(facts.torch_from_import_line, "import torch")]


def pin_guard(rule, device: Device, torch_local: str) -> cst.BaseExpression:
    """What to pass as `pin_memory=`: `True` when the target is certainly CUDA (pinning cannot fail there),
    else a helper this file already has (settings.pin_memory_helpers), else `torch.cuda.is_available()`."""
    if device is Device.CUDA:
        return cst.Name("True")
    facts = rule.context.facts
    helper = next((name for name in rule.context.settings.pin_memory_helpers
                   if facts.bindings_at(name, 10**9) is not None or name in facts.aliases), None)
    return cst.parse_expression(f"{helper}()" if helper else f"{torch_local}.cuda.is_available()")


# ----- constant uploads ------------------------------------------------------


@dataclass(frozen=True)
class ConstantFill:
    """`torch.tensor(<every element the same literal>)`: the value, its Python type and the tensor's shape."""

    value: cst.BaseExpression
    kind: type  # int, float or bool: decides the dtype torch.tensor infers
    shape: tuple[int, ...]


def _literal(node: cst.BaseExpression) -> tuple[str, type] | None:
    """A numeric or bool literal as (canonical text, type); None for anything else."""
    if isinstance(node, cst.Integer):
        return code_of(node), int
    if isinstance(node, cst.Float):
        return code_of(node), float
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value, bool
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        inner = _literal(node.expression)
        return (f"-{inner[0]}", inner[1]) if inner else None
    return None


def constant_fill(data: cst.BaseExpression) -> ConstantFill | None:
    """The constant `data` describes, when it is one literal or a rectangular nest of lists of the same literal."""
    if isinstance(data, (cst.List, cst.Tuple)):
        elements = [element.value for element in data.elements]
        if not elements or any(isinstance(element, cst.StarredElement) for element in data.elements):
            return None
        inner = [constant_fill(element) for element in elements]
        first = inner[0]
        if first is None or any(item is None or item.shape != first.shape or item.kind is not first.kind
                                or code_of(item.value) != code_of(first.value) for item in inner):
            return None
        return ConstantFill(first.value, first.kind, (len(elements), *first.shape))
    literal = _literal(data)
    if literal is None:
        return None
    return ConstantFill(data, literal[1], ())


CONSTANT_UPLOAD_KEYWORDS = frozenset({"device", "dtype", "requires_grad"})


def constant_upload(call: cst.Call) -> ConstantFill | None:
    """The constant a `torch.tensor(literal, device=..., [dtype=..., requires_grad=...])` call uploads.

    Only the argument shapes are checked here; the caller checks the function and the device.
    """
    if any(arg.star for arg in call.args):
        return None
    positional = [arg for arg in call.args if arg.keyword is None]
    keywords = keywords_of(call)
    if len(positional) != 1 or "device" not in keywords or not set(keywords) <= CONSTANT_UPLOAD_KEYWORDS:
        return None
    return constant_fill(positional[0].value)


# ----- copies ----------------------------------------------------------------


@dataclass(frozen=True)
class Copy:
    """A `.cuda(...)` / `.to(...)` / `.type(<CUDA tensor type>)` call that moves a tensor, and where to."""

    source: cst.BaseExpression  # the tensor being moved
    device: cst.BaseExpression | None  # None: `.cuda()` (the current CUDA device); the type for `.type(...)`
    non_blocking: cst.BaseExpression | None
    # `.type(<CUDA tensor type>)`: no rewrite is offered (no GPU run of the fix verifier has checked one), and the
    # type may be an integer one, whose result takes no gradient
    legacy_type: bool = False


DTYPE_NAMES = frozenset({"float", "float16", "float32", "float64", "half", "bfloat16", "double", "int", "int8",
                         "int16", "int32", "int64", "long", "short", "bool", "uint8", "complex64", "cfloat"})


def device_like(facts: FileFacts, node: ast.expr, line: int) -> Device | None:
    """How `node`, the first argument of `.to(...)`, reads as a device; None when it is probably not one
    (a dtype, another tensor, anything h2dlint cannot tell apart from those)."""
    device = classify_device(facts, node, line)
    if device is not Device.UNKNOWN:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return device
        return device if not (isinstance(node, ast.Constant) and node.value is None) else None
    name = dotted_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    if name is not None:
        last = name.rsplit(".", 1)[-1].lower()
        if last in DTYPE_NAMES or "dtype" in last:
            return None
        if last in ("device", "dev") or last.endswith(("_device", "_dev")) or last.startswith("device"):
            return Device.UNKNOWN
    if isinstance(node, ast.Call):
        # `torch.device(...)`, or a function named for the device it returns (`get_local_torch_device()`).
        called = dotted_name(node.func) or ""
        last = called.rsplit(".", 1)[-1].lower()
        if facts.qualify(called) == "torch.device" or last.endswith("_device") and "dtype" not in last:
            return Device.UNKNOWN
    return None


def copy_device(facts: FileFacts, call: ast.Call, line: int) -> Device | None:
    """The device `call` copies to, when it is `x.cuda(...)`, `x.to(<device-like>, ...)` (not a dtype cast) or
    `x.type(torch.cuda.FloatTensor)` (a CUDA tensor type); None when it is no copy. On the ast, so that rules can
    skip other calls before LibCST parses them."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in COPY_METHODS \
            or any(isinstance(arg, ast.Starred) for arg in call.args) \
            or any(keyword.arg is None for keyword in call.keywords):
        return None
    positional = call.args
    keywords = {keyword.arg: keyword.value for keyword in call.keywords}
    if func.attr == "type":
        named = positional[0] if len(positional) == 1 else keywords.get("dtype") if not positional else None
        return Device.CUDA if named is not None and tensor_type_name(named, facts.aliases) in CUDA_TENSOR_TYPES else None
    if func.attr == "cuda":
        if len(positional) > 1:
            return None
        target = positional[0] if positional else keywords.get("device")
        return Device.CUDA if target is None else classify_device(facts, target, line)
    target = keywords.get("device", positional[0] if positional else None)
    if target is None or len(positional) > 2:  # .to(device, dtype, non_blocking, ...)
        return None
    return device_like(facts, target, line)


def copy_of(facts: FileFacts, call: cst.Call, line: int) -> tuple[Copy, Device] | None:
    """The copy `call` makes, when it is `x.cuda(...)`, `x.to(<device-like>, ...)` or `x.type(<CUDA tensor
    type>)`, and its device (as `copy_device` finds it); else None."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in COPY_METHODS:
        return None  # the common case, decided before converting the call
    device = copy_device(facts, to_ast(call), line)
    if device is None:
        return None
    positional = [arg for arg in call.args if arg.keyword is None]
    keywords = keywords_of(call)
    device_keyword = keywords["device"].value if "device" in keywords else None
    first = positional[0].value if positional else None
    if func.attr.value == "type":
        target = first if first is not None else keywords["dtype"].value
    elif func.attr.value == "cuda":
        target = first if first is not None else device_keyword
    else:
        target = device_keyword if device_keyword is not None else first
    non_blocking = keywords.get("non_blocking")
    return Copy(func.value, target, non_blocking and non_blocking.value, func.attr.value == "type"), device


def host_factory(facts: FileFacts, node: ast.expr) -> str | None:
    """The factory's name when `node` is a call making a fresh host tensor: `torch.<factory>(...)` without
    `device=` (a factory that accepts `pin_memory=`; `torch.tensor` of host data, not of a tensor that may be
    elsewhere), or `torch.from_numpy(...)` ("from_numpy"); else None."""
    if not isinstance(node, ast.Call):
        return None
    qualified = facts.qualify(dotted_name(node.func)) or ""
    if not qualified.startswith("torch.") or qualified.count(".") != 1:
        return None
    name = qualified.split(".", 1)[1]
    if name == "from_numpy":
        return name
    if name not in PINNABLE_FACTORIES or any(keyword.arg in ("device", None) for keyword in node.keywords) \
            or any(isinstance(arg, ast.Starred) for arg in node.args):
        return None
    if name == "tensor" and classify_placement(facts, node, node.lineno) is not Placement.HOST:
        return None  # made from a tensor that may be elsewhere: it stays on that tensor's device
    return name


def fresh_host_factory(facts: FileFacts, node: cst.BaseExpression) -> tuple[cst.Call, str] | None:
    """`node` when it is a call making a fresh host tensor (see `host_factory`), with the factory's name."""
    if not isinstance(node, cst.Call):
        return None
    name = host_factory(facts, to_ast(node))
    return None if name is None else (node, name)


def factory_data(fresh: tuple[cst.Call, str] | None) -> cst.BaseExpression | None:
    """The data of a fresh `torch.tensor(data, ...)` (see `fresh_host_factory`); None for other factories, whose
    arguments are sizes and fill values that pin anywhere."""
    if fresh is None or fresh[1] != "tensor":
        return None
    return next((arg.value for arg in fresh[0].args if arg.keyword is None or arg.keyword.value == "data"), None)


def makes_no_elements(factory: cst.Call, name: str) -> bool:
    """A factory call whose tensor has no elements, written so: `torch.tensor([])`, `torch.zeros(0, ...)`,
    `torch.empty((0, n))`. Copying it returns before reaching the device: nothing waits, nothing is staged."""
    first = next((arg.value for arg in factory.args if arg.keyword is None), None)
    if first is None:
        return False
    if name == "tensor":
        return isinstance(first, (cst.List, cst.Tuple)) and not first.elements
    if isinstance(first, (cst.List, cst.Tuple)):
        sizes = [element.value for element in first.elements]
    elif name == "full":
        return False  # `torch.full(shape, 0)`: the second argument is the fill value, not a size
    else:
        sizes = [arg.value for arg in factory.args if arg.keyword is None]
    return name in ("zeros", "ones", "empty", "full", "rand", "randn") and any(
        isinstance(size, cst.Integer) and size.value == "0" for size in sizes)


def legacy_tensor_without_elements(facts: FileFacts, node: cst.BaseExpression) -> bool:
    """`torch.FloatTensor()`, `torch.LongTensor([])`: a legacy constructor's tensor of no elements, whose copy
    returns before reaching the device."""
    if not isinstance(node, cst.Call):
        return False
    call = to_ast(node)
    if not isinstance(call, ast.Call) or (facts.qualify(dotted_name(call.func)) or "") not in HOST_TENSOR_TYPES:
        return False
    return not call.args and not call.keywords or len(call.args) == 1 and not call.keywords \
        and isinstance(call.args[0], (ast.List, ast.Tuple)) and not call.args[0].elts


def pinned(factory: cst.Call) -> bool:
    """Whether a factory call asks for pinned memory (anything but a literal False)."""
    pin = keywords_of(factory).get("pin_memory")
    return pin is not None and not is_literal(pin.value, "False")


def pinned_source(facts: FileFacts, source: ast.expr, line: int) -> bool:
    """Whether the source of a copy on `line` is pinned host memory: `x.pin_memory()`, or a name every binding
    that reaches `line` binds to one (or to a factory called with a literal `pin_memory=True`)."""
    values: list[ast.expr | None] = [source]
    if isinstance(source, ast.Name):
        values = facts.bindings_at(source.id, line) or [None]
    return all(isinstance(value, ast.Call) and (
        isinstance(value.func, ast.Attribute) and value.func.attr == "pin_memory" and not value.args
        or any(keyword.arg == "pin_memory" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
               for keyword in value.keywords)) for value in values)


def with_pin_memory(factory: cst.Call, guard: cst.BaseExpression) -> cst.Call:
    return factory.with_changes(args=join_args(list(factory.args), [*factory.args, keyword("pin_memory", guard)]),
                                lpar=[], rpar=[])


def with_non_blocking(call: cst.Call) -> cst.Call:
    args = [arg for arg in call.args if not (arg.keyword is not None and arg.keyword.value == "non_blocking")]
    return call.with_changes(args=join_args(list(call.args), [*args, keyword("non_blocking", cst.Name("True"))]))


def placement_is_host(facts: FileFacts, node: cst.BaseExpression, line: int) -> bool:
    return classify_placement(facts, to_ast(node), line) is Placement.HOST


# ----- functions, statements and synchronization (for the HDL4xx hazards) -----------------------------


def enclosing_function(facts: FileFacts, node: ast.AST) -> ast.AST | None:
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        node = facts.parents.get(node)
    return node


def enclosing_statement(facts: FileFacts, node: ast.AST) -> ast.stmt | None:
    while node is not None and not isinstance(node, ast.stmt):
        node = facts.parents.get(node)
    return node


def is_sync_call(node: ast.AST) -> bool:
    """A call that waits for the GPU: `*.synchronize()` (torch.cuda, an event, a stream)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SYNC_CALLS


def statements_after(facts: FileFacts, statement: ast.stmt, function: ast.AST) -> list[ast.stmt]:
    """The statements that run after `statement` in its function, in source order, without entering nested
    functions: the rest of its block, then the rest of each enclosing block."""
    following: list[ast.stmt] = []
    node = statement
    while node is not None and node is not function:
        owner = facts.parents.get(node)
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(owner, field_name, None)
            if isinstance(block, list) and node in block:
                following.extend(block[block.index(node) + 1:])
                break
        node = owner
    return following


def walk_in_order(statements: list[ast.stmt]):
    """Nodes of `statements`, statement by statement in source order, not entering nested functions/classes."""
    for statement in statements:
        stack = [statement]
        nodes = []
        while stack:
            node = stack.pop()
            if node is not statement and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                           ast.Lambda)):
                continue
            nodes.append(node)
            stack.extend(ast.iter_child_nodes(node))
        yield from sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


# ----- where a pinned rewrite would fail or gain nothing -------------------------------------------


@dataclass(frozen=True)
class _DefaultDeviceRegion:
    first: int
    last: int
    why: str


def may_run_under_default_device(facts: FileFacts, line: int) -> str | None:
    """Whether code on `line` may run under a default-device context this file sets up, and which: a torch
    factory there allocates on that device, so `pin_memory=True` raises on CUDA ("only dense CPU tensors can be
    pinned"), and a factory without `device=` is no host tensor at all.

    Seen in the file: `torch.set_default_device(...)` anywhere in the module; the body of a
    `with torch.device(...):` block; and the functions and classes of this file that such a block calls by name
    (`with torch.device(load_device): model = Model(config)` covers `Model`'s methods). A literal CPU device is no
    hazard. A context opened in another module comes from the project model: the functions called inside such a
    block, the constructors of the classes made there, and what they call.
    """
    regions = _DEFAULT_DEVICE_REGIONS.get(facts)
    if regions is None:
        regions = _DEFAULT_DEVICE_REGIONS[facts] = _default_device_regions(facts) \
            if _may_open_a_default_device(facts) else []
    in_file = next((region.why for region in regions if region.first <= line <= region.last), None)
    if in_file is not None or facts.project is None:
        return in_file
    # A context opened in another module, around code that calls this function (or makes its class).
    qualname = facts.qualname_at(line)
    opened_in = facts.project.device_context(qualname) if qualname else None
    if opened_in is None:
        return None
    return f"under `with torch.device(...)` in `{short_name(opened_in)}`, which reaches this code"


_DEFAULT_DEVICE_REGIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _may_open_a_default_device(facts: FileFacts) -> bool:
    """Whether the file calls `set_default_device`, or opens a `with` on a call named `device` (under any import
    name): only then are its regions looked for."""
    return bool(facts.calls_named(frozenset({"set_default_device"}))) or any(
        isinstance(facts.parents.get(call), ast.withitem) for call in facts.calls_named(frozenset({"device"})))


def _default_device_regions(facts: FileFacts) -> list[_DefaultDeviceRegion]:
    regions = []
    definitions: dict[str, list[ast.AST]] = {}
    for node in ast.walk(facts.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions.setdefault(node.name, []).append(node)
    for node in ast.walk(facts.tree):
        if isinstance(node, ast.Call) and facts.qualify(dotted_name(node.func)) == "torch.set_default_device" \
                and not _is_cpu_device(facts, node.args[0] if node.args else None):
            return [_DefaultDeviceRegion(1, 1 << 30, f"`torch.set_default_device` is called on line {node.lineno}")]
        if not isinstance(node, (ast.With, ast.AsyncWith)):
            continue
        context = next((item.context_expr for item in node.items
                        if isinstance(item.context_expr, ast.Call)
                        and facts.qualify(dotted_name(item.context_expr.func)) == "torch.device"
                        and not _is_cpu_device(facts, item.context_expr.args[0] if item.context_expr.args else None)),
                       None)
        if context is None:
            continue
        why = f"under `with torch.device(...)` (line {node.lineno})"
        regions.append(_DefaultDeviceRegion(node.lineno, node.end_lineno or node.lineno, why))
        for definition in _called_in(node.body, definitions):
            regions.append(_DefaultDeviceRegion(
                definition.lineno, definition.end_lineno or definition.lineno,
                f"in `{definition.name}`, which runs under `with torch.device(...)` (line {node.lineno})"))
    return regions


def _called_in(body: list[ast.stmt], definitions: dict[str, list[ast.AST]]) -> list[ast.AST]:
    """The functions of the file that `body` calls by name (`f(...)`, `obj.f(...)`), and for a class it
    constructs, its constructor and the methods that constructor calls on `self`: what runs while `body` runs,
    one call deep. A class's other methods (`forward`) run later, outside the block."""
    called = []
    for name in {dotted_name(call.func).rsplit(".", 1)[-1] for statement in body for call in ast.walk(statement)
                 if isinstance(call, ast.Call) and dotted_name(call.func)}:
        for definition in definitions.get(name, []):
            if not isinstance(definition, ast.ClassDef):
                called.append(definition)
                continue
            methods = {method.name: method for method in definition.body
                       if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for constructor in (methods.get(name) for name in ("__init__", "__post_init__")):
                if constructor is None:
                    continue
                called.append(constructor)
                called.extend(methods[call.func.attr] for call in ast.walk(constructor)
                              if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                              and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"
                              and call.func.attr in methods)
    return called


def _is_cpu_device(facts: FileFacts, node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.split(":")[0] == "cpu"


def no_pinned_rewrite(facts: FileFacts, line: int, data: ast.expr | None = None, shown_data: str = "") -> str | None:
    """Why a copy on `line` gets no pinned rewrite, for the end of its message; None when it may get one.
    `data`: what the rewrite would pass to `torch.tensor(..., pin_memory=...)`, if it is that factory.

    In order: a default-device context (pinning raises on CUDA), data torch cannot pin (it raises on CUDA too).
    (Code that runs once is not reported at all: see `runs_once`.)"""
    context = may_run_under_default_device(facts, line)
    if context is not None:
        return (f"it may run {context}, where a factory allocates on that device and `pin_memory=True` raises on "
                "CUDA, so no rewrite is offered")
    if data is not None:
        kind = pin_data_kind(facts, data, line)
        if kind in (PinData.NUMPY, PinData.TENSOR):
            return (f"`{shown_data}` is {kind.value}, which `torch.tensor(..., pin_memory=True)` cannot pin (it "
                    "raises on CUDA), so no rewrite is offered: copy from a pinned staging buffer")
    return None


def unpinnable_data(facts: FileFacts, data: ast.expr, line: int, shown_data: str) -> str | None:
    """The unsafe-fix reason for data that may be what `torch.tensor(..., pin_memory=True)` refuses; None for
    Python data."""
    if pin_data_kind(facts, data, line) is PinData.PYTHON:
        return None
    return (f"`{shown_data}` may be {PinData.UNKNOWN.value}, which `torch.tensor(..., pin_memory=True)` cannot "
            "pin: it raises on CUDA")

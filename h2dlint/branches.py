"""Branches no call takes: code under an `if` whose test the project's calls never make true (or false).

`if skip_type == "logSNR":` in a function every call of which passes `skip_type="time_uniform"`, `if flag_RL:` where
no call passes `flag_RL` and its default is False, `if self.schedule == "discrete":` in a class every construction
of which passes `"linear"`: the block never runs, so what it would copy or read costs nothing. The values come
from the project model (ProjectModel.literals, ProjectModel.attribute_literals); this module reads the tests.

Also branches only another accelerator takes (`other_device_branch`): `if x.device.type == "mps":`, which on a
CUDA device never runs either, whatever the project passes.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import math
import operator
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from .syntax import blocks, dotted_name

if TYPE_CHECKING:
    from .facts import FileFacts

# Among the values a parameter or an attribute takes (ProjectModel.literals): one certainly not None and otherwise
# unknown (`x or []`, a tensor, a parameter after `if x is None: raise`). A tuple, which no literal the model
# records is, so that it is written and read back as the literals are.
NOT_NONE = ("not None",)


def untaken_branch(facts: FileFacts, line: int) -> str | None:
    """Why `line` never runs, when it sits in a block of an `if` (in its function) whose test the values the
    project passes never make go that way: "`skip_type == 'logSNR'` is never True (`skip_type` is
    'time_uniform')". Tests read: `==`, `!=`, `<` and the like (against literals, infinities among them), `in`,
    `is None`, truth, `isinstance` and `torch.is_tensor`, `not`, `and`, `or`, of a name or of its `len`. None
    elsewhere, and wherever a value tested is not known."""
    if facts.project is None:
        return None
    function = facts.function_at(line)
    qualname = facts.qualname_of(function) if function is not None else None
    if function is None or qualname is None:
        return None
    arms = _arms_around(function, line)
    if not arms:
        return None
    values = _tested_names(facts, function, qualname)
    for test, taken in arms:
        outcomes = _outcomes(test, functools.partial(values.of, line=test.end_lineno or test.lineno), facts.qualify)
        if outcomes is not None and taken not in outcomes:
            shown = ", ".join(f"`{name}` is {' or '.join(_shown(value) for value in sorted(found, key=repr))}"
                              for name, found in values.told.items() if _mentions(test, name))
            return f"in a branch no call takes: `{ast.unparse(test)}` is never {taken} ({shown})"
    return None


def _shown(value: object) -> str:
    return "a value that is not None" if value == NOT_NONE else repr(value)


def _arms_around(function: ast.FunctionDef | ast.AsyncFunctionDef, line: int) -> list[tuple[ast.expr, bool]]:
    """The tests of the `if` statements of `function` whose blocks hold `line`, outermost first, each with the
    truth its block needs: True for the body, False for the `else` (an `elif` is an `if` in the `else`)."""
    arms: list[tuple[ast.expr, bool]] = []
    block: list[ast.stmt] = function.body
    while block:
        statement = next((statement for statement in block
                          if statement.lineno <= line <= (statement.end_lineno or statement.lineno)), None)
        if statement is None or isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        if isinstance(statement, ast.If):
            if statement.test.lineno <= line <= (statement.test.end_lineno or line):
                break  # the test itself (a block on the test's line, `if a: b`, is told apart from it only so)
            if statement.body and statement.body[0].lineno <= line <= (statement.body[-1].end_lineno or line):
                arms.append((statement.test, True))
                block = statement.body
            elif statement.orelse and statement.orelse[0].lineno <= line:
                arms.append((statement.test, False))
                block = statement.orelse
            else:
                break
            continue
        block = [part for inner in blocks(statement) for part in inner]
    return arms


def _tested_names(facts: FileFacts, function: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str) -> _TestedNames:
    """The names the tests of `function` may read, made once per function of the file."""
    known = _NAMES.setdefault(facts, {})
    found = known.get(id(function))
    if found is None:
        found = known[id(function)] = _TestedNames(facts, function, qualname)
    return found


_NAMES: weakref.WeakKeyDictionary[FileFacts, dict[int, _TestedNames]] = weakref.WeakKeyDictionary()


class _TestedNames:
    """The values the names a test reads take, by the project model: a parameter of the function that still holds
    what the call passed (the function stores into it only after the test, and not in a loop around it), or
    `self.attr` in a method. `told` keeps what was found, to say it."""

    def __init__(self, facts: FileFacts, function: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str) -> None:
        self.view = facts.project
        self.qualname = qualname
        arguments = function.args
        names = [arg.arg for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
        self.owner = qualname.rpartition(".")[0]
        method = bool(self.owner) and bool(names) and not any(
            isinstance(decorator, ast.Name) and decorator.id == "staticmethod" for decorator in function.decorator_list)
        self.self_name = names[0] if method else None
        # Where each name is stored, deleted, caught or captured (in nested functions too); 0 where no line says
        # when (`global`, `nonlocal`, a match pattern's capture), which no test comes before.
        self.stores: dict[str, list[int]] = {}
        self.loops: list[tuple[int, int]] = []
        self.arms: list[tuple[tuple[int, int], tuple[int, int]]] = []  # each `if` with an `else`: both blocks
        # `norm_type = float(norm_type)`: a store that keeps the value, converted (by name, the conversion, where).
        self.conversions: dict[str, list[tuple[int, Callable[[object], object]]]] = {}
        converted: set[int] = set()  # the targets of those stores
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and (convert := _conversion_of(node.value, node.targets[0].id, facts)) is not None:
                self.conversions.setdefault(node.targets[0].id, []).append((node.lineno, convert))
                converted.add(id(node.targets[0]))
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in converted:
                self.stores.setdefault(node.id, []).append(node.lineno)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.stores.setdefault(node.name, []).append(node.lineno)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                self.stores.setdefault(node.name, []).append(0)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                self.stores.setdefault(node.rest, []).append(0)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    self.stores.setdefault(name, []).append(0)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                self.loops.append((node.lineno, node.end_lineno or node.lineno))
            elif isinstance(node, ast.If) and node.orelse:
                self.arms.append((_span(node.body), _span(node.orelse)))
        self.parameters = set(names[1:] if method else names)
        self.told: dict[str, frozenset] = {}

    def holds_argument(self, name: str, line: int) -> bool:
        """Whether the parameter `name` holds, at `line`, what the call passed: every store into it comes later, and
        none in a loop around `line` (whose next turn would test the stored value)."""
        # A store in the body of an `if` whose `else` holds `line` does not reach it (`if x is None: x = ...
        # elif isinstance(x, torch.Tensor):`).
        stores = self.stores.get(name, ())
        apart = [body for body, orelse in self.arms if orelse[0] <= line <= orelse[1]]
        reaching = [store for store in stores if not any(start <= store <= end for start, end in apart)]
        return name in self.parameters and all(store > line for store in reaching) and not any(
            start <= line <= end and any(start <= store <= end for store in stores) for start, end in self.loops)

    def of(self, expr: ast.expr, line: int) -> frozenset | None:
        assert self.view is not None
        found: frozenset | None = None
        if isinstance(expr, ast.Name) and self.holds_argument(expr.id, line):
            name, found = expr.id, self.view.literals(self.qualname, expr.id)
            for at, convert in self.conversions.get(name, ()):
                if found and at < line:  # (each of these conversions gives the same when applied again)
                    try:
                        found = frozenset(value if value == NOT_NONE else convert(value) for value in found)
                    except (TypeError, ValueError):
                        found = None
        elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) \
                and expr.value.id == self.self_name and self.self_name is not None:
            name, found = f"self.{expr.attr}", self.view.attribute_literals(self.owner, expr.attr)
        if found:
            self.told[name] = found
        return found or None


def _conversion_of(value: ast.expr, name: str, facts: FileFacts) -> Callable[[object], object] | None:
    """The builtin `float`, `int`, `bool` or `str` when `value` is one of them applied to `name` alone."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _CONVERSIONS \
            and facts.qualify(value.func.id) is None and len(value.args) == 1 and not value.keywords \
            and isinstance(value.args[0], ast.Name) and value.args[0].id == name:
        return _CONVERSIONS[value.func.id]
    return None


_CONVERSIONS: dict[str, Callable[[object], object]] = {"float": float, "int": int, "bool": bool, "str": str}


_COMPARISONS: dict[type, Callable[[object, object], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.In: lambda a, b: a in b,  # type: ignore[operator]
    ast.NotIn: lambda a, b: a not in b, ast.Is: operator.is_, ast.IsNot: operator.is_not,  # type: ignore[operator]
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}


def _outcomes(test: ast.expr, values_of: Callable[[ast.expr], frozenset | None],
              qualify: Callable[[str | None], str | None]) -> frozenset[bool] | None:
    """The truths `test` may have, given the values `values_of` knows of the names it reads; None when it reads
    one whose values are not known, or has a shape not read here. A name's values are taken one at a time, each
    name on its own: more truths than the code may have, never fewer."""
    if isinstance(test, ast.BoolOp):
        # One part decides: a part never true makes an `and` false, a part always true makes an `or` true.
        decisive = isinstance(test.op, ast.Or)
        found = [_outcomes(value, values_of, qualify) for value in test.values]
        if any(outcome == {decisive} for outcome in found):
            return frozenset({decisive})
        if any(outcome is None for outcome in found):
            return None
        if all(outcome == {not decisive} for outcome in found):
            return frozenset({not decisive})
        return frozenset({True, False})
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _outcomes(test.operand, values_of, qualify)
        return frozenset(not outcome for outcome in inner) if inner is not None else None
    typed = _type_test(test, qualify)
    if typed is not None:
        subject, types = typed
        found = values_of(subject)
        if found is None or NOT_NONE in found:
            return None
        truths = {_is_instance(value, types) for value in found}
        return None if None in truths else frozenset(truths)  # type: ignore[arg-type]
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        compare = _COMPARISONS.get(test.ops[0].__class__)
        left, right = test.left, test.comparators[0]
        constant = _constant(right)
        if constant is _UNKNOWN:
            constant = _infinity(right, qualify)
        if compare is None or constant is _UNKNOWN:
            return None
        if isinstance(test.ops[0], (ast.Is, ast.IsNot)) and constant is not None:
            return None  # `is` only against None: a literal's identity is no fact of the code
        measured = isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len" \
            and len(left.args) == 1 and not left.keywords
        values = values_of(left.args[0] if measured else left)  # type: ignore[attr-defined]
        if values is None:
            return None
        if NOT_NONE in values:
            # Only whether it is None is known of such a value: `x is None`, `x is not None`.
            if measured or not isinstance(test.ops[0], (ast.Is, ast.IsNot)):
                return None
            values = values - {NOT_NONE}
            found = {isinstance(test.ops[0], ast.IsNot)}
            return frozenset({*found, *(bool(compare(value, constant)) for value in values)})
        try:
            if measured:  # `len(prefix) > 1`: the lengths of the strings the parameter takes
                values = frozenset(len(value) for value in values)  # type: ignore[arg-type]
            return frozenset(bool(compare(value, constant)) for value in values)
        except TypeError:  # `x in 3`: not a test the code can make
            return None
    values = values_of(test)
    return frozenset(bool(value) for value in values) if values is not None and NOT_NONE not in values else None


_UNKNOWN = object()
# The classes a type test may name whose instances h2dlint can tell apart, by the name written (a builtin's, unless
# the file binds that name) or qualified (torch's tensor class, of which no literal is an instance).
_BUILTIN_TYPES: dict[str, type] = {kind.__name__: kind for kind in (int, float, bool, str, bytes, complex, list,
                                                                     tuple, dict, set, frozenset)}
_TENSOR_CLASSES = frozenset({"torch.Tensor"})


def _type_test(test: ast.expr, qualify: Callable[[str | None], str | None]) -> tuple[ast.expr, tuple] | None:
    """(the value tested, the classes named) for `torch.is_tensor(x)`, `isinstance(x, C)` and `isinstance(x, (C,
    D))`: a builtin class its type, any other class `_UNKNOWN`, torch's tensor class nothing (a literal, the only
    value a test is read against, is never a tensor)."""
    if not (isinstance(test, ast.Call) and not test.keywords and len(test.args) in (1, 2)
            and not any(isinstance(arg, ast.Starred) for arg in test.args)):
        return None
    called = dotted_name(test.func)
    if len(test.args) == 1:
        return (test.args[0], ()) if qualify(called) == "torch.is_tensor" else None
    if called != "isinstance" or qualify("isinstance") is not None:
        return None
    named = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    types: list = []
    for expr in named:
        written = dotted_name(expr)
        if qualify(written) in _TENSOR_CLASSES:
            continue
        if isinstance(expr, ast.Name) and expr.id in _BUILTIN_TYPES and qualify(expr.id) is None:
            types.append(_BUILTIN_TYPES[expr.id])
        else:
            types.append(_UNKNOWN)
    return test.args[0], tuple(types)


def _is_instance(value: object, types: tuple) -> bool | None:
    """Whether the literal `value` (a string, a number, a bool or None: never a tensor) is an instance of one of
    `types` (see `_type_test`); None when a class h2dlint cannot tell decides it."""
    if any(isinstance(value, kind) for kind in types if isinstance(kind, type)):
        return True
    return None if _UNKNOWN in types else False


def _constant(expr: ast.expr) -> object:
    """The literal `expr` writes (a constant, or a tuple, list or set of them), else `_UNKNOWN`."""
    try:
        value = ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN
    if isinstance(value, (list, set)):
        return tuple(value)
    return value if isinstance(value, (str, int, float, bool, tuple, frozenset)) or value is None else _UNKNOWN


_INFINITIES = frozenset({"math.inf", "torch.inf", "numpy.inf"})


def _infinity(expr: ast.expr, qualify: Callable[[str | None], str | None]) -> object:
    """Infinity as written by `math.inf`, `torch.inf`, `np.inf` or `float("inf")` (or minus one of them), compared
    with a norm's order (`if norm_type == inf:`); else `_UNKNOWN`."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        inner = _infinity(expr.operand, qualify)
        return -inner if isinstance(inner, float) else _UNKNOWN
    if qualify(dotted_name(expr)) in _INFINITIES:
        return float("inf")
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "float" \
            and qualify("float") is None and len(expr.args) == 1 and not expr.keywords:
        written = _constant(expr.args[0])
        with contextlib.suppress(TypeError, ValueError):
            if isinstance(written, str) and math.isinf(float(written)):
                return float(written)
    return _UNKNOWN


def _span(block: list[ast.stmt]) -> tuple[int, int]:
    return block[0].lineno, block[-1].end_lineno or block[-1].lineno


def _mentions(test: ast.expr, name: str) -> bool:
    return any((isinstance(node, ast.Name) and node.id == name)
               or (isinstance(node, ast.Attribute) and f"self.{node.attr}" == name) for node in ast.walk(test))


def other_device_branch(facts: FileFacts, line: int) -> str | None:
    """Why `line` runs only on another accelerator, when it does: it sits in the arm of an `if` (in its function)
    that a CUDA device never takes (`if x.device.type == "mps":`, the `else` of `if x.device.type != "xpu":`), or
    after an `if` that a CUDA device always leaves early (`if x.device.type not in ("mps", "xla"): return ...`).
    A copy or a read there is that accelerator's."""
    function = facts.function_at(line)
    if function is None:
        return None
    exits = [(test, taken) for test, taken, _ in _exits_before(function, line)]
    for test, taken in [*_arms_around(function, line), *exits]:
        on_cuda = _truth_on_cuda(test)
        if on_cuda is not None and on_cuda != taken:
            return f"in a branch a CUDA device never takes: `{ast.unparse(test)}` is {on_cuda} there"
    return None


def non_tensor_branch(facts: FileFacts, line: int) -> str | None:
    """Why a copy at `line` may never run: it sits where a parameter of its function is known not to be a tensor
    (the arm of `if not torch.is_tensor(timesteps):`, the `else` of `if isinstance(x, torch.Tensor):`, past `if
    torch.is_tensor(x): return x`), converting what a caller may pass as a Python value. Where every call passes a
    tensor the branch never runs; read in held-out trees, such copies were mostly that (a module's `forward`
    taking either, always given tensors). None where every call of the project passes the parameter a Python
    literal or leaves it to its default (`ProjectModel.literals`), or some call passes it a literal, a list or
    tuple, a comprehension or `.tolist()` (`ProjectModel.passes_python_value`): the branch runs. (Without a
    project model no call is known to.) Data a call passes through other names (a numpy array, a local bound
    to a list) is not seen."""
    function = facts.function_at(line)
    qualname = facts.qualname_of(function) if function is not None else None
    if function is None or qualname is None:
        return None
    values = _tested_names(facts, function, qualname)
    # (Past an `if` that raises for a tensor the function takes no tensor at all: its conversions always run.)
    returns = [(test, taken) for test, taken, leaves in _exits_before(function, line) if isinstance(leaves, ast.Return)]
    for test, taken in [*_arms_around(function, line), *returns]:
        for subject in _non_tensors(test, taken, facts.qualify):
            parameter = _argument_named(facts, values, subject, test.lineno)
            if parameter is None:
                continue
            name, at = parameter
            known = values.of(ast.Name(name, ast.Load()), at) if facts.project is not None else None
            if facts.project is not None and (known is not None and NOT_NONE not in known
                                              or facts.project.passes_python_value(qualname, name)):
                continue  # a call passes Python data (every call a literal, or some call a list): the branch runs
            return f"in a branch for `{ast.unparse(subject)}` not a tensor (`{ast.unparse(test)}`), which callers " \
                   "may never take"
    return None


def _non_tensors(test: ast.expr, truth: bool, qualify: Callable[[str | None], str | None]) -> list[ast.expr]:
    """The values `test` having `truth` shows not to be tensors: by `torch.is_tensor(x)` or `isinstance(x,
    torch.Tensor)` (naming no other class) false, under `not`, as a part of an `and` that is true or of an `or`
    that is false."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _non_tensors(test.operand, not truth, qualify)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) is truth:
            return [found for part in test.values for found in _non_tensors(part, truth, qualify)]
        return []
    typed = _type_test(test, qualify)
    if truth or typed is None or typed[1] or not isinstance(test, ast.Call):
        return []
    named = test.args[-1]
    return [] if isinstance(named, ast.Tuple) and not named.elts else [typed[0]]  # (`isinstance(x, ())` is False)


def _argument_named(facts: FileFacts, values: _TestedNames, subject: ast.expr, line: int) -> tuple[str, int] | None:
    """The parameter `subject`, read at `line`, holds what the call passed of, and the line where it is read so:
    `subject` itself, or the parameter a local bound only to it names (`timesteps = timestep` before the test)."""
    if not isinstance(subject, ast.Name):
        return None
    if values.holds_argument(subject.id, line):
        return subject.id, line
    bindings = facts.reaching_bindings(subject.id, line) or []
    if len(bindings) == 1 and isinstance(value := bindings[0].value, ast.Name) \
            and values.holds_argument(value.id, bindings[0].line):
        return value.id, bindings[0].line
    return None


def _exits_before(function: ast.FunctionDef | ast.AsyncFunctionDef,
                  line: int) -> list[tuple[ast.expr, bool, ast.Return | ast.Raise]]:
    """The tests of the `if` statements without `else` before `line`, in the blocks that hold it, whose body always
    leaves the function (`return`, `raise`): `line` runs only where each is False (the truth each comes with), each
    with the statement that leaves."""
    exits: list[tuple[ast.expr, bool, ast.Return | ast.Raise]] = []
    block: list[ast.stmt] = function.body
    while block:
        for statement in block:
            if (statement.end_lineno or statement.lineno) >= line:
                break
            if isinstance(statement, ast.If) and not statement.orelse \
                    and isinstance(statement.body[-1], (ast.Return, ast.Raise)):
                exits.append((statement.test, False, statement.body[-1]))
        holder = next((statement for statement in block
                       if statement.lineno <= line <= (statement.end_lineno or statement.lineno)), None)
        if holder is None or isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        block = next((inner for inner in blocks(holder)
                      if inner and inner[0].lineno <= line <= (inner[-1].end_lineno or inner[-1].lineno)), [])
    return exits


# The device types and `t.is_*` flags of other accelerators: a program that runs on one of them runs its tensors
# there. Not the CPU's: a CUDA program holds host tensors too, and its branch for one is where they are copied.
_OTHER_DEVICE_TYPES = frozenset({"mps", "xla", "xpu", "npu", "hpu", "mtia", "mlu", "musa", "meta"})
_OTHER_DEVICE_FLAGS = frozenset(f"is_{kind}" for kind in _OTHER_DEVICE_TYPES)


def _truth_on_cuda(test: ast.expr) -> bool | None:
    """What `test` is in a program that runs on CUDA devices, when it asks whether a device is another
    accelerator: False for `x.device.type == "mps"`, `device.type in ("mps", "xla")`, `t.is_mps`; True for
    `x.device.type != "xpu"`. None where it asks something else, or may be asking about a CPU tensor
    (`x.device.type == "cuda"`, `t.is_cuda`)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _truth_on_cuda(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        found = [_truth_on_cuda(value) for value in test.values]
        decisive = isinstance(test.op, ast.Or)  # one True decides an `or`, one False an `and`
        if decisive in found:
            return decisive
        return (not decisive) if all(truth is not None for truth in found) else None
    if isinstance(test, ast.Attribute):
        return False if test.attr in _OTHER_DEVICE_FLAGS else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_device_type(test.left)):
        return None
    operator_, types = test.ops[0], _constant(test.comparators[0])
    if isinstance(operator_, (ast.Eq, ast.NotEq)) and isinstance(types, str):
        types = (types,)
    elif not (isinstance(operator_, (ast.In, ast.NotIn)) and isinstance(types, tuple)):
        return None  # (`type in "cuda:0"` tests a substring)
    if not types or not all(isinstance(kind, str) and kind in _OTHER_DEVICE_TYPES for kind in types):
        return None
    return isinstance(operator_, (ast.NotEq, ast.NotIn))


def _is_device_type(expr: ast.expr) -> bool:
    """`x.device.type`, `device.type`, `self.device.type`: the type of a device, compared with strings."""
    return isinstance(expr, ast.Attribute) and expr.attr == "type" and (
        isinstance(expr.value, ast.Attribute) and expr.value.attr == "device"
        or isinstance(expr.value, ast.Name) and expr.value.id in ("device", "dev"))

"""Where code makes the host wait for the GPU: the reasoning shared by the HDL2xx, HDL3xx and HDL501 rules.

One pass over a file's `ast` finds every expression that may synchronize the host
with the GPU stream (a `SyncSite`: what it is, which tensor it reads). Which rule, if
any, reports a site depends on where it sits (a loop, `forward`, CUDA graph capture,
a constructor, a logging call) and on what is known of the tensor, and is decided by
`owner()`. The rules are thin: they name their sites as candidates and report those
`owner()` gives them, so every site is reported at most once, under one code.
"""

from __future__ import annotations

import ast
import functools
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .branches import other_device_branch, untaken_branch
from .facts import (
    HOST_TENSOR_TYPES,
    NON_TENSOR_METHODS,
    OPEN_GATE,
    SYNC_BUILTINS,
    SYNC_METHODS,
    Data,
    FileFacts,
    Placement,
)
from .gaps import TokensApart
from .hotness import (
    NOT_PER_STEP_WORDS,
    CodeContext,
    built_once_per_model,
    context_at,
    failing_block,
    in_test_code,
    nothing_calls,
    only_when_empty,
    runs_once_by_name,
)
from .placement import classify_data, classify_placement
from .syntax import dotted_name, name_words
from .values import TENSOR_ONLY_METHODS, is_certainly_tensor, on_gpu_as_tensor

if TYPE_CHECKING:
    import libcst as cst
else:
    from .deferred import libcst as cst

BOOLEAN_METHODS = frozenset({
    "bool", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isin",
    "logical_and", "logical_or", "logical_not", "logical_xor", "signbit", "isclose", "isreal",
})
# Where the audits of code of unknown hotness (HDL204, HDL108) do not look, besides run-once code and functions
# named for set-up, I/O or diagnostics (facts.NOT_PER_STEP_WORDS): functions whose purpose is to hand a value to
# the host.
HOST_CONVERSION_FUNCTIONS = frozenset({"tolist", "numpy", "to_numpy", "__array__", "item", "cpu", "to_list",
                                       "state_dict", "to_dict", "asdict"})
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
LOG_WORDS = frozenset({"log", "logs", "logger", "logging", "verbose", "debug", "print"})
# Decorators that compile a function into a GPU kernel.
KERNEL_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics", "helion.kernel"})
OTHER_DEVICE_WORDS = frozenset({"npu", "xpu", "hpu", "mps", "mlu", "musa"})  # `if _is_npu:`, `if is_xpu():`
CAPTURE_WORDS = frozenset({"capture", "capturing"})  # the last word of a graph-capture flag: `in_capture`
STREAM_FACTORIES = frozenset({"torch.cuda.Stream", "torch.cuda.Event", "torch.cuda.current_stream",
                              "torch.cuda.default_stream", "torch.Stream", "torch.Event"})
DEVICE_SYNC_CALLS = frozenset({"torch.cuda.synchronize", "torch.accelerator.synchronize"})
# Builtins that iterate a tensor and test each element with `bool()` (`any`, `all`) or compare elements
# (`max`, `min`): one host read per element. `sum`, `list` and `for` only unbind it into device views: no read.
ELEMENT_READING_BUILTINS = frozenset({"any", "all", "max", "min"})
READING_BUILTINS = SYNC_BUILTINS | ELEMENT_READING_BUILTINS
# Where torch or Python needs an int (a size, a count, a bound) or, for a fill value, a Python number, a tensor
# is converted with `__index__` or `.item()`: an implicit `.item()`. By function: the positions of such arguments
# (None: every positional one) and their keywords; a tuple or list argument counts by its elements.
INT_ARGUMENTS = {
    "torch.arange": (None, frozenset({"start", "end", "step"})),
    **{f"torch.{factory}": (None, frozenset({"size"})) for factory in ("zeros", "ones", "empty", "rand", "randn")},
    "torch.full": ((0, 1), frozenset({"size", "fill_value"})),  # a fill value is a Python number too
    "torch.full_like": ((1,), frozenset({"fill_value"})),
    "torch.randperm": ((0,), frozenset({"n"})),
    "torch.eye": ((0, 1), frozenset({"n", "m"})),
    "torch.split": ((1,), frozenset({"split_size_or_sections"})),
    "range": (None, frozenset()),  # the builtin
}
INT_ARGUMENT_METHODS = {  # tensor methods
    **{method: (None, frozenset()) for method in ("view", "reshape", "expand", "repeat")},
    **{method: (None, frozenset({"size"})) for method in ("new_zeros", "new_ones", "new_empty")},
    "new_full": ((0, 1), frozenset({"size", "fill_value"})),
    "split": ((0,), frozenset({"split_size"})),
}
INT_ARGUMENT_BUILTINS = frozenset({"range"})
# Scalar keyword arguments of tensor methods and torch functions of the same name (`g.sub(w, alpha=proj)`): a tensor
# there is read with `.item()` too.
SCALAR_KEYWORD_ARGUMENTS = {**{name: frozenset({"alpha"}) for name in ("add", "add_", "sub", "sub_")},
                            **{name: frozenset({"value"}) for name in ("addcmul", "addcmul_", "addcdiv", "addcdiv_")}}
INT_ARGUMENT_CALL_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in INT_ARGUMENTS) | frozenset(INT_ARGUMENT_METHODS)
# What a file's text shows where a list may be repeated a tensor's number of times (`[x] * t`, `t * ([x])`), or
# where a tensor may be passed as an int (`rand` stands for `randn(`, `randperm(`).
LIST_REPETITION = (TokensApart(r"\]", r"\*", gap=")"), TokensApart(r"\*", r"\[", gap="("))
INT_ARGUMENT_TEXT = ("range(", "zeros(", "ones(", "empty(", "full(", "full_like(", "rand", "eye(", "split(", ".view(", ".reshape(",
                     ".expand(", ".repeat(", "new_zeros(", "new_ones(", "new_empty(", *LIST_REPETITION)

# Site kinds: what a sync rule reports (SyncReporter.kinds).
# ACCUMULATE is a read whose value is added to a total that carries over from one pass to the next
# (`total += loss.item()` in a loop): see `_Finder._accumulated`.
READ, ACCUMULATE, CONDITION, NONZERO, MASK, UNIQUE, REPEAT, EXPLICIT = (
    "read", "accumulate", "condition", "nonzero", "mask", "unique", "repeat", "explicit")
ALL_KINDS = frozenset({READ, ACCUMULATE, CONDITION, NONZERO, MASK, UNIQUE, REPEAT, EXPLICIT})
# The last name part of the calls that can be a site of each kind (method, function or builtin).
KIND_CALL_NAMES = {READ: SYNC_METHODS | {"to", "type"} | READING_BUILTINS | INT_ARGUMENT_CALL_NAMES
                   | frozenset(SCALAR_KEYWORD_ARGUMENTS), ACCUMULATE: frozenset({"item"}) | SYNC_BUILTINS,
                   CONDITION: frozenset(),
                   NONZERO: frozenset({"nonzero", "argwhere", "where"}), MASK: frozenset({"masked_select"}),
                   UNIQUE: frozenset({"unique", "unique_consecutive"}), REPEAT: frozenset({"repeat_interleave"}),
                   EXPLICIT: frozenset({"synchronize"})}


@dataclass(frozen=True)
class SyncSite:
    node: ast.expr
    kind: str
    what: str  # how the code reads, e.g. "`.item()`", "`torch.nonzero`"
    placement: Placement  # of the tensor whose value or size is read
    repeats: ast.expr | None = None  # for REPEAT: the repeats tensor
    total_on_gpu: bool = False  # for ACCUMULATE: the running total is a CUDA tensor (the value goes there and back)
    # How the project model placed the tensor on the GPU (the attribute's definition and why), when this file
    # alone does not show it.
    inferred_from: str | None = None


def sync_sites(facts: FileFacts) -> dict[tuple[int, int, int, int], SyncSite]:
    """Every possible sync in the file, by (line, column, end line, end column); computed once per file."""
    sites = _CACHE.get(facts)
    if sites is None:
        sites = _Finder(facts).find()
        _CACHE[facts] = sites
    return sites


_CACHE: weakref.WeakKeyDictionary[FileFacts, dict] = weakref.WeakKeyDictionary()


def owner(site: SyncSite, context: CodeContext, facts: FileFacts) -> str | None:
    """The code of the rule that reports `site` where it is, or None when it costs nothing worth reporting.

    What costs nothing is decided here, for every rule: a host tensor, code that runs once (by its name too, see
    `runs_once_by_name`), test code, a logging call, a branch taken only while CUDA graphs are captured or only on
    another device (by a flag, or by the device's type: `other_device_branch`), or by no call of the project
    (`untaken_branch`), a GPU kernel's body, a function only the constructors of `nn.Module`s and optimizers
    call, loops and all, where it is not hot by its own name (`built_once_per_model`: it builds what the model
    holds, once), an empty input's fallback (`only_when_empty`), a module whose path
    names another accelerator (`npu/`: its tensors are that accelerator's, whatever the project's CUDA code puts
    in the same attributes; a file that only names another accelerator's API may be one that supports several,
    `if device.type == "xpu":`).
    Otherwise each sync rule says what it reports (`kinds`, and `where` by placement), and the first that reports
    the site owns it; the declarations are disjoint, so there is at most one."""
    if site.placement is Placement.HOST or facts.other_accelerator_path:
        return None
    if not context.in_graph_capture and (
            runs_once_by_name(context) or in_test_code(facts, context) or _only_for_logging(site.node, facts)
            or _only_while_capturing(site.node, facts)
            or _only_on_other_devices(site.node, facts) or _in_device_kernel(site.node, facts)
            or untaken_branch(facts, site.node.lineno) is not None
            or other_device_branch(facts, site.node.lineno) is not None
            or not context.hot_function and built_once_per_model(facts, site.node.lineno) is not None
            or only_when_empty(facts, *facts.span(site.node)) is not None):
        return None
    for rule in sync_rules():
        where = rule.where.get(site.placement) if site.kind in rule.kinds else None
        if where is not None and _holds(where, context, facts, site.node):
            return rule.code
    return None


# Where a rule may report a site (SyncReporter.where): under CUDA graph capture (there, every kind is an error);
# in hot code (a loop, a hot function); in a function hot by its own name (`forward`, a step, a configured name),
# not only through calls, nor in a loop alone (where host-side preprocessing lives): for shapes of tensors of
# unknown placement, which in code hot only through calls were often host tensors (see docs/precision.md);
# wherever it runs more than once; in code not known to be hot nor cold (the audit's place).
GRAPH_CAPTURE, HOT, NAMED_HOT_FUNCTION, ANYWHERE, UNKNOWN_HOTNESS = (
    "graph-capture", "hot", "named-hot-function", "anywhere", "unknown-hotness")


def _holds(where: str, context: CodeContext, facts: FileFacts, node: ast.AST) -> bool:
    if where == GRAPH_CAPTURE or context.in_graph_capture:
        return where == GRAPH_CAPTURE and context.in_graph_capture
    if where == HOT:
        return context.hot
    if where == NAMED_HOT_FUNCTION:
        return context.hot_function and context.hot_chain is None
    if where == UNKNOWN_HOTNESS:
        return not context.hot and not outside_per_step_code(context, facts) and facts.mentions_torch
    # Anywhere it may run more than once: not in a function nothing in the project runs, unless hot.
    return where == ANYWHERE and (context.hot or not nothing_calls(facts, node.lineno))


@functools.cache
def sync_rules() -> tuple[type, ...]:
    """Every sync rule of the catalogue (a SyncReporter), in code order."""
    from .rule import all_rules

    return tuple(rule for rule in all_rules().values() if issubclass(rule, SyncReporter))


def codes_reporting(kinds: frozenset[str] | None = None, placement: Placement | None = None,
                    where: str | None = None) -> frozenset[str]:
    """The codes of the sync rules that report some of `kinds` (any kind when None), on `placement`, `where`."""
    return frozenset(rule.code for rule in sync_rules()
                     if (kinds is None or rule.kinds & kinds)
                     and any((placement is None or placed is placement) and (where is None or at == where)
                             for placed, at in rule.where.items()))


def outside_per_step_code(context: CodeContext, facts: FileFacts) -> bool:
    """Whether code that is not hot is still no candidate for per-step work: it runs once (see `_runs_once`), or
    sits in a test module or in a function whose name says set-up, I/O, printing, a test or a benchmark
    (NOT_PER_STEP_WORDS), or that hands a value to the host (`def tolist(self)`)."""
    if runs_once_by_name(context) or facts.off_step_module:
        return True
    return context.function in HOST_CONVERSION_FUNCTIONS or any(
        word in NOT_PER_STEP_WORDS for word in name_words(context.function or ""))


def _within_function(node: ast.AST, facts: FileFacts):
    """(child, parent) for each step from `node` up to, not including, its enclosing function."""
    child, parent = node, facts.parents.get(node)
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        yield child, parent
        child, parent = parent, facts.parents.get(parent)


def _in_device_kernel(node: ast.AST, facts: FileFacts) -> bool:
    """True inside a function compiled into a GPU kernel (`@triton.jit`, `@helion.kernel`): nothing in it runs on
    the host, so `range(t)` there is a device loop, not a read."""
    return any(qualified in KERNEL_DECORATORS for qualified in facts.decorators_around(node.lineno))


def _only_for_logging(node: ast.AST, facts: FileFacts) -> bool:
    """True inside a `print`/logger/warnings call, a `raise`, an `if` branch about logging or debugging, or one
    that ends by raising (`hotness.failing_block`: it describes bad input before failing)."""
    for child, parent in _within_function(node, facts):
        if isinstance(parent, ast.Raise):
            return True
        if isinstance(parent, ast.If) and child is not parent.test and any(
                child is statement for statement in failing_block(parent)):
            return True
        if isinstance(parent, ast.Call):
            name = dotted_name(parent.func) or ""
            last = name.rsplit(".", 1)[-1]
            if name == "print" or name.startswith("warnings.") or (
                    last in LOG_METHODS and any(word in LOG_WORDS for word in name_words(name.rsplit(".", 1)[0]))):
                return True
        if isinstance(parent, ast.If) and child is not parent.test and any(
                word in LOG_WORDS for node_ in ast.walk(parent.test) for word in name_words(_identifier(node_))):
            return True
    return False


def _branch_tests(node: ast.AST, facts: FileFacts):
    """For each `if` or conditional expression around `node` in its function (not in its test): the tested
    expression with a leading `not` removed, whether there was one, and whether `node` is in the arm that runs
    when the test is true."""
    for child, parent in _within_function(node, facts):
        if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
            negated = isinstance(parent.test, ast.UnaryOp) and isinstance(parent.test.op, ast.Not)
            in_body = child in parent.body if isinstance(parent, ast.If) else child is parent.body
            yield (parent.test.operand if negated else parent.test), negated, in_body


def _only_while_capturing(node: ast.AST, facts: FileFacts) -> bool:
    """True in the arm of an `if` or a conditional expression that runs only while CUDA graphs are captured
    (`if in_capture:`, the `else` of `if not self.is_capturing:`): set-up that runs once per captured graph."""
    for tested, negated, in_body in _branch_tests(node, facts):
        words = name_words(_identifier(tested))
        if words and words[-1] in CAPTURE_WORDS and in_body != negated:
            return True
    return False


def _only_on_other_devices(node: ast.AST, facts: FileFacts) -> bool:
    """True in the arm of an `if` or a conditional expression that runs only on another device: `if _is_npu:`,
    `if is_xpu():`, the body of `if not x.is_cuda:`."""
    for tested, negated, in_body in _branch_tests(node, facts):
        words = set(name_words(_identifier(tested.func if isinstance(tested, ast.Call) else tested)))
        if in_body and (not negated and words & OTHER_DEVICE_WORDS or negated and "cuda" in words):
            return True
    return False


def _forced(call: ast.Call) -> bool:
    """`t.numpy(force=True)`, which copies a CUDA tensor to the host; a plain `.numpy()` of one raises instead."""
    return any(kw.arg == "force" and not (isinstance(kw.value, ast.Constant) and not kw.value.value)
               for kw in call.keywords)


def _identifier(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


_CONDITION_NODE_TYPES = frozenset({ast.If, ast.While, ast.IfExp, ast.Assert, ast.comprehension})


# Builtins a read value may go through on its way into a running total (`total += float(x.item())`).
_NUMBER_FUNCTIONS = frozenset({"float", "int", "abs", "round"})


class _Finder:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.sites: dict[tuple[int, int, int, int], SyncSite] = {}
        # Only the kinds some active rule reports are looked for: a site no active rule owns is never reported.
        active = facts.active_codes
        if active is None or (active & codes_reporting(where=GRAPH_CAPTURE) and facts.graph_captures):
            self.kinds = ALL_KINDS
        else:
            self.kinds = frozenset(kind for kind in ALL_KINDS if codes_reporting(frozenset({kind})) & active)
        # Without GPU evidence in its tree, nothing in a file classifies as a CUDA tensor: the checks that
        # only ever add sites on CUDA tensors are skipped.
        self.gpu_possible = facts.gpu_evidence
        # Whether an active rule reports sites outside hot code, and conditions on tensors of unknown placement.
        self.outside_hot = active is None or bool(active & codes_reporting(where=UNKNOWN_HOTNESS))
        self.possible_conditions = active is None or bool(
            active & codes_reporting(frozenset({CONDITION}), Placement.UNKNOWN))
        # A read added to a running total is an accumulate site only where the rule that reports those wherever
        # they are is on; otherwise it stays a read, for the rules that report reads (HDL201, HDL202, HDL204).
        self.accumulating = active is None or bool(
            active & codes_reporting(frozenset({ACCUMULATE}), Placement.UNKNOWN, ANYWHERE))

    def find(self) -> dict[tuple[int, int, int, int], SyncSite]:
        # `owner()` reports nothing in run-once code, and reads and conditions outside hot code only under
        # HDL204: looking there first spares classifying tensors no rule could report (the decision stays with
        # owner()).
        facts, kinds = self.facts, self.kinds
        nodes: list[ast.AST] = facts.calls_named(frozenset().union(*(KIND_CALL_NAMES[kind] for kind in kinds)))
        node_types = set()
        conditions = CONDITION in kinds and (self.gpu_possible or self.possible_conditions)
        if MASK in kinds or conditions:
            node_types.add(ast.Subscript)
        if conditions:
            node_types |= _CONDITION_NODE_TYPES
        if READ in kinds:
            node_types.add(ast.BinOp)  # list repetitions, `[x] * t`
        if node_types:
            nodes += [node for node in facts.scanned_nodes if type(node) in node_types]
        for node in nodes:
            context = context_at(self.facts, getattr(node, "lineno", None) or node.target.lineno)
            if not context.in_graph_capture and runs_once_by_name(context):
                continue
            needs_hot = not (context.hot or context.in_graph_capture or self.outside_hot)
            if isinstance(node, ast.Call):
                self._call(node, needs_hot)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                self._subscript(node, needs_hot, context)
            elif needs_hot or isinstance(node, ast.Subscript):
                continue
            elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
                self._condition(node.test)
            elif isinstance(node, ast.comprehension):
                for test in node.ifs:
                    self._condition(test)
            elif isinstance(node, ast.BinOp):
                self._list_repetition(node)
        return self.sites

    def add(self, node: ast.expr, kind: str, what: str, receiver: ast.expr | None, **extra) -> None:
        self.facts.inferences.clear()
        placement = classify_placement(self.facts, receiver, node.lineno) if receiver is not None \
            else Placement.UNKNOWN
        if placement is Placement.GPU and self.facts.inferences:
            extra["inferred_from"] = self.facts.inferences[0]
        if kind in (READ, ACCUMULATE) and placement is Placement.UNKNOWN and (
                classify_data(self.facts, receiver, node.lineno) in (Data.HOST, Data.LIKELY_HOST)
                or "proxy" in name_words(_identifier(receiver))):
            return  # numpy arrays and Python data; `torch.fx.Proxy` values, read while tracing a graph
        index = self.facts.line_index
        key = (node.lineno, index.column_from_utf8(node.lineno, node.col_offset),
               node.end_lineno, index.column_from_utf8(node.end_lineno, node.end_col_offset))
        if kind == CONDITION and key in self.sites:
            return  # a call, mask or repetition that is also a condition (`if x.nonzero():`) keeps its own kind
        self.sites[key] = SyncSite(node, kind, what, placement, **extra)

    def _call(self, call: ast.Call, needs_hot: bool) -> None:
        facts = self.facts
        func = call.func
        qualified = facts.qualify(dotted_name(func)) or ""
        method = func.attr if isinstance(func, ast.Attribute) and not qualified else None
        if needs_hot and (method in SYNC_METHODS or method in ("to", "type", "synchronize")
                          or qualified in DEVICE_SYNC_CALLS
                          or isinstance(func, ast.Name) and func.id in READING_BUILTINS) \
                and self._read_kind(call)[0] != ACCUMULATE:
            return  # reads and explicit syncs are reported in hot code only, and reads added to a running total
        positional = [arg for arg in call.args if not isinstance(arg, ast.Starred)]
        discarded = isinstance(facts.parents.get(call), ast.Expr)  # `model.cpu()` moves a module
        if method in SYNC_METHODS and not call.args and (method != "cpu" or not (call.keywords or discarded)) \
                and (method != "numpy" or _forced(call)):
            kind, extra = self._read_kind(call)
            self.add(call, kind, f"`.{method}()`", func.value, **extra)
        elif method == "to" and not discarded and self._copies_to_host(call):
            self.add(call, READ, "a blocking `.to(\"cpu\")`", func.value)
        elif method == "type" and (host_type := self._host_tensor_type(call)) is not None:
            self.add(call, READ, f"`.type({host_type})` (a CPU tensor type: a blocking copy to the host)", func.value)
        elif self._calls_builtin(call, SYNC_BUILTINS) and self._is_tensor(call.args[0]):
            kind, extra = self._read_kind(call)
            self.add(call, kind, f"`{func.id}(<tensor>)`", call.args[0], **extra)
        elif self._calls_builtin(call, ELEMENT_READING_BUILTINS) \
                and on_gpu_as_tensor(facts, call.args[0], call.lineno):
            # A CUDA tensor only: on values of unknown placement these are mostly Python collections.
            self.add(call, READ, f"`{func.id}(<tensor>)` (one read per element)", call.args[0])
        elif qualified in ("torch.nonzero", "torch.argwhere") or method in ("nonzero", "argwhere"):
            name = qualified or f".{method}()"
            self.add(call, NONZERO, f"`{name}`", positional[0] if qualified and positional else
                     func.value if method else None)
        elif qualified == "torch.where" and len(call.args) == 1 and not call.keywords:
            self.add(call, NONZERO, "one-argument `torch.where`", call.args[0])
        elif qualified == "torch.masked_select" or method == "masked_select":
            self.add(call, MASK, f"`{qualified or '.masked_select()'}`",
                     (positional[0] if positional else None) if qualified else func.value)
        elif qualified in ("torch.unique", "torch.unique_consecutive") or method in ("unique", "unique_consecutive"):
            self.add(call, UNIQUE, f"`{qualified or '.' + method + '()'}`",
                     (positional[0] if positional else None) if qualified else func.value)
        elif qualified == "torch.repeat_interleave" or method == "repeat_interleave":
            self._repeat_interleave(call, qualified, method)
        elif qualified in DEVICE_SYNC_CALLS or (method == "synchronize" and self._is_stream_or_event(func.value)):
            self.add(call, EXPLICIT, f"`{qualified}()`" if qualified else "`Stream/Event.synchronize()`", None)
        elif not needs_hot and (converted := self._tensor_passed_as_int(call, qualified, method)) is not None:
            name = qualified or (f".{method}" if method else func.id)
            self.add(call, READ, f"`{name}(<tensor>)` (an implicit `.item()`)", converted)

    def _read_kind(self, call: ast.Call) -> tuple[str, dict]:
        """READ, or ACCUMULATE (with whether the total is a CUDA tensor) for a read of a number added to a running
        total. Only `.item()` and `int(t)`/`float(t)`/`bool(t)` make a number: `.tolist()` and `.cpu()` make lists
        and tensors."""
        func = call.func
        number = isinstance(func, ast.Attribute) and func.attr == "item" \
            or isinstance(func, ast.Name) and func.id in SYNC_BUILTINS
        total = self._accumulated(call) if self.accumulating and number else None
        return (READ, {}) if total is None else (ACCUMULATE, {"total_on_gpu": total == "gpu"})

    def _accumulated(self, call: ast.Call) -> str | None:
        """Whether the value `call` reads is added to a running total that carries over: `total += x.item()`
        (or `-=`, the read anywhere in the added expression: `loss_sum += loss.item() * n`) where the statement
        repeats (in a loop or hot code) or the total outlives the call (an attribute or an item, `self.losses`,
        `metrics[k]`; a `nonlocal` or `global` name; a CUDA tensor, which the read's value is copied back to).
        Adding up a value per step is what makes the read repeat, whatever h2dlint knows of the function.
        "gpu" where the total is a CUDA tensor, "host" for another total that carries over, None otherwise."""
        parents = self.facts.parents
        node, parent = call, parents.get(call)
        # Arithmetic only, up to the statement: a value put in a list (`counts += [x.item()]`), a string or
        # another call's arguments is no number added up.
        while parent is not None and not isinstance(parent, ast.stmt):
            if not (isinstance(parent, (ast.BinOp, ast.UnaryOp)) or isinstance(parent, ast.Call)
                    and isinstance(parent.func, ast.Name) and parent.func.id in _NUMBER_FUNCTIONS
                    and parent.args[:1] == [node]):
                return None
            node, parent = parent, parents.get(parent)
        if not isinstance(parent, ast.AugAssign) or node is not parent.value \
                or not isinstance(parent.op, (ast.Add, ast.Sub)):
            return None
        target = parent.target
        if classify_placement(self.facts, target, parent.lineno) is Placement.GPU:
            return "gpu"
        if context_at(self.facts, parent.lineno).hot or not isinstance(target, ast.Name):
            return "host"
        functions = [node for node in self.facts.functions_around(parent.lineno) if not isinstance(node, ast.Lambda)]
        declared = bool(functions) and any(
            isinstance(statement, (ast.Nonlocal, ast.Global)) and target.id in statement.names
            for statement in ast.walk(functions[-1]))
        return "host" if declared else None

    def _tensor_passed_as_int(self, call: ast.Call, qualified: str, method: str | None) -> ast.expr | None:
        """The tensor `call` passes where an int is needed, if any (one known to be on a CUDA device first)."""
        if qualified in INT_ARGUMENTS:
            positions, keywords = INT_ARGUMENTS[qualified]
        elif method in INT_ARGUMENT_METHODS:
            positions, keywords = INT_ARGUMENT_METHODS[method]
        elif self._calls_builtin(call, INT_ARGUMENT_BUILTINS, any_arguments=True):
            positions, keywords = INT_ARGUMENTS[call.func.id]
        elif (name := method or qualified.removeprefix("torch.")) in SCALAR_KEYWORD_ARGUMENTS \
                and (method or qualified.startswith("torch.")):
            positions, keywords = (), SCALAR_KEYWORD_ARGUMENTS[name]
        else:
            return None
        if positions is not None and any(isinstance(arg, ast.Starred) for arg in call.args):
            return None  # the positions are not known
        arguments = [arg for index, arg in enumerate(call.args) if positions is None or index in positions]
        arguments += [keyword.value for keyword in call.keywords if keyword.arg in keywords]
        sizes = [element for argument in arguments
                 for element in (argument.elts if isinstance(argument, (ast.Tuple, ast.List)) else [argument])
                 if not isinstance(element, (ast.Starred, ast.Constant))]
        tensors = [size for size in sizes if is_certainly_tensor(self.facts, size, size.lineno)]
        return next((size for size in tensors if on_gpu_as_tensor(self.facts, size, size.lineno)),
                    tensors[0] if tensors else None)

    def _list_repetition(self, node: ast.BinOp) -> None:
        """`[x] * t` or `t * [x]`: Python repeats the list `t.__index__()` times, an implicit `.item()`."""
        if not isinstance(node.op, ast.Mult):
            return
        for sequence, count in ((node.left, node.right), (node.right, node.left)):
            if isinstance(sequence, (ast.List, ast.ListComp)) \
                    and is_certainly_tensor(self.facts, count, count.lineno):
                self.add(node, READ, "`[...] * <tensor>` (an implicit `.item()`)", count)
                return

    def _calls_builtin(self, call: ast.Call, names: frozenset[str], any_arguments: bool = False) -> bool:
        """`name(one_argument)` (or, with `any_arguments`, `name(...)`) for a builtin in `names` that this file
        does not rebind or import."""
        func = call.func
        return isinstance(func, ast.Name) and func.id in names \
            and (any_arguments or len(call.args) == 1 and not call.keywords) \
            and self.facts.bindings_at(func.id, call.lineno) is None and func.id not in self.facts.aliases

    def _copies_to_host(self, call: ast.Call) -> bool:
        target = call.args[0] if call.args else next((kw.value for kw in call.keywords if kw.arg == "device"), None)
        blocking = not any(kw.arg == "non_blocking" and not (isinstance(kw.value, ast.Constant) and not kw.value.value)
                           for kw in call.keywords)
        if isinstance(target, ast.Call) and self.facts.qualify(dotted_name(target.func)) == "torch.device" \
                and target.args:
            target = target.args[0]  # `torch.device("cpu")`
        return target is not None and blocking and isinstance(target, ast.Constant) and target.value == "cpu"

    def _host_tensor_type(self, call: ast.Call) -> str | None:
        """`torch.BoolTensor` in `t.type(torch.BoolTensor)` (or `t.type("torch.BoolTensor")`), a legacy CPU type."""
        if len(call.args) != 1 or any(kw.arg != "non_blocking" for kw in call.keywords):
            return None
        argument = call.args[0]
        name = argument.value if isinstance(argument, ast.Constant) and isinstance(argument.value, str) \
            else self.facts.qualify(dotted_name(argument))
        return name if name in HOST_TENSOR_TYPES else None

    def _is_stream_or_event(self, receiver: ast.expr) -> bool:
        facts = self.facts
        if isinstance(receiver, ast.Call):
            return facts.qualify(dotted_name(receiver.func)) in STREAM_FACTORIES
        if isinstance(receiver, ast.Name):
            values = facts.bindings_at(receiver.id, receiver.lineno)
            if values and all(value is not None for value in values):
                return all(isinstance(value, ast.Call) and facts.qualify(dotted_name(value.func)) in STREAM_FACTORIES
                           for value in values)
        return any(word in ("stream", "event") or word.endswith(("stream", "event"))
                   for word in name_words(_identifier(receiver)))

    def _repeat_interleave(self, call: ast.Call, qualified: str, method: str | None) -> None:
        if any(kw.arg == "output_size" for kw in call.keywords) or any(kw.arg is None for kw in call.keywords):
            return
        positional = list(call.args)
        if any(isinstance(arg, ast.Starred) for arg in positional):
            return
        keyword = next((kw.value for kw in call.keywords if kw.arg == "repeats"), None)
        if method:
            receiver, repeats = call.func.value, keyword or (positional[0] if positional else None)
            if len(positional) >= 3:
                return  # output_size given positionally
        else:
            if len(positional) >= 4:
                return
            receiver = positional[0] if positional else next(
                (kw.value for kw in call.keywords if kw.arg == "input"), None)
            repeats = keyword or (positional[1] if len(positional) > 1 else receiver)
        if repeats is None or not self._is_tensor(repeats):
            return
        if receiver is not None and classify_placement(self.facts, receiver, call.lineno) is Placement.HOST:
            return  # repeats live where the input does: on the host, nothing to wait for
        name = qualified or ".repeat_interleave()"
        self.add(call, REPEAT, f"`{name}`", repeats, repeats=repeats)

    def _is_tensor(self, expr: ast.expr, depth: int = 0) -> bool:
        facts = self.facts
        if on_gpu_as_tensor(facts, expr, expr.lineno):
            return True
        if isinstance(expr, ast.Call) and (facts.qualify(dotted_name(expr.func)) or isinstance(expr.func, ast.Attribute)
                                           and expr.func.attr in TENSOR_ONLY_METHODS):
            return is_certainly_tensor(facts, expr, expr.lineno)  # not `torch.cuda.memory_allocated()`, an int
        if classify_data(facts, expr, expr.lineno) is Data.TENSOR:
            return True
        if depth >= 3:
            return False
        if isinstance(expr, ast.Name):
            values = facts.bindings_at(expr.id, expr.lineno)
            return bool(values) and all(value is not None and self._is_tensor(value, depth + 1) for value in values)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
                and expr.func.attr not in NON_TENSOR_METHODS and not facts.qualify(dotted_name(expr.func)):
            return self._is_tensor(expr.func.value, depth + 1)
        if isinstance(expr, ast.Subscript):
            return self._is_tensor(expr.value, depth + 1)
        if isinstance(expr, ast.BinOp):
            return self._is_tensor(expr.left, depth + 1) or self._is_tensor(expr.right, depth + 1)
        return False

    def _subscript(self, node: ast.Subscript, needs_hot: bool, context: CodeContext) -> None:
        facts = self.facts
        index = node.slice
        # owner() reports masks of unknown placement only in hot functions (or under graph capture)
        masks = MASK in self.kinds and (self.gpu_possible or context.hot_function or context.in_graph_capture)
        gpu_indices = CONDITION in self.kinds and self.gpu_possible and not needs_hot
        if not (masks or gpu_indices):
            return
        # A mask may be the whole index or one of its dimensions (`t[i, mask, :]`): either way it syncs.
        mask = next((element for element in (index.elts if isinstance(index, ast.Tuple) else [index])
                     if self._is_boolean(element)), None)
        if mask is not None:
            if not masks or classify_data(facts, node.value, node.lineno) in (Data.HOST, Data.LIKELY_HOST):
                return
            placement = classify_placement(facts, node.value, node.lineno)
            receiver = node.value if placement is not Placement.UNKNOWN else mask
            self.add(node, MASK, "boolean-mask indexing", receiver)
        elif gpu_indices and classify_data(facts, node.value, node.lineno) is Data.HOST \
                and on_gpu_as_tensor(facts, index, node.lineno):
            self.add(index, CONDITION, "a CUDA tensor used as a Python index", index)

    def _is_boolean(self, expr: ast.expr, depth: int = 0) -> bool:
        """Whether `expr` is certainly a boolean tensor (a mask)."""
        facts = self.facts
        if isinstance(expr, ast.Compare):
            operands = [expr.left, *expr.comparators]
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in expr.ops):
                return False
            # A comparison of host values is a Python bool: ask for one tensor-like operand.
            return any(self._is_tensor(operand) or on_gpu_as_tensor(facts, operand, expr.lineno)
                       for operand in operands) and not any(
                classify_data(facts, operand, expr.lineno) is Data.HOST and not isinstance(operand, ast.Constant)
                for operand in operands)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Invert):
            return self._is_boolean(expr.operand, depth)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return self._is_boolean(expr.left, depth) or self._is_boolean(expr.right, depth)
        if isinstance(expr, ast.Call):
            qualified = facts.qualify(dotted_name(expr.func)) or ""
            if qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in BOOLEAN_METHODS - {"bool"}:
                return True
            if not qualified and isinstance(expr.func, ast.Attribute):
                if expr.func.attr in BOOLEAN_METHODS:
                    return True
                if expr.func.attr in ("to", "type") and expr.args and \
                        facts.qualify(dotted_name(expr.args[0])) == "torch.bool":
                    return True
            return any(kw.arg == "dtype" and facts.qualify(dotted_name(kw.value)) == "torch.bool"
                       for kw in expr.keywords) and qualified.startswith("torch.")
        if isinstance(expr, ast.Name) and depth < 3 and expr.id in self._names_maybe_bound_to_masks:
            values = facts.bindings_at(expr.id, expr.lineno)
            return bool(values) and all(value is not None and self._is_boolean(value, depth + 1) for value in values)
        return False

    @functools.cached_property
    def _names_maybe_bound_to_masks(self) -> frozenset[str]:
        """The names some assignment in the file binds to what `_is_boolean` may accept (a comparison, `~`, `&`, `|`
        or `^`, a boolean method, a `dtype=` argument, another name): no other name can be a mask, so its bindings
        (whose collection is most of the cost of `_is_boolean`) need not be looked up."""
        names = set()
        for node in self.facts.assignments:
            if self._may_be_boolean(node.value):
                names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        for node in self.facts.other_assignments:
            if isinstance(node.target, ast.Name) and (
                    isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor))
                    or not isinstance(node, ast.AugAssign) and node.value is not None
                    and self._may_be_boolean(node.value)):
                names.add(node.target.id)
        return frozenset(names)

    def _may_be_boolean(self, value: ast.expr) -> bool:
        """What the shape of `value` alone leaves open to `_is_boolean` (a superset of what it accepts)."""
        if isinstance(value, (ast.Compare, ast.Name, ast.UnaryOp)):
            return True
        if isinstance(value, ast.BinOp):
            return isinstance(value.op, (ast.BitAnd, ast.BitOr, ast.BitXor))
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        last = func.attr if isinstance(func, ast.Attribute) else \
            (self.facts.qualify(dotted_name(func)) or "").rsplit(".", 1)[-1]
        return last in BOOLEAN_METHODS or last in ("to", "type") or any(kw.arg == "dtype" for kw in value.keywords)

    def _condition(self, test: ast.expr) -> None:
        if isinstance(test, ast.BoolOp):
            for value in test.values:
                self._condition(value)
            return
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            self._condition(test.operand)
            return
        if isinstance(test, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn))
                                                 for op in test.ops):
            return
        untyped = self.facts.untyped_inferences
        placement = classify_placement(self.facts, test, test.lineno)
        if placement is Placement.GPU and (self.facts.untyped_inferences == untyped
                                           or is_certainly_tensor(self.facts, test, test.lineno)):
            self.add(test, CONDITION, "a CUDA tensor used as a condition", test)
        elif placement is Placement.UNKNOWN and self.possible_conditions and self._may_be_device_value(test):
            self.add(test, CONDITION, "a tensor used as a condition", test)

    def _may_be_device_value(self, test: ast.expr) -> bool:
        """Certainly a tensor, and not only through a host tensor: `torch.rand([]) < p` compares a 0-d host tensor
        with what is probably a float."""
        facts = self.facts
        if isinstance(test, ast.Compare):
            return any(is_certainly_tensor(facts, operand, test.lineno)
                       and classify_placement(facts, operand, test.lineno) is not Placement.HOST
                       for operand in (test.left, *test.comparators))
        return is_certainly_tensor(facts, test, test.lineno)


class SyncReporter:
    """Mixin for the sync rules: report the sites `owner()` gives this rule, at any expression visited.

    Not a Rule itself (a Rule subclass must have a code); each rule is `class X(SyncReporter, Rule)`.
    """

    kinds: frozenset[str] = frozenset()
    # Where the rule reports those kinds, by the placement of the tensor read (see `owner`): {Placement.GPU: HOT}
    # reports CUDA tensors in hot code. The rules' declarations never overlap.
    where: dict[Placement, str] = {}
    MODEL_DEPENDENCIES = frozenset({"hotness", "placement"})
    # What the file's summary must show besides the prefilter's words (see FileGate): "gpu" (GPU evidence),
    # "gpu-or-hot" (that, or a function hot by its name), or "" (nothing more).
    evidence: str = ""

    @classmethod
    def may_apply(cls, text: str, settings, gate=OPEN_GATE) -> bool:
        if not cls.prefilter_matches(text):
            return False
        return not cls.evidence or gate.gpu or cls.evidence == "gpu-or-hot" and gate.hot_names

    @classmethod
    def candidates(cls, facts: FileFacts):
        # Only the sites this rule will report are parsed with LibCST; the visitor asks owner() again.
        return [site.node for site in sync_sites(facts).values()
                if site.kind in cls.kinds and owner(site, context_at(facts, site.node.lineno), facts) == cls.code]

    def _visit(self, node: cst.BaseExpression) -> None:
        start, end = self.position(node)
        site = sync_sites(self.context.facts).get((start.line, start.column, end.line, end.column))
        if site is None:
            return
        context = context_at(self.context.facts, start.line)
        if owner(site, context, self.context.facts) == self.code:
            self._site = site
            self.report_site(node, site, context)

    def report(self, node, message: str, fix=None, evidence=()) -> None:
        """A sync finding says how its tensor is known to be on the GPU (`Rule.report` adds why its code is hot)."""
        site = getattr(self, "_site", None)
        if site is not None:
            if site.inferred_from:
                message += f" [on the GPU per the project model: {site.inferred_from}]"
            level = "assumed" if site.placement is not Placement.GPU else "inferred" if site.inferred_from \
                else "proven"
            evidence = (("placement", level),)
            if site.inferred_from:
                evidence += (("placement_source", site.inferred_from),)
        super().report(node, message, fix, evidence)

    def report_site(self, node, site: SyncSite, context: CodeContext) -> None:
        raise NotImplementedError

    def visit_Call(self, node: cst.Call) -> None:
        self._visit(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self._visit(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._visit(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._visit(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._visit(node)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        self._visit(node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._visit(node)


def where(context: CodeContext) -> str:
    """` (in a loop and in `forward`)`, or nothing outside hot code."""
    described = context.describe()
    return f" ({described})" if described else ""


def receiver_words(site: SyncSite) -> str:
    return "a CUDA tensor" if site.placement is Placement.GPU else "a tensor that may be on the GPU"

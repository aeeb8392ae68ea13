"""How often code runs: the one place that answers whether a line is hot (runs every step), runs once, or runs
once in a while, for the copy rules, the sync rules and the project model's summaries.

What a line's context is comes from the file's index (its functions, loops, graph captures and the bodies that run
once in a while, see `FileFacts`) and, for hotness that follows calls, from the project model (`FileView.hot`).
"""

from __future__ import annotations

import ast
import functools
import re
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePath
from typing import TYPE_CHECKING, TypeGuard

from .branches import other_device_branch, untaken_branch
from .syntax import COMPOUND_STATEMENTS, TRY_STATEMENTS, blocks, dotted_name, is_none, name_words, parameters

if TYPE_CHECKING:
    from .facts import FileFacts


HOT_FUNCTION_NAMES = frozenset({"forward", "backward", "__call__", "step", "training_step", "train_step",
                                "validation_step", "forward_batch", "decode", "sample", "generate",
                                # the per-step entry points of inference engines (sglang's scheduler and workers,
                                # vLLM's workers and model runners)
                                "forward_batch_generation", "run_batch", "prepare_for_decode", "prepare_for_extend",
                                "prepare_for_idle", "prepare_for_verify", "prepare_for_draft_extend", "execute_model"})


# Glob patterns (fnmatch) of hot function names: attention backends' per-step metadata set-up. A name with
# "capture" in it matches none of them: that set-up runs once per CUDA graph captured, not per step.
HOT_FUNCTION_PATTERNS = ("init_forward_metadata*", "*_replay_cuda_graph")


# Functions that run once (construction, weight loading), where a sync costs nothing worth reporting.
RUN_ONCE_FUNCTIONS = frozenset({"__init__", "__post_init__", "setup", "reset_parameters", "__new__", "post_init",
                                "_init_weights", "load_weights", "load_state_dict", "_load_from_state_dict",
                                "process_weights_after_loading", "from_pretrained"})


# Words of a function's name that say it does not run every step (set-up, I/O, printing, tests, benchmarks).
NOT_PER_STEP_WORDS = frozenset({"init", "initialize", "setup", "loader", "loading", "save", "export", "dump",
                                "repr", "str", "print", "test", "tests", "bench", "benchmark", "profile", "plot",
                                "capture", "warmup"})


TEST_FOLDERS = frozenset({"test", "tests", "testing", "test_utils", "testing_utils"})


@dataclass(frozen=True)
class CodeContext:
    """Where a line sits: in which function, inside a loop, under CUDA graph capture."""

    function: str | None  # innermost enclosing function's name; None at module level
    in_loop: bool
    in_graph_capture: bool
    hot_function: bool  # `forward`, `__call__`, a training/decoding step, configured as hot, or called from one
    hot_chain: str | None = None  # when hot through calls (the project model): `A.forward -> B.prepare`
    # Runs once in a while, not every time its function does: under `if step % log_interval == 0:` (every so many
    # steps, see `periodic_test`), filling a cache (once per key, see `fills_a_cache`), or only while a model is
    # traced or compiled (see `compile_time_block`).
    occasional: bool = False

    @property
    def hot(self) -> bool:
        return self.in_graph_capture or (self.in_loop or self.hot_function) and not self.occasional

    @property
    def cold(self) -> bool:
        """Run once: module level or a constructor, and not in a loop there."""
        return not self.hot and self.function in (None, "__init__", "__post_init__", "setup", "reset_parameters")

    def describe(self) -> str:
        if self.in_graph_capture:
            return "under CUDA graph capture"
        where = []
        if self.in_loop:
            where.append("in a loop")
        if self.hot_function:
            where.append(f"in `{self.function}`" + (f", hot: {self.hot_chain}" if self.hot_chain else ""))
        return " and ".join(where)


def in_test_code(facts: FileFacts, context: CodeContext) -> bool:
    """A module of tests, benchmarks, profiling or export (see `is_off_the_step_path`, as the engine tells
    `facts.off_step_module`), or a test function kept beside the code it tests (`def test_kernel():` in a kernel's
    module): what it waits for is no step's cost."""
    return facts.off_step_module or (context.function or "").startswith("test_")


def hot_outside_tests(facts: FileFacts, line: int) -> bool:
    """Whether `line` is in hot code that is no test code: where the rules of writes into CUDA tensors (HDL106,
    HDL107) report, as the other copy rules do (`runs_once` says "in a test")."""
    context = context_at(facts, line)
    return context.hot and not in_test_code(facts, context)


def is_test_path(path: str) -> bool:
    """A test module, by its path (the engine gives it from the project root): in a `test`, `tests` or
    `testing` folder or a folder of test helpers (`test_utils`, `testing_utils`), or named `test_*.py`,
    `*_test.py`, `testing_utils.py` or `conftest.py`. (Not `testing_*.py` at large: in research code that is
    often the evaluation on a test split, per batch.)"""
    *folders, name = PurePath(path).parts or ("",)
    return any(folder in TEST_FOLDERS for folder in folders) \
        or name.startswith("test_") or name.endswith("_test.py") or name in ("conftest.py", "testing_utils.py")


def is_off_the_step_path(path: str) -> bool:
    """A module whose place says it does none of the project's per-step work: a test module (`is_test_path`), or
    one in a folder, or of a name, for benchmarks, profiling or export (`benchmarks/forward/capture.py`,
    `profiler/layerwise.py`, `utils/export/engine.py`, `engine/exporter.py`). What it waits for is no step's
    cost, and a `forward` defined there is no root of hotness."""
    return is_test_path(path) or any(word in _OFF_THE_STEP_PATH_WORDS for part in PurePath(path).parts
                                     for word in name_words(PurePath(part).stem))


# The words of folder and module names for work off the step. Of the function-name words (`_OFF_THE_STEP_WORDS`),
# those a module is named with: not `setup`, `capture` or `warmup`, which name modules of per-step code too
# (`cuda_graph_capture`), nor `convert`: a robot policy's `processor/converters.py` runs on every observation.
_OFF_THE_STEP_PATH_WORDS = frozenset({"bench", "benchmark", "benchmarks", "benchmarking", "profiler", "profiling",
                                      "export", "exporter", "exporters"})


@functools.lru_cache(maxsize=8192)
def is_hot_function(name: str, configured: frozenset[str] = frozenset()) -> bool:
    """Whether a function of this name is a hot path: a built-in name or pattern, a training step by its words
    (`named_training_step`), or a configured `hot-functions` entry (a name or a glob pattern)."""
    if name in HOT_FUNCTION_NAMES or name in configured or any(fnmatchcase(name, pattern) for pattern in configured):
        return True
    if named_training_step(name):  # (never one with the word `capture`: NOT_PER_STEP_WORDS)
        return True
    return "capture" not in name and any(fnmatchcase(name, pattern) for pattern in HOT_FUNCTION_PATTERNS)


# A function named for training and for one step of it runs once per batch: OLMo-core's `_train_batch`,
# FastVideo's `train_one_step`, Keras's `train_on_batch`, a trainer's `training_iteration`. Not with a word of a
# longer span (`train_epoch` holds the step loop and the epoch's set-up), of work off the step (`warmup_train_step`,
# `load_train_batch`, `profile_train_step`: NOT_PER_STEP_WORDS), nor of a setting or a builder run once
# (`set_train_batch_size`, `get_train_micro_batch_size`, `make_train_step`, `build_train_iter`).
_TRAINING_WORDS = frozenset({"train", "training"})
_ONE_STEP_WORDS = frozenset({"step", "batch", "iteration", "iter", "microbatch"})
_NOT_ONE_STEP_WORDS = NOT_PER_STEP_WORDS | frozenset({
    "epoch", "epochs", "dataloader", "sampler", "load", "checkpoint", "register", "configure", "config",
    "size", "sizes", "get", "set", "make", "build", "create", "compile"})


def named_training_step(name: str) -> bool:
    words = set(name_words(name))
    return bool(words & _TRAINING_WORDS and words & _ONE_STEP_WORDS and not words & _NOT_ONE_STEP_WORDS)


class _LineMap:
    """For each line: the innermost function around it, the innermost loop, and whether it is under graph
    capture. Blocks nest or are disjoint, so painting them in order of their first line leaves the
    innermost one on each line."""

    def __init__(self, functions: list[tuple[int, int, str]], loops: list[tuple[int, int]],
                 graph_captures: list[tuple[int, int]], occasional: list[tuple[int, int]]) -> None:
        size = max((last for _, last, *_ in [*functions, *loops, *graph_captures, *occasional]), default=0) + 2
        self.function: list[tuple[str | None, int]] = [(None, 0)] * size
        for first, last, name in sorted(functions):
            self.function[first:last + 1] = [(name, first)] * (last + 1 - first)
        self.loop_first = [-1] * size
        for first, last in sorted(loops):
            self.loop_first[first:last + 1] = [first] * (last + 1 - first)
        self.graph_capture = [False] * size
        for first, last in graph_captures:
            self.graph_capture[first:last + 1] = [True] * (last + 1 - first)
        self.occasional_first = [-1] * size
        for first, last in sorted(occasional):
            self.occasional_first[first:last + 1] = [first] * (last + 1 - first)

    def at(self, line: int) -> tuple[str | None, int, int, bool, int]:
        """(function name or None, its first line or 0, the innermost loop's first line or -1, under capture,
        the innermost occasional block's first line or -1)"""
        if not 0 <= line < len(self.function):
            return None, 0, -1, False, -1
        function, first = self.function[line]
        return function, first, self.loop_first[line], self.graph_capture[line], self.occasional_first[line]


# Methods whose result is what a mapping or a module holds: a loop over it runs once per entry or submodule.
_CONTENT_METHODS = frozenset({"items", "keys", "values", "modules", "named_modules", "children", "named_children"})
# Words of an attribute's name that say it holds data to step through: `self.val_loader`, `self.train_dataset`.
_DATA_WORDS = frozenset({"loader", "loaders", "dataloader", "dataloaders", "dataset", "datasets"})


def loops_over_contents(iterable: ast.expr) -> bool:
    """Whether a `for` over `iterable` steps through what an object holds: an attribute of `self` (`self.convs`,
    `self.polygon.interiors`) but one named for data to step through (`self.val_loader`), or the entries of a
    mapping or the submodules of a module (`.items()`, `.named_modules()`), in `enumerate`, `sorted`, `list`,
    `tuple` or `reversed` or not. Such a loop repeats once per item of something the program built, not once per
    step, so it says nothing of how often its code runs: read in held-out trees, copies and syncs whose only
    sign of running every step was such a loop were mostly set-up passes, metrics over a fixed list, or code
    nothing runs (docs/precision/changes.md, "Loops over what an object holds"). Not an attribute of another value
    (`metadata.requests`, `chunked_context.chunks`): what a call is handed may be the step's own data."""
    while isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.args \
            and iterable.func.id in ("enumerate", "sorted", "list", "tuple", "reversed"):
        iterable = iterable.args[0]
    if isinstance(iterable, ast.Attribute):
        words = name_words(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", iterable.attr))  # `valLoader` too
        return (dotted_name(iterable) or "").startswith("self.") \
            and not _DATA_WORDS.intersection(word.rstrip("0123456789") for word in words)  # `loader2` too
    return isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and not iterable.args \
        and iterable.func.attr in _CONTENT_METHODS


def periodic_test(test: ast.expr) -> bool:
    """An `if` test that holds once every so many steps: `step % log_interval == 0`, `not i % self.eval_every`,
    `i % 100 == 0`, alone or in an `and`. The divisor says so by its name (logging, evaluation, saving, an
    interval or a frequency, not gradient accumulation) or is a literal of at least `_MIN_PERIOD`."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(periodic_test(value) for value in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _every_n_steps(test.operand)
    return _remainder_against_zero(test, ast.Eq)


def periodic_skip(test: ast.expr) -> bool:
    """An `if` test that holds on every step but one every so many: `step % self.demo_every != 0`, `i %
    log_interval` (a remainder taken as true), `not periodic_test(...)`, or an `or` with one such test (`if
    step % every != 0 or self.done: return`). What follows an early return under it runs once per period."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(periodic_skip(value) for value in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return periodic_test(test.operand)
    return _remainder_against_zero(test, ast.NotEq) or _every_n_steps(test)


def _remainder_against_zero(test: ast.expr, op: type[ast.cmpop]) -> bool:
    """`step % every <op> 0` or `0 <op> step % every`, the divisor naming a period (`_every_n_steps`)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], op)):
        return False
    left, right = test.left, test.comparators[0]
    if isinstance(right, ast.Constant) and right.value == 0:
        return _every_n_steps(left)
    return isinstance(left, ast.Constant) and left.value == 0 and _every_n_steps(right)


def occasional_block(node: ast.If, flags: Callable[[], FlagUses] | None = None) -> list[ast.stmt]:
    """The block of an `if` that runs once in a while, not every time the `if` does: the body under a periodic
    guard (`periodic_test`) or filling a cache (`fills_a_cache`), the block that runs only while tracing or
    compiling (`compile_time_block`), the one that ends by failing (`failing_block`), or the body that handles
    values gone NaN or infinite (`non_finite_block`); empty for any other `if`.
    The test and the other block run every time. The file's index and the project model's summary both ask this.
    `flags`: as `fills_a_cache` takes it."""
    if periodic_test(node.test) or fills_a_cache(node, flags):
        return node.body
    return compile_time_block(node) or failing_block(node) or non_finite_block(node)


def empty_input_arm(node: ast.If | ast.IfExp, counts: Callable[[str], bool]) -> list[ast.expr | ast.stmt]:
    """The arm of an `if` statement or conditional expression taken only when a count is zero: the fallback for
    an empty batch, `loss = total / n if n > 0 else torch.tensor(0.0, device=d)`, `if mask.sum() == 0: return
    torch.tensor(0.0).to(d)`. A count is `len(x)`, `x.numel()`, `x.sum()`, `x.count_nonzero()`, `x.shape[i]`,
    `x.size(i)`, one converted (`int(...)`, `.item()`, `.float()`), or a name `counts` says is bound only to
    such values (`num_valid = mask.sum()`). Read as the held-out rounds read such arms: on degenerate input
    only, not every step. A sum is taken for a count of what a mask selects; a sum of signed values, or a
    count of anomalies that is zero on most steps (`torch.isnan(x).sum() == 0`), would be misread, and no
    read finding has shown one. Empty for any other test (`if rank == 0:` runs every step on one rank, `if i
    == 0:` once per loop)."""
    test = node.test
    zero_when_true = _zero_test(test, counts)
    if zero_when_true is None and isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
            and any(_zero_test(value, counts) is True for value in test.values):
        zero_when_true = True  # `if n == 0 and flag:`: its body needs `n == 0`
    if zero_when_true is None:
        return []
    arm = node.body if zero_when_true else node.orelse
    return list(arm) if isinstance(arm, list) else [arm]


def _zero_test(test: ast.expr, counts: Callable[[str], bool]) -> bool | None:
    """True when `test` holds exactly when a count is zero (`n == 0`, `n < 1`, `not len(x)`), False when it holds
    exactly when the count is not (`n > 0`, `n != 0`, `n >= 1`, `len(x)`); None for any other test."""
    # A bare name's truth (`if flag:`, the commonest test) is not asked of `counts`: finding what a name is bound
    # to walks its function, and `if n:` of a count is rare.
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return True if not isinstance(test.operand, ast.Name) and is_count(test.operand, counts) else None
    if not isinstance(test, ast.Name) and is_count(test, counts):
        return False
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant)
            and is_count(test.left, counts)):
        return None
    bound, operator_ = test.comparators[0].value, test.ops[0].__class__
    if bound == 0 and not isinstance(bound, bool):
        return True if operator_ in (ast.Eq, ast.LtE) else False if operator_ in (ast.Gt, ast.NotEq) else None
    if bound == 1 and not isinstance(bound, bool):
        return True if operator_ is ast.Lt else False if operator_ is ast.GtE else None
    return None


def is_count(expr: ast.expr, counts: Callable[[str], bool]) -> bool:
    """Whether `expr` is a count of elements (see `empty_input_arm`)."""
    if isinstance(expr, ast.Name):
        return counts(expr.id)
    if isinstance(expr, ast.Subscript):  # `x.shape[0]`, not `x.shape[1:]`
        return isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape" \
            and not isinstance(expr.slice, ast.Slice)
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Name):
        return func.id == "len" and len(expr.args) == 1 \
            or func.id in ("int", "float") and len(expr.args) == 1 and is_count(expr.args[0], counts)
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in _COUNTING_METHODS:
        return func.attr != "size" or len(expr.args) == 1
    return func.attr in _CONVERTING_METHODS and not expr.args and is_count(func.value, counts)


_COUNTING_METHODS = frozenset({"numel", "sum", "count_nonzero", "size"})
_CONVERTING_METHODS = frozenset({"item", "float", "long", "int"})


def failing_block(node: ast.If) -> list[ast.stmt]:
    """The block of an `if` whose last statement raises or fails an assertion (`raise ValueError(...)`, `assert
    False, ...`, `torch._assert(False, ...)`): it runs only on bad input, to describe what is wrong, so a copy
    or a read made there to build the message is not per-step work. Not a block that may leave otherwise (`if
    backend == "direct": ...; return x; raise ValueError(...)` dispatches). Empty for any other `if`."""
    for block in (node.body, node.orelse):
        if block and _fails(block[-1]) and not any(_leaves(statement) for statement in block):
            return block
    return []


def non_finite_block(node: ast.If) -> list[ast.stmt]:
    """The body of an `if` that finds NaN or infinite values (`if torch.isnan(self.K).any():`, `if not
    torch.isfinite(loss).all():`, `if x.isinf().any() or y.isnan().any():`): a fallback or a warning for a step
    that diverged, not per-step work. (The test itself reads the GPU every step; the sync rules report it.)
    Empty for any other `if`."""
    return node.body if _finds_non_finite(node.test) else []


def _finds_non_finite(test: ast.expr) -> bool:
    if isinstance(test, ast.BoolOp):  # every part of an `or`, one part of an `and`
        return (all if isinstance(test.op, ast.Or) else any)(_finds_non_finite(value) for value in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _reduced(test.operand, "all", _FINITE_TESTS)
    return _reduced(test, "any", _NON_FINITE_TESTS)


def _reduced(expr: ast.expr, reduction: str, tests: frozenset[str]) -> bool:
    """`<test>(x).<reduction>()`, `x.<test>().<reduction>()` or `torch.<reduction>(<test>(x))`, where the terminal
    name of `<test>` is one of `tests`."""
    if not (isinstance(expr, ast.Call) and not expr.keywords):
        return False
    inner: ast.expr | None = None
    if isinstance(expr.func, ast.Attribute) and expr.func.attr == reduction and not expr.args:
        inner = expr.func.value
    elif (dotted_name(expr.func) or "") == f"torch.{reduction}" and len(expr.args) == 1:
        inner = expr.args[0]
    return isinstance(inner, ast.Call) and (dotted_name(inner.func) or "").rpartition(".")[2] in tests


_NON_FINITE_TESTS = frozenset({"isnan", "isinf", "isposinf", "isneginf"})
_FINITE_TESTS = frozenset({"isfinite"})


def _leaves(node: ast.AST) -> bool:
    """Whether `node` holds a `return`, `break`, `continue` or `yield` of the function it is in."""
    if isinstance(node, (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom)):
        return True
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return False
    return any(_leaves(child) for child in ast.iter_child_nodes(node))


def _fails(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Raise):
        return True
    if isinstance(statement, ast.Assert):
        return _is_false(statement.test)
    call = statement.value if isinstance(statement, ast.Expr) else None
    return isinstance(call, ast.Call) and bool(call.args) and _is_false(call.args[0]) \
        and (dotted_name(call.func) or "").rpartition(".")[2] in ("_assert", "_assert_async")


def _is_false(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value in (False, None)  # 0 == False


def compile_time_block(node: ast.If) -> list[ast.stmt]:
    """The statements of an `if` that run only while a model is traced, scripted, compiled or exported
    (`if torch.jit.is_scripting():`, `if torch.compiler.is_compiling():`, the `else` of `if not
    torch.jit.is_tracing():`), never in eager use: a tensor they make is a constant of the graph, not a copy
    per step. Empty for any other `if`."""
    test = node.test
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and any(map(_while_compiling, test.values)) \
            or _while_compiling(test):
        return node.body
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and _while_compiling(test.operand):
        return node.orelse
    return []


def _while_compiling(test: ast.expr) -> bool:
    # A library's private wrapper counts too (`torchvision._is_tracing()`).
    return isinstance(test, ast.Call) and not test.args and (
        (dotted_name(test.func) or "").rpartition(".")[2].lstrip("_") in _COMPILE_TIME_TESTS)


# torch.jit.is_scripting / is_tracing, torch.compiler.is_compiling / is_exporting, torch._dynamo.is_compiling,
# torch.onnx.is_in_onnx_export, and the wrappers libraries write around them (transformers'
# is_torchdynamo_compiling).
_COMPILE_TIME_TESTS = frozenset({"is_scripting", "is_tracing", "is_compiling", "is_exporting", "is_in_onnx_export",
                                 "is_dynamo_compiling", "is_torchdynamo_compiling"})


def _every_n_steps(expr: ast.expr) -> bool:
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod)):
        return False
    divisor = expr.right
    if isinstance(divisor, ast.Constant):
        return type(divisor.value) is int and divisor.value >= _MIN_PERIOD
    words = set(name_words(dotted_name(divisor) or ""))
    return bool(words & _PERIODIC_WORDS) and not words & _PER_STEP_WORDS


def caches_results(decorator: ast.expr) -> bool:
    return dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator) in _CACHING_DECORATORS


def methods_cached_on_objects(node: ast.ClassDef) -> list[str]:
    """The methods a class's constructor wraps in a cache on each object (`self.m = lru_cache(100)(self.m)` or
    `self.m = functools.cache(self.m)` among the statements of `__init__` or `__post_init__`): a call of `self.m`
    then runs the method's body once per distinct arguments, as a decorated method's."""
    found: list[str] = []
    for method in node.body:
        if not isinstance(method, ast.FunctionDef) or method.name not in ("__init__", "__post_init__") \
                or not method.args.args:
            continue
        self_name = method.args.args[0].arg
        for statement in method.body:
            if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
                continue
            target, value = statement.targets[0], statement.value
            if _is_attribute_of(target, self_name) and isinstance(value, ast.Call) and len(value.args) == 1 \
                    and not value.keywords and caches_results(value.func) \
                    and _is_attribute_of(value.args[0], self_name) and value.args[0].attr == target.attr:
                found.append(target.attr)
    return found


def fills_a_cache(node: ast.If, flags: Callable[[], FlagUses] | None = None) -> bool:
    """An `if` that fills a cache kept beyond the call, so that its body runs once per key: `if key not in
    _CACHE: _CACHE[key] = ...` (any container the body stores into under the key tested), `if self._x is None:
    self._x = ...`, `if not hasattr(self, "_x"): self._x = ...`, or `if cached is None:` whose body stores into
    `self.x[...]` or a module-level `_name[...]`. A local filled when it is None (`if mask is None: mask = ...`)
    is a default made on every call: not a cache.

    Likewise an `if` on a flag of the object that its body clears, so that the body runs once per object: `if
    self._uninitialized: ...; self._uninitialized = False` (a set-up made lazily, at the first call), or `if not
    self._ready: ...; self._ready = True`, or that the statements after it clear (`if not self.has_sampled:
    self._init_sampling(); ...; self.has_sampled = True`); but not when code of the file other than a constructor
    arms the flag again (see `FlagUses`): `self._dirty = True` in a setter called every step."""
    # Every `if` of every file is asked: its body is walked only when its test has the shape of one of those.
    flag = _once_flag(node.test)
    if flag is None and not _may_test_a_cache(node.test):
        return False
    assignments = [(target, getattr(inner, "value", None)) for inner in statements(node.body)
                   for target in _stored_targets(inner)]
    uses = flags() if flags is not None else None
    if flag is not None:
        name, runs_while_set = flag
        arming = uses.armed.get(name, set()) if uses is not None else set()
        if "other" in arming or ("truthy" if runs_while_set else "falsy") in arming:
            return False
        if uses is not None:
            assignments.extend(uses.cleared_after.get(id(node), ()))
        return any(isinstance(target, ast.Attribute) and dotted_name(target) == name
                   and isinstance(value, ast.Constant) and bool(value.value) is not runs_while_set
                   for target, value in assignments)
    stored = [target for target, _ in assignments]
    if uses is not None:  # `self._set_torch_value(device)`: what the file's methods of that name store
        stored.extend(target for call in _self_calls(node.body) for target in uses.method_stores.get(call, ()))
    return _tests_a_cache(node.test, stored)


def _self_calls(body: list[ast.stmt]) -> Iterator[str]:
    """The names of the methods the statements call on `self` as statements of their own (`self._build(x)`)."""
    for statement in statements(body):
        value = getattr(statement, "value", None)
        if value.__class__ is ast.Call and value.func.__class__ is ast.Attribute \
                and _is_self(value.func.value):  # type: ignore[union-attr]
            yield value.func.attr  # type: ignore[union-attr]


@dataclass(frozen=True)
class FlagUses:
    """How a file's code sets the flags of its objects (`self._ready`), for `fills_a_cache`, found once per tree.
    `armed`: what functions other than constructors (`RUN_ONCE_FUNCTIONS`) assign to attributes of `self`, by the
    attribute (`self._dirty`), and what any function assigns to a module's name it declares global (`_DONE`):
    "truthy" or "falsy" for a constant, "other" for anything else. `cleared_after`: for
    each `if self.flag:` or `if not self.flag:`, the stores into attributes of `self` made by the statements after
    it in its block, up to the first that may leave the block (a `return`, a `raise`). `method_stores`: for each
    function of the file by its name, the attributes of `self` it stores, so that `if self._t is None:
    self._set_torch_value(device)` fills a cache as `self._t = ...` would."""

    armed: dict[str, set[str]]
    cleared_after: dict[int, list[tuple[ast.expr, ast.expr | None]]]
    method_stores: dict[str, list[ast.expr]]


def flag_uses(tree: ast.Module) -> FlagUses:
    armed: dict[str, set[str]] = {}
    method_stores: dict[str, list[ast.expr]] = {}
    cleared_after: dict[int, list[tuple[ast.expr, ast.expr | None]]] = {}
    # One walk over the statements, each with the store lists of the functions around it (a statement of a nested
    # function stores for the enclosing ones too), whether one of those arms flags (is no constructor), and the
    # module's names the innermost one declares global (a `global` statement comes before the name's uses).
    stack: list[tuple[ast.stmt, tuple[list[ast.expr], ...], bool, set[str]]] = [
        (statement, (), False, set()) for statement in reversed(tree.body)]
    while stack:
        statement, around, arming, declared = stack.pop()
        if around:
            stored = [target for target in _stored_targets(statement) if _is_self_attribute(target)]
            if stored:
                for stores in around:
                    stores.extend(stored)
            if statement.__class__ is ast.Global:
                declared.update(statement.names)  # type: ignore[attr-defined]
            value = getattr(statement, "value", None)
            for target in _assigned_targets(statement) if value is not None else ():
                name = dotted_name(target)  # (None for an item, `a[i] = ...`)
                # An object's flag set in its constructor starts it; a module's flag has no constructor.
                if name is not None and (arming and name.startswith("self.") or name in declared):
                    kind = ("truthy" if value.value else "falsy") if isinstance(value, ast.Constant) else "other"
                    armed.setdefault(name, set()).add(kind)
        if statement.__class__ not in COMPOUND_STATEMENTS:
            continue
        if statement.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef):
            around = (*around, method_stores.setdefault(statement.name, []))  # type: ignore[attr-defined]
            arming = arming or statement.name not in RUN_ONCE_FUNCTIONS  # type: ignore[attr-defined]
            declared = set()
        for block in blocks(statement):
            _note_cleared_flags(block, cleared_after)
            stack.extend((inner, around, arming, declared) for inner in reversed(block))
    return FlagUses(armed, cleared_after, method_stores)


def _note_cleared_flags(block: list[ast.stmt], cleared_after: dict[int, list[tuple[ast.expr, ast.expr | None]]]) \
        -> None:
    """FlagUses.cleared_after for each `if self.flag:` of `block`."""
    for index, inner in enumerate(block):
        if inner.__class__ is not ast.If or _once_flag(inner.test) is None \
                or _may_leave(inner.body):  # type: ignore[attr-defined]
            continue  # (a block that may leave first never gets to the statements after it)
        cleared = cleared_after[id(inner)] = []
        for after in block[index + 1:]:
            if _may_leave([after]):
                break
            cleared.extend((target, getattr(after, "value", None)) for target in _stored_targets(after))


def _may_leave(block: list[ast.stmt]) -> bool:
    """Whether the statements may leave their block before its end: a `return`, `raise`, `break`, `continue`
    or `yield` in them (in a loop or a function of theirs too: a conservative reading)."""
    for statement in statements(block):
        if statement.__class__ in _LEAVING or getattr(statement, "value", None).__class__ in (ast.Yield, ast.YieldFrom):
            return True
    return False


_LEAVING = frozenset({ast.Return, ast.Raise, ast.Break, ast.Continue})


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of `body` and, depth first, of the blocks inside them (functions and classes included);
    not the expressions: a statement-level `ast.walk`, at a fraction of its cost."""
    stack = list(reversed(body))
    while stack:
        statement = stack.pop()
        yield statement
        if statement.__class__ in COMPOUND_STATEMENTS:
            for block in blocks(statement):
                stack.extend(reversed(block))


def _may_test_a_cache(test: ast.expr) -> bool:
    """The shapes `_tests_a_cache` reads (without the body's stores): `a not in b`, `a is b`, `not f(...)`, or an
    `or` of tests with one of those."""
    kind = test.__class__
    if kind is ast.Compare:
        return len(test.ops) == 1 and test.ops[0].__class__ in (ast.NotIn, ast.Is)  # type: ignore[attr-defined]
    if kind is ast.BoolOp:
        return test.op.__class__ is ast.Or and any(_may_test_a_cache(value) for value in test.values)  # type: ignore[attr-defined]
    return kind is ast.UnaryOp and test.op.__class__ is ast.Not and test.operand.__class__ is ast.Call  # type: ignore[attr-defined]


def _once_flag(test: ast.expr) -> tuple[str, bool] | None:
    """`self.x` (or `self.part.x`) -> ("self.x", True): the body runs while the flag is set, until it clears it;
    `not self.x` -> ("self.x", False)."""
    runs_while_set = not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not))
    flag = test if runs_while_set else test.operand  # type: ignore[attr-defined]
    name = dotted_name(flag) if isinstance(flag, ast.Attribute) else None
    return (name, runs_while_set) if name is not None and name.startswith("self.") else None


def _tests_a_cache(test: ast.expr, stored: list[ast.expr]) -> bool:
    """Whether `test` asks for a key or value missing from a cache that `stored` (the targets the `if` assigns)
    fills. In an `or`, the other tests may only check the cached value (`if lut is None or lut.device != device:`):
    `if cache_length == 0 or self.rope_deltas is None:` runs at every prefill."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        tested = [value for value in test.values if _tests_a_cache(value, stored)]
        names = {dotted_name(node) for value in tested for node in ast.walk(value)
                 if isinstance(node, (ast.Name, ast.Attribute))} - {None, "self"}
        return bool(tested) and all(value in tested or any(
            isinstance(node, (ast.Name, ast.Attribute)) and dotted_name(node) in names for node in ast.walk(value))
            for value in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, ast.NotIn):
            container = ast.dump(right)
            return any(isinstance(target, ast.Subscript) and ast.dump(target.value) == container for target in stored)
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None:
            if _is_self_attribute(left):
                return any(_is_self_attribute(target) and target.attr == left.attr for target in stored)
            if isinstance(left, ast.Name):
                return any(isinstance(target, ast.Subscript) and _persistent_container(target.value)
                           for target in stored)
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Call) \
            and dotted_name(test.operand.func) == "hasattr" and len(test.operand.args) == 2:
        holder, name = test.operand.args
        return isinstance(holder, ast.Name) and holder.id == "self" and isinstance(name, ast.Constant) and any(
            _is_self_attribute(target) and target.attr == name.value for target in stored)
    return False


def _assigned_targets(statement: ast.AST) -> list[ast.expr]:
    if isinstance(statement, ast.Assign):
        return [element for target in statement.targets
                for element in (target.elts if isinstance(target, ast.Tuple) else [target])]
    if isinstance(statement, ast.AnnAssign):
        return [statement.target]
    return []


def _stored_targets(statement: ast.AST) -> list[ast.expr]:
    """What a statement stores into: its assignment targets, and `self.<name>` for `self.register_buffer("<name>",
    ...)`, `self.register_parameter("<name>", ...)` or `setattr(self, "<name>", ...)`, which store an attribute."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return _assigned_targets(statement)
    func, args = statement.value.func, statement.value.args
    if isinstance(func, ast.Attribute) and func.attr in _ATTRIBUTE_REGISTRARS and _is_self(func.value) and args:
        name = args[0]
    elif isinstance(func, ast.Name) and func.id == "setattr" and len(args) == 3 and _is_self(args[0]):
        name = args[1]
    else:
        return []
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return []
    return [ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=name.value, ctx=ast.Store())]


_ATTRIBUTE_REGISTRARS = frozenset({"register_buffer", "register_parameter"})
# The dicts in which an `nn.Module` keeps `self.<name>`: `"<name>" in self._buffers`, `self._buffers.get("<name>")`.
_ATTRIBUTE_DICTS = frozenset({"_buffers", "_parameters", "__dict__"})


def statements_run_once_in_a_while(function: ast.FunctionDef | ast.AsyncFunctionDef,
                                   flags: Callable[[], FlagUses] | None = None) -> list[ast.stmt]:
    """The statements of a function's body that run only once in a while, not every time it is called:

    - all those after an early return off the period (`if step % self.demo_every != 0: return`, alone or in an
      `or`: a callback run every batch that does its work every so many steps, `periodic_skip`);
    - those run only when a cache kept beyond the call misses, so once per key: all those after an early return
      on a hit, when one of them fills what the hit tested (`if key in _CACHE: return _CACHE[key]`, then
      `_CACHE[key] = t`; `if "_t" in self._buffers: return`, then `self.register_buffer("_t", t)`); and an
      `if x is None:` whose body fills the place `x` was read from (`x = self._x`, `x = cache.get(key)` or
      `x = getattr(self, "_x", None)`, then `self._x = ...`, `cache[key] = ...` or
      `self.register_buffer("_x", ...)`). A hit may also check that the cached value fits (`_cache_hit`). A
      cache is an attribute of `self`, a module's name the function declares `global` (`if _X is not None:
      return _X`, then `_X = ...`), or a container the function neither binds nor takes (a module's or a
      closure's: `gumbel_map`);
    - all those after an early return on a flag that they set, so once per object, or once per process for a
      module's flag: `if self._registered: return`, then `self._registered = True` (`_sets_its_flag`).

    `flags`: the file's FlagUses (`flag_uses`), which tell whether code other than a constructor sets an object's
    flag back."""
    body = function.body
    # A module's names the function declares global: read where they are written, as a cache or a flag.
    declared = {name for statement in body if statement.__class__ is ast.Global
                for name in statement.names}  # type: ignore[attr-defined]
    # a local name -> the place it was read from
    read_from: dict[str, tuple[str, str]] = {name: ("global", name) for name in declared}
    found: list[ast.stmt] = []
    for index, statement in enumerate(body):
        if isinstance(statement, ast.If) and not statement.orelse and isinstance(statement.body[-1], ast.Return) \
                and (periodic_skip(statement.test) or _sets_its_flag(statement.test, body[index + 1:], declared, flags)):
            return [*found, *body[index + 1:]]
        if isinstance(statement, ast.Assign):
            _forget_rebound(statement, read_from)
            if len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
                place = _read_place(statement.value)
                if place is not None:
                    read_from[statement.targets[0].id] = place
            continue
        if not isinstance(statement, ast.If) or statement.orelse:
            _forget_rebound(statement, read_from)
            continue
        test = statement.test
        hit = _cache_hit(statement, read_from)
        if hit is not None and hit in _places_filled(body[index + 1:], declared) \
                and _kept_beyond_the_call(hit, function):
            return [*found, *body[index + 1:]]
        if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.Is) and is_none(test.comparators[0]) \
                and isinstance(test.left, ast.Name) and test.left.id in read_from:
            miss = read_from[test.left.id]
            if miss in _places_filled(statement.body, declared) and _kept_beyond_the_call(miss, function):
                found.append(statement)
        _forget_rebound(statement, read_from)
    return found


def _sets_its_flag(test: ast.expr, rest: list[ast.stmt], declared: set[str],
                   flags: Callable[[], FlagUses] | None) -> bool:
    """Whether an early return on `test` skips work done already: `test` is a flag of the object (`self._registered`)
    or of the module (a name the function declares global, `_DONE`), and the statements after the return (`rest`)
    set it true before they may leave, so that they run once per object, or once per process. Not where the
    file's code sets the flag back (`FlagUses.armed`): `self._registered = False` in a `reset` called every step
    (constructors aside), `_BUSY = False` in a `finally` (a guard against re-entry, not a flag of work done). Not
    `if not self._dirty: return`, then `self._dirty = False`: work pending, which other objects mark again."""
    if flags is None:
        return False
    if test.__class__ is ast.Name and test.id in declared:  # type: ignore[attr-defined]
        name = test.id  # type: ignore[attr-defined]
    else:
        once = _once_flag(test)
        if once is None or not once[1]:
            return False
        name = once[0]
    armed = flags().armed.get(name, set())
    if "other" in armed or "falsy" in armed:
        return False
    return any(value.__class__ is ast.Constant and bool(value.value)  # type: ignore[attr-defined]
               and dotted_name(target) == name for target, value in _stores_before_leaving(rest))


def _stores_before_leaving(body: list[ast.stmt]) -> Iterator[tuple[ast.expr, ast.expr | None]]:
    """The assignments `body` makes whenever it runs, before it may leave (a `return`, `raise`, `break`, ...):
    its own statements' up to the first that may leave, and those of the `with` blocks among them (not under
    `contextlib.suppress`, which goes on past an exception as a handler does); of a `try`, its `finally` block's,
    which runs however the `try` ends, and its body's when no handler may catch an exception and go on past them."""
    for statement in body:
        kind = statement.__class__
        if kind is ast.With or kind is ast.AsyncWith:
            if not any(_suppresses(item.context_expr) for item in statement.items):  # type: ignore[attr-defined]
                yield from _stores_before_leaving(statement.body)  # type: ignore[attr-defined]
            if _may_leave(statement.body):  # type: ignore[attr-defined]
                return
        elif kind in TRY_STATEMENTS:
            yield from _stores_before_leaving(statement.finalbody)  # type: ignore[attr-defined]
            if not statement.handlers:  # type: ignore[attr-defined]
                yield from _stores_before_leaving(statement.body)  # type: ignore[attr-defined]
            if _may_leave([statement]):
                return
        elif _may_leave([statement]):
            return
        else:
            value = getattr(statement, "value", None)
            yield from ((target, value) for target in _assigned_targets(statement))


def _suppresses(context: ast.expr) -> bool:
    """`contextlib.suppress(...)` or `suppress(...)`."""
    return context.__class__ is ast.Call and (dotted_name(context.func) or "").rpartition(".")[2] == "suppress"  # type: ignore[attr-defined]


def _forget_rebound(statement: ast.stmt, read_from: dict[str, tuple[str, str]]) -> None:
    """A name the statement binds anywhere (`x, y = ...`, `x += 1`, `for x in ...`, `with ... as x`) no longer
    holds what it was read from (nor, stored before it is tested, a module's name declared global: `_T = None`
    then `if _T is not None:` tests what the call itself made)."""
    if not read_from:  # nothing to forget: most functions read no cache, and walking every statement is costly
        return
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            read_from.pop(node.id, None)


def _kept_beyond_the_call(place: tuple[str, str], function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """An attribute of `self` or a module's name declared global is; a container named alone is unless the
    function takes or binds that name."""
    kind, name = place
    if kind in ("self", "global") or "." in name:
        return True
    if any(arg.arg == name for arg in parameters(function.args)):
        return False
    return not any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
                   for node in ast.walk(function))


def _container(expr: ast.expr) -> tuple[str, str] | None:
    """The place `expr[...]` stands for: an item of `self.<x>` or of a container named alone (a cache when the
    function neither takes nor binds it, see `_kept_beyond_the_call`)."""
    name = dotted_name(expr)
    if name is not None and (name.startswith("self.") or "." not in name):
        return ("item", name)
    return None


def _read_place(expr: ast.expr) -> tuple[str, str] | None:
    """The place an expression reads a cached value from: `self._x`, `getattr(self, "_x", None)`,
    `self._buffers.get("_x")` (the attribute `self._x`), or `cache.get(key)` (an item of `cache`)."""
    if _is_self_attribute(expr):
        return ("self", expr.attr)  # type: ignore[attr-defined]
    if not isinstance(expr, ast.Call) or not expr.args:
        return None
    func, first = expr.func, expr.args[0]
    if isinstance(func, ast.Name) and func.id == "getattr" and len(expr.args) >= 2 and _is_self(first):
        return _named_attribute(expr.args[1])
    if isinstance(func, ast.Attribute) and func.attr == "get":
        if _is_self_attribute(func.value) and func.value.attr in _ATTRIBUTE_DICTS:  # type: ignore[attr-defined]
            return _named_attribute(first)
        return _container(func.value)
    return None


def _cache_hit(statement: ast.If, read_from: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    """The place an `if` that returns on a cache hit finds filled: `if self._x is not None: return self._x`; a hit
    that also checks the cached value fits (`if self.pe is not None and self.pe.size(1) >= x.size(1): return`), or
    returns only when it fits (`if self.pe is not None:` holding `if self.pe.size(1) >= x.size(1): ...; return`),
    as ESPnet-style positional encodings grow their table: the code after runs when the table is missing or too
    small, once per new longest input."""
    test, last = statement.test, statement.body[-1]
    if isinstance(last, ast.Return):
        hit = _hit_place(test, read_from)
        if hit is None and isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for operand in test.values:
                place = _hit_place(operand, read_from)
                if place is not None and all(_reads_place(other, place, read_from)
                                             for other in test.values if other is not operand):
                    return place
        return hit
    if isinstance(last, ast.If) and not last.orelse and isinstance(last.body[-1], ast.Return):
        hit = _hit_place(test, read_from)
        if hit is not None and _reads_place(last.test, hit, read_from):
            return hit
    return None


def _reads_place(expr: ast.expr, place: tuple[str, str], read_from: dict[str, tuple[str, str]]) -> bool:
    """Whether `expr` reads the cached value at `place` (a test of its size, dtype or device)."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and read_from.get(node.id) == place:
            return True
        if isinstance(node, ast.Subscript) and _container(node.value) == place:
            return True
        if isinstance(node, (ast.Attribute, ast.Call)) and _read_place(node) == place:
            return True
    return False


def _hit_place(test: ast.expr, read_from: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    """The place a test finds filled: `x is not None` (of a place, or of a local read from one),
    `hasattr(self, "_x")`, `"_x" in self._buffers`, `key in cache`."""
    if isinstance(test, ast.Call):
        if isinstance(test.func, ast.Name) and test.func.id == "hasattr" and len(test.args) == 2 \
                and _is_self(test.args[0]):
            return _named_attribute(test.args[1])
        return None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, ast.IsNot) and is_none(right):
        return read_from.get(left.id) if isinstance(left, ast.Name) else _read_place(left)
    if isinstance(op, ast.In):
        if _is_self_attribute(right) and right.attr in _ATTRIBUTE_DICTS:  # type: ignore[attr-defined]
            return _named_attribute(left)
        return _container(right)
    return None


def _always_run(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of `body` that run whenever it runs to its end: its own, and those of the `with` blocks and
    `try` bodies in it (not those under an `if` or in a loop, which may not run at all)."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            yield from _always_run(statement.body)
        elif isinstance(statement, ast.Try):
            yield from _always_run([*statement.body, *statement.finalbody])


def _places_filled(body: list[ast.stmt], declared: set[str]) -> set[tuple[str, str]]:
    """The places `body` always stores into when it runs (`_CACHE[key] = t`, `self._x = t`, `_X = t` of a name
    `declared` global): a store under a condition (`if self.capture: self._out = out`) may leave the cache empty,
    so it is not a fill."""
    places = set()
    for statement in _always_run(body):
        for target in _stored_targets(statement):
            if _is_self_attribute(target):
                places.add(("self", target.attr))  # type: ignore[attr-defined]
            elif target.__class__ is ast.Name and target.id in declared:  # type: ignore[attr-defined]
                places.add(("global", target.id))  # type: ignore[attr-defined]
            elif isinstance(target, ast.Subscript):
                place = _container(target.value)
                if place is not None:
                    places.add(place)
    return places


def _named_attribute(name: ast.expr) -> tuple[str, str] | None:
    return ("self", name.value) if isinstance(name, ast.Constant) and isinstance(name.value, str) else None


def _is_self(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id == "self"


def _is_self_attribute(node: ast.expr) -> bool:
    return _is_attribute_of(node, "self")


def _is_attribute_of(node: ast.expr, name: str) -> TypeGuard[ast.Attribute]:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name


def _persistent_container(node: ast.expr) -> bool:
    """`self.x` or a module-level `_cache` / `CACHE`: outlives the call (by the convention of its name)."""
    return _is_self_attribute(node) or isinstance(node, ast.Name) and (node.id.startswith("_") or node.id.isupper())


# Words of a divisor that make `step % <divisor> == 0` a periodic guard (logging, evaluation, saving every so many
# steps), and words that make it a per-step one (gradient accumulation: the optimizer step runs every step).
_PERIODIC_WORDS = frozenset({"log", "logging", "eval", "evaluation", "evaluate", "val", "valid", "validation",
                             "save", "saving", "checkpoint", "ckpt", "print", "report", "display", "interval",
                             "freq", "frequency", "every", "period", "summary", "visualize", "vis"})

_PER_STEP_WORDS = frozenset({"accum", "accumulation", "accumulate", "grad", "gradient", "micro", "batch", "batches"})

_MIN_PERIOD = 10  # `step % 2 == 0` alternates between two per-step paths (even and odd micro-batches)

# Decorators that cache a function's results: its body runs once per distinct arguments (or object).
_CACHING_DECORATORS = frozenset({"cache", "lru_cache", "cached_property", "functools.cache", "functools.lru_cache",
                                 "functools.cached_property"})



def context_at(facts: FileFacts, line: int, hot_functions: frozenset[str] | None = None) -> CodeContext:
    """Where `line` of the file sits; hot functions besides the built-in ones: `hot_functions`, else the run's."""
    if hot_functions is None:
        hot_functions = facts.hot_functions
    known = _CONTEXTS.get(facts)
    if known is None:
        known = _CONTEXTS[facts] = _Contexts(_LineMap(facts.functions, facts.repeating_loops, facts.graph_captures,
                                                      facts.occasional))
    key = (line, hot_functions)
    context = known.by_line.get(key)
    if context is not None:
        return context
    function, function_first, loop_first, in_graph_capture, occasional_first = known.lines.at(line)
    # A loop counts when it runs inside the innermost function, not around that function's definition.
    in_loop = loop_first > function_first
    occasional = occasional_first > function_first
    hot_function = function is not None and is_hot_function(function, hot_functions)
    chain = None
    if not hot_function and function is not None and facts.project is not None:
        qualname = facts.qualname_at(line)
        hot = facts.project.hot(qualname) if qualname else None
        if hot is not None:
            hot_function, chain = True, hot.describe()
    # Most lines of a function share one context: it is made once.
    shape = (function, in_loop, in_graph_capture, hot_functions, chain, occasional)
    context = known.by_shape.get(shape)
    if context is None:
        context = known.by_shape[shape] = CodeContext(
            function=function, in_loop=in_loop, in_graph_capture=in_graph_capture,
            hot_function=hot_function, hot_chain=chain, occasional=occasional)
    known.by_line[key] = context
    return context


class _Contexts:
    """The contexts of one file's lines, kept while its FileFacts lives: the same lines are asked about again and
    again by the rules."""

    def __init__(self, lines: _LineMap) -> None:
        self.lines = lines
        self.by_line: dict[tuple[int, frozenset[str]], CodeContext] = {}
        self.by_shape: dict[tuple, CodeContext] = {}


_CONTEXTS: weakref.WeakKeyDictionary[FileFacts, _Contexts] = weakref.WeakKeyDictionary()


# A program's entry point runs once per process, but its loops are often the training loop itself.
_ENTRY_POINTS = frozenset({"main"})


# `load_weights`, `_load_state_dict`, `restore_checkpoint`; not `load_balancing_loss` (every step), nor a bare
# `checkpoint` (activation checkpointing runs every step too).
_LOADING_NAME = re.compile(r"(?:^|_)(?:loads?|loading|restore|resume)(?:_(?!balanc)|$)")


def runs_once(facts: FileFacts, line: int) -> str | None:
    """Where `line` sits when that code runs once per model: a constructor (`__init__`, ...), a loading function
    (`load_weights`, `_load_checkpoint`, `from_pretrained`), `main` outside its loops, or, by the project model,
    a function that only such code calls; or a test (a test module or a `test_*` function), which runs once per
    test, loops and all. A copy there waits once, at start-up: the copy rules do not report it. In a loop it
    waits once too where the function is a loading function of `RUN_ONCE_FUNCTIONS` or an `nn.Module`'s
    constructor (see `_loops_run_once`), or one only such constructors call. Nor one every so many steps
    (`periodic_test`), once per key of a cache or once per object behind a flag (`fills_a_cache`,
    `statements_run_once_in_a_while`, `functools.cache`), whose wait is spread over many calls. Nor a function
    nothing in the project runs (`uncalled`), loops and all (but `main`'s, which a console script may call):
    in held-out trees such copies were mostly set-up, dead code, benchmark inputs or API the project itself
    never calls per step.
    Nor a branch no call takes (`untaken_branch`), which never runs, hot or not, nor one a CUDA device never
    takes (`other_device_branch`). None elsewhere."""
    context = context_at(facts, line)
    function = context.function
    if in_test_code(facts, context):
        return "in a test"
    untaken = untaken_branch(facts, line) or other_device_branch(facts, line)
    if untaken is not None:
        return untaken
    if context.occasional and not context.in_graph_capture:
        return "once in a while (every so many steps, or once per key of a cache)"
    if function is None or context.hot_function or context.in_graph_capture:
        return None
    # Constructors and loading (`facts.RUN_ONCE_FUNCTIONS`, or a name such as `restore_checkpoint`) run once per
    # model: a copy there waits once, at start-up. Their loops too (a copy per layer), where the name says it for
    # sure: a loading function of `RUN_ONCE_FUNCTIONS`, or the constructor of an `nn.Module`; not the constructor
    # of any class (a batch may be built every step), nor a name the loading pattern matches (`start_load_kv`).
    if function in RUN_ONCE_FUNCTIONS or _LOADING_NAME.search(function.lower()):
        if not context.in_loop or _loops_run_once(facts, line, function):
            return f"in `{function}`"
        return _in_uncalled_function(facts, line, function)
    # A function named for set-up, export, a test or a benchmark (`setup_model`, `export_engine`, `profile_kernels`)
    # is not the step's work, loops and all, unless hot by its own name (hotness does not flow into such names).
    if named_off_the_step(function):
        return f"in `{function}`, named for work outside the step"
    # Elsewhere a loop repeats: `main`'s training loop, or a function called only from code that runs once in a
    # while (an evaluation every so many steps copies per batch while it runs); not a helper only the
    # constructors of modules and optimizers call, which builds what the model holds once (RecBole's
    # `RippleNet._build_ripple_set`, an optimizer's per-parameter state).
    if context.in_loop:
        built = built_once_per_model(facts, line)
        if built:
            return f"in `{function}`, called only from a module's or an optimizer's constructor: `{built}`"
        # (`main`'s loop is the program's: a console script calls it, which no call in the project shows.)
        return None if function in _ENTRY_POINTS else _in_uncalled_function(facts, line, function)
    if function in _ENTRY_POINTS:
        return f"in `{function}`"
    if _builds_a_data_loader(facts, line):
        return f"in `{function}`, which builds a `DataLoader`"
    qualname = facts.qualname_at(line) if facts.project is not None else None
    callers = facts.project.called_only_from_run_once_code(qualname) \
        if qualname and not _in_nested_function(facts, line) else None
    if callers is not None:
        return f"in `{function}`, called only from run-once code: `{callers}`"
    return _in_uncalled_function(facts, line, function)


def _in_uncalled_function(facts: FileFacts, line: int, function: str) -> str | None:
    return f"in `{function}`, which nothing in the project calls" if nothing_calls(facts, line) else None


def only_when_empty(facts: FileFacts, start: tuple[int, int], end: tuple[int, int]) -> str | None:
    """Why the code from `start` to `end` ((line, column) in code points) runs on degenerate input only: it sits in
    the arm of an `if` or a conditional expression taken only when a count is zero (`empty_input_arm`: an empty
    batch's zero loss, a search whose candidates were all pruned). None elsewhere."""
    for first, last in facts.empty_input_arms:
        if first <= start and end <= last:
            return "only when a count is zero: the fallback for an empty input"
    return None


def built_once_per_model(facts: FileFacts, line: int) -> str | None:
    """Where the function around `line` is called from when only the constructors (or `load_state_dict`) of
    `nn.Module`s and optimizers call it (see ProjectModel.built_only_by_constructors): it runs once per model or
    optimizer, loops and all."""
    qualname = facts.qualname_at(line) if facts.project is not None and not _in_nested_function(facts, line) \
        else None
    return facts.project.built_only_by_constructors(qualname) if qualname else None  # type: ignore[union-attr]


def _in_nested_function(facts: FileFacts, line: int) -> bool:
    """Whether `line` is in a function defined (`def`) in another function that hands it on (`register_hook(hook)`,
    `return hook`): a hook or a closure, which runs when it is called, not when the function defining it does
    (the project model knows functions by the outermost one, `FileFacts.qualname_at`, and its summaries mark
    such calls `nested`). A `def` only called where it is defined, and a lambda (`self.apply(lambda m: ...)`, a
    sort key), run with the function around them."""
    functions = [node for node in facts.functions_around(line) if not isinstance(node, ast.Lambda)]
    for outer, inner in zip(functions, functions[1:], strict=False):
        if any(isinstance(node, ast.Name) and node.id == inner.name and isinstance(node.ctx, ast.Load)
               and not (isinstance(parent := facts.parents.get(node), ast.Call) and parent.func is node)
               for node in ast.walk(outer)):
            return True
    return False


def nothing_calls(facts: FileFacts, line: int) -> bool:
    """Whether `line` is in a function that nothing in the project runs (see ProjectModel.uncalled): the project
    shows no sign that it runs at all. Checked only where the code is not hot."""
    qualname = facts.qualname_at(line) if facts.project is not None else None
    return bool(qualname) and facts.project.uncalled(qualname)  # type: ignore[union-attr]


def _builds_a_data_loader(facts: FileFacts, line: int) -> bool:
    """Whether the function around `line` makes a `DataLoader`: it prepares the data a loop will read, once per
    run or evaluation; the loop over the batches, where copies repeat, is elsewhere or is a loop of its own (the
    caller of this test has ruled out lines in a loop)."""
    function = facts.function_at(line)
    if function is None:
        return False
    end = function.end_lineno or function.lineno
    return any(function.lineno <= call.lineno <= end for call in facts.calls_named(_DATA_LOADERS))


_DATA_LOADERS = frozenset({"DataLoader", "StatefulDataLoader"})


def named_off_the_step(function: str | None) -> bool:
    """Whether a function's name says set-up, export, a test, a benchmark, a profile, a warm-up, a CUDA graph's
    capture or a plot (`setup_model`, `export_engine`, `profile_kernels`, `capture_one_shape`)."""
    return any(word in _OFF_THE_STEP_WORDS for word in name_words(function or ""))


# Of NOT_PER_STEP_WORDS, the words that name no per-step work. Not `init`, nor the words of I/O (`save`, `dump`,
# `load`, `print`): they name per-step code as often (sglang's `ForwardBatch.init_new`, a KV connector's
# `save_kv_layer` every layer, a watermark's `init_from_prompt` every request).
_OFF_THE_STEP_WORDS = frozenset({"setup", "export", "test", "tests", "bench", "benchmark", "profile", "capture",
                                 "warmup", "plot"})


def _loops_run_once(facts: FileFacts, line: int, function: str) -> bool:
    if function not in RUN_ONCE_FUNCTIONS:
        return False
    if function not in _CONSTRUCTORS:
        return True
    qualname = facts.qualname_at(line) if facts.project is not None else None
    owner = qualname.rpartition(".")[0] if qualname else ""
    return bool(owner) and facts.project.built_once(owner)  # type: ignore[union-attr]


_CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__new__"})


def runs_once_by_name(context: CodeContext) -> bool:
    """Module-level code (outside a loop, or in one only once in a while), a run-once function by its name, or a
    function not hot by its own name whose name says it is no per-step work (`named_off_the_step`)."""
    return context.function is None and (not context.in_loop or context.occasional) \
        or context.function in RUN_ONCE_FUNCTIONS or not context.hot_function and named_off_the_step(context.function)

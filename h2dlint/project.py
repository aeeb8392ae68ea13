"""The project model: what one file cannot tell about itself.

Where a tensor lives and which code runs every step are facts of the whole project: a
batch's `seq_lens` is made on the GPU in one module and read back in thirty others, and a
backend's metadata set-up is hot because the model runner's per-step path calls it.

Every Python file under the project root is summarized once (`summarize`): its imports,
classes (bases, attribute types, what each attribute is assigned), functions (the calls
they make, as written) and the places that set a default device. A summary depends on the
file's content only, so summaries are cached by content (`SummaryCache`). The summaries are
then merged into a `ProjectModel`, which resolves calls across files (imports, `self`,
attribute types, annotations, `super()`), propagates hotness from the roots along the calls
(keeping the shortest chain, for the message), and places class attributes on the GPU or
the host. A rule asks the model through the file's `FileView`.

The model never reads a file's text: it is built from `ast` trees only.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import gc
import hashlib
import marshal
import math
import os
import tempfile
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from . import __version__
from .branches import NOT_NONE
from .cache import code_fingerprint, make_cache_folder
from .dtypes import integer_tensor
from .facts import (
    JOINING_FUNCTIONS,
    NEW_TENSOR_METHODS,
    NON_TENSOR_METHODS,
    NON_TENSOR_TORCH_FUNCTIONS,
    SAME_DEVICE_ATTRIBUTES,
    SCALAR_ANNOTATIONS,
    TORCH_DTYPES,
    FileGate,
    TreeEvidence,
    evidence_of,
    names_a_tensor,
    qualified_name,
)
from .hotness import (
    NOT_PER_STEP_WORDS,
    RUN_ONCE_FUNCTIONS,
    FlagUses,
    caches_results,
    flag_uses,
    is_hot_function,
    is_off_the_step_path,
    methods_cached_on_objects,
    occasional_block,
    statements_run_once_in_a_while,
)
from .syntax import (
    annotated_name,
    async_copy_target,
    certainly_no_tensor,
    dotted_name,
    is_none,
    name_words,
    parameter_defaults,
    parameters,
)

# Functions hotness does not flow into: those that run once or are no per-step work (the sync rules' own sets),
# and, besides, saving and functions named for loading, checkpointing or registering, which per-step code may call
# while what they reach stays set-up. Not building or creating: an inference engine builds every step's metadata
# (`_build_attention_metadata`, an attention metadata builder's `build`).
RUN_ONCE_NAMES = RUN_ONCE_FUNCTIONS | {"state_dict", "save_pretrained", "main"}
NOT_PER_STEP_NAME_WORDS = NOT_PER_STEP_WORDS | {"load", "checkpoint", "register", "configure"}
# `torch.nn.Module` and other libraries' subclasses of it, by the names a project's bases are written with.
MODULE_CLASSES = frozenset({
    "torch.nn.Module", "torch.nn.modules.module.Module",
    *(f"{package}.{path}LightningModule" for package in ("pytorch_lightning", "lightning.pytorch", "lightning")
      for path in ("", "core.", "core.module.")),
    "transformers.PreTrainedModel", "transformers.modeling_utils.PreTrainedModel",
})
# A call through a receiver of unknown type resolves by the method's name only when so few classes define it
# that the name itself says which ones are meant.
MAX_CLASSES_BY_NAME = 3
# Words of a function's name that say it runs once (or once per model, adapter or graph): what it alone calls runs
# once too. Not `init`, `build`, `create` or `load`, which name per-step code as often (sglang's `ForwardBatch.init_new`
# builds every step's batch, an attention metadata builder's `build` runs every step, a KV cache's `load_*` brings
# pages back every step); loading weights or a checkpoint does count.
_RUN_ONCE_WORDS = frozenset({"initialize", "setup", "checkpoint", "save", "warmup", "capture", "register",
                             "configure"})
_LOADED_ONCE = frozenset({"weights", "weight", "checkpoint", "model", "adapter", "adapters", "lora", "state"})
# A call by the method's name alone (`<object>.name(...)`) is taken for a call of a project's method only for names
# of two words or more that are no tensor, module or container method: `scatter`, `update`, `index_select` say
# nothing about which class is meant.
NOT_PROJECT_METHODS = frozenset({"masked_fill", "masked_scatter", "index_select", "index_add", "index_copy",
                                 "index_fill", "index_put", "new_zeros", "new_ones", "new_empty", "new_full",
                                 "new_tensor", "type_as", "view_as", "expand_as", "reshape_as", "repeat_interleave",
                                 "scatter_add", "scatter_reduce", "is_contiguous", "to_dense", "to_sparse",
                                 "data_ptr", "element_size", "nelement", "register_buffer", "register_parameter",
                                 "named_parameters", "named_modules", "named_buffers", "state_dict", "load_state_dict",
                                 "zero_grad", "set_default", "get_default", "set_device", "current_device",
                                 "current_stream", "wait_stream", "record_stream", "wait_event", "record_event",
                                 "non_blocking", "pin_memory", "share_memory", "all_reduce", "all_gather",
                                 "reduce_scatter", "is_available", "is_initialized", "get_rank", "get_world_size"})
# Hot by name, but entry points of too many things besides per-step GPU work (a tokenizer's `__call__`, an engine's
# `generate` around request parsing) for hotness to flow from them into what they call.
NOT_PROPAGATING_ROOTS = frozenset({"__call__", "generate", "sample", "decode", "backward"})
GPU, HOST = "gpu", "host"
_TORCH_FACTORIES = frozenset({"tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "rand", "randn",
                              "randint", "zeros_like", "ones_like", "empty_like", "full_like", "linspace", "eye"})
_HOST_METHODS = frozenset({"cpu", "pin_memory", "numpy", "tolist"})
_MIRROR_SUFFIXES = ("_cpu", "_host")
# The summary walk's view of the tree: the fields that may hold nodes, by node type, and the node types with no
# children worth visiting.
_NOT_CHILDREN = frozenset({"ctx", "op", "ops", "id", "attr", "name", "arg", "asname", "module", "level", "kind",
                           "type_comment", "conversion", "is_async", "simple", "kwd_attrs", "rest", "annotation",
                           "returns", "names"})
_FIELDS: dict[type, tuple[str, ...]] = {}
_LEAVES = frozenset({ast.Name, ast.Constant})
SUMMARY_VERSION = 49
# How the summary cache stores the summaries (SummaryCache), apart from what a summary holds.
_SUMMARY_CACHE_FORMAT = 3
# How many files the summary cache is kept in (SummaryCache): an edit reads and writes one of them.
_SUMMARY_SHARDS = 16


# ----- one file's summary -----------------------------------------------------------------------------------------
#
# A summary is plain data (dicts, lists, tuples, strings, ints), so that it can be cached with marshal. It holds no
# line numbers (a message names a definition by module and name): an edit that moves code without changing what it
# does leaves the summary, and so the model, as they were (Project._take_last_run).
#   module:   the file's dotted module name
#   imports:  {local name: qualified name}; star_imports: [module] of `from module import *`, when there are any
#   classes:  {class qualname: {"bases": [dotted as written], "attrs": {attr: [placement, why]},
#              "types": {attr: dotted type as written}, "handed": {attr: the annotation of the parameter assigned
#              to it}, "made": {attr: the name of the function (no dotted path) whose result is assigned to it},
#              "numbers": {attr: `int`, `float` or `bool`, the number it is annotated with (or `Optional` of one)}}}
#   functions: {qualname: {"class": class qualname or "", "calls": [call reference],
#               "params": {parameter: dotted annotation}, "replay": bool, "order": [positional parameter],
#               "returns": [value], "passes": {index into calls: [[value of each positional argument],
#               {keyword: value}]}, "occasional": [index into calls of each call made once in a while: under
#               `if step % log_interval == 0:` or filling a cache], "nested": [index into calls of each call
#               made in a nested `def` it hands on, a hook], "cached": bool (`functools.cache`, or
#               `self.m = lru_cache(n)(self.m)` in the class),
#               "defaults": {parameter: value} (every field of the `__init__` written for a dataclass, ["none"]
#               for None; elsewhere only a device written out, `device="cpu"`)}}; a `passes` entry's keywords
#               hold "*" when the call also passes `*args` or `**kwargs`; "objects": {index into calls: as
#               `passes`, each argument how to find its object's class (`_object_passed`) or ""}; "shapes":
#               {index into calls: "count of positional arguments[:keyword,...]"} for the calls passing
#               arguments but none the model places
#   classes' "flows": {attr: [[function qualname, value], ...]} for attributes assigned what only the model can place
#   classes' "bound": {attr: [method name]} for `self.attr = self.method` (a call of `self.attr(...)` runs it)
#   classes' "async_targets": [attr] the devices a method copies to, `x.to(self.device, non_blocking=True)`
#   functions' "decorated": true when a decorator may run it where no call shows (`@property`, `@register_model`)
#   named: [name] the file uses as values, not to call them (`fn = _impl`, `return f`); named_attributes: [attr]
#   the same of attributes (`register(self.hook)`); ambiguous: [name] the module binds in more than one way (imported
#   from two places under `try`/`if`, or imported and defined): `imports` holds only one of them
# For the values a branch tests (ProjectModel.literals), a literal is ["l", value] (a string, a number, a bool,
# None), a parameter passed on ["p", parameter] (["p", parameter, "not None"] after `if x is None: raise ...`),
# Python data that is no tensor ["h"] (a list or tuple display, a comprehension, `.tolist()`:
# ProjectModel.passes_python_value), a tensor of integers ["i"] (`dtypes.integer_tensor`: ProjectModel.
# passes_integer_tensors), any other value certainly not None ["n"] (a tensor factory's result, `x or []`:
# `_Pending.never_none`); [] is anything else:
#   functions' "literals": {parameter: value} of the literal defaults; "arguments": {index into calls:
#              repr of [[literal or parameter of each positional argument], {keyword: literal or parameter}]} for
#              the calls that pass one ("*" as in `passes`); "bare": [index into calls of each call passing nothing]
#   classes' "sets": {attr: repr of [[function qualname ("" for the class body), literal or parameter], ...]}
#              for every store into `self.attr`; "dynamic": true when a method stores by a computed name
#              (`setattr(self, k, v)`, `self.__dict__.update(...)`); "remade": true when a method builds an object by
#              `type(self)(...)`
#   functions' "classmethod": true for a classmethod (`Class.build(x)` binds `cls`)
#   stored: [attr] the file stores into on objects other than `self` (`model.use_cache = False`)
#
# A value (see `_Values`) says symbolically where a tensor or a device comes from, for the model to resolve across
# files: ["k", placement, why] (known), ["p", parameter], ["a", attr] (`self.attr`), ["sa", attr, attr]
# (`self.x.y`), ["pa", parameter, attr], ["ta", how to find the class of a local (`_local_type`), attr]
# (`meta.x` of a local `meta = Meta(...)`), ["c", call reference] (what the call returns), ["or", value, value] (an
# operation on both: on the GPU if either is), ["both", value, value, ...] (one of them), ["d", value] (the device
# of a tensor, or a device), ["t", value] (a tensor made on a device, or on another tensor's), ["m", call reference,
# value] (a method called on a value: a project method's result, else a tensor method's), ["e", index, value]
# (an element: `f(x)[0]`, or `a, b = f(x)`), ["tuple", value, ...] (a tuple a function returns, written out); []
# for unknown.
#   device_context_calls: [(function qualname or "", call reference)] made inside `with torch.device(...)`
#   evidence: facts.TreeEvidence as data (GPU evidence, mirrored names, streams, collectives, torch, functions)
#
# A call reference is a string: "n:f" (a name), "d:a.b.f" (a dotted path from a name), "s:m" (`self.m`),
# "sa:x.m" (`self.x.m`), "p:x.m" (`x.m` on a parameter `x`), "u:m" (`super().m`), "a:m" (`<other>.m`), and
# "rc:<type>@.m" (`m` called on another call's result, or on `self.x.y`, whose class is found as `<type>` says: see
# `_local_type`).


def module_name_for(path: Path, source_roots: Iterable[Path] = (), project_root: Path | None = None) -> str:
    """The dotted module name of `path`: relative to the deepest source root that holds it; else found by walking
    up through the folders that hold an `__init__.py`, as Python finds a package's modules, and on up to the project
    root through namespace packages (folders without one). A name may lack leading parts that imports spell out
    (`managers.scheduler` for `sglang.srt.managers.scheduler`): the model matches imports by their last parts."""
    path = Path(os.path.abspath(path))
    parts = [path.stem] if path.stem != "__init__" else []
    roots = sorted((Path(os.path.abspath(root)) for root in source_roots), key=lambda root: -len(root.parts))
    for root in roots:
        if root in path.parents:
            relative = path.parent.relative_to(root).parts
            return ".".join([*relative, *parts])
    folder = path.parent
    top = Path(os.path.abspath(project_root)) if project_root is not None else None
    while folder.parent != folder and ((folder / "__init__.py").is_file() or top is not None and top in folder.parents):
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def summarize(tree: ast.Module, module: str, is_package: bool = False) -> dict:
    """The summary of one parsed file (see the layout above)."""
    summary = _Summarizer(module, is_package).run(tree)
    summary["evidence"] = evidence_of(tree).as_data()
    return summary


class _Summarizer:
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.imports: dict[str, str] = {}
        self.classes: dict[str, dict] = {}
        self.functions: dict[str, dict] = {}
        self.device_context_calls: list[tuple[str, str]] = []
        self.reads: set[str] = set()  # attribute names read anywhere in the file
        self.star_imports: list[str] = []  # `from .common import *`: the modules whose names the file re-exports
        # The names the file uses as values, not to call them (see `_scan`): a function named so is handed on. Bare
        # names, which the model resolves in the file's scope, apart from attributes (`register(self.on_alloc)`).
        self.named: dict[str, None] = {}
        self.named_attributes: dict[str, None] = {}
        self.rebound_imports: dict[str, None] = {}  # names imported from more than one place (see `summary_layout`)
        # The attributes the file stores into on objects other than `self` (`model.use_cache = False`).
        self.stored: dict[str, None] = {}
        # What the function being summarized does with values, turned into values (`_Values`) at its end.
        self._pending: _Pending | None = None
        self._flags: Callable[[], FlagUses] | None = None  # hotness.flag_uses of the tree, on first use
        # In a classmethod: its first parameter (`cls`) and its class, so that `cls(...)` is written as a call of
        # the class, which builds an object of it.
        self._constructs: tuple[str, str] | None = None
        self.module_names: frozenset[str] = frozenset()

    def run(self, tree: ast.Module) -> dict:
        self._flags = functools.cache(functools.partial(flag_uses, tree))
        # The names the module binds itself (a `def sorted`, `len = ...`): no builtin's, for `_Pending.never_none`.
        self.module_names = frozenset(name for statement in tree.body for name in _bound_names(statement))
        self._body(tree.body, prefix="", class_name="")
        module_calls = self.functions.pop("<module>", None)
        if module_calls is not None and module_calls["calls"]:
            self.functions[""] = module_calls  # module-level code: only its device contexts matter
        summary = {"module": self.module, "imports": self.imports, "classes": self.classes,
                   "functions": self.functions, "reads": sorted(self.reads),
                   "device_context_calls": self.device_context_calls}
        if self.star_imports:
            summary["star_imports"] = self.star_imports
        if self.named:
            summary["named"] = list(self.named)
        if self.named_attributes:
            summary["named_attributes"] = list(self.named_attributes)
        # A name imported from two places (under `try`/`if`), or both imported and defined, may name either of them.
        defined = {name for statement in tree.body for name in _bound_names(statement, imports=False)}
        ambiguous = [*self.rebound_imports, *sorted(defined.intersection(self.imports))]
        if ambiguous:
            summary["ambiguous"] = list(dict.fromkeys(ambiguous))
        if self.stored:
            summary["stored"] = list(self.stored)
        return summary

    def _name_values_in(self, node: ast.AST) -> None:
        """Note the names `node` uses as values, not to call them (a class body's `__call__ = forward`, a
        default `fn=helper`): the walk `_scan` makes of function bodies, for what it does not visit."""
        called = {id(inner.func) for inner in ast.walk(node) if isinstance(inner, ast.Call)}
        for inner in ast.walk(node):
            if id(inner) not in called:
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
                    self.named[inner.id] = None
                elif isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Load):
                    self.named_attributes[inner.attr] = None

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._bind_import(alias.asname, alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.imports.setdefault(top, top)
            return
        base = node.module or ""
        if node.level:
            package = self.package.split(".") if self.package else []
            package = package[:len(package) - node.level + 1] if node.level > 1 else package
            base = ".".join([*package, *([node.module] if node.module else [])])
        for alias in node.names:
            if alias.name != "*":
                self._bind_import(alias.asname or alias.name, f"{base}.{alias.name}" if base else alias.name)
            elif base and base not in self.star_imports:
                self.star_imports.append(base)

    def _bind_import(self, name: str, target: str) -> None:
        if self.imports.get(name, target) != target:  # `try: from .slow import f` / `except: from .fast import f`
            self.rebound_imports[name] = None
        self.imports[name] = target

    def _body(self, body: list[ast.stmt], prefix: str, class_name: str) -> None:
        for statement in body:
            if isinstance(statement, ast.ClassDef):
                self._class(statement, prefix)
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(statement, prefix, class_name)
            elif isinstance(statement, (ast.If, ast.Try)) and _defines(statement):
                # `if TYPE_CHECKING:`, `try: ... except ImportError:` around definitions
                for block in (statement.body, statement.orelse, getattr(statement, "finalbody", []),
                              *(handler.body for handler in getattr(statement, "handlers", []))):
                    self._body(block, prefix, class_name)
                if isinstance(statement, ast.If) and not class_name:
                    self._scan("<module>", "", ast.Expr(statement.test), params={})
            elif not class_name:
                self._module_statement(statement)
            else:
                self._class_statement(statement, class_name)

    def _class(self, node: ast.ClassDef, prefix: str) -> None:
        name = f"{prefix}{node.name}"
        # A generic base is the class subscripted (`Builder[M]` is a `Builder`), not what an annotation's subscript
        # holds (`Optional[Foo]` is a `Foo`).
        self.classes[name] = {"bases": [dotted_name(base.value if isinstance(base, ast.Subscript) else base) or ""
                                        for base in node.bases],
                              "attrs": {}, "types": {}, "scalars": [], "unplaced": []}
        self._body(node.body, prefix=f"{name}.", class_name=name)
        # A method defined twice (under `if`/`try`) or bound again in the class body (`f = staticmethod(f)`,
        # `f = wrap(f)`): what a call of it takes is not what one `def` says (see `_fits`).
        bound = [bound_name for statement in node.body for bound_name in _bound_names(statement)]
        for method in {method for method in bound if bound.count(method) > 1}:
            self.functions.get(f"{name}.{method}", {}).pop("sig", None)
        self._dataclass_init(node, name)
        for method in methods_cached_on_objects(node):  # `self.m = lru_cache(100)(self.m)` in `__init__`
            if f"{name}.{method}" in self.functions:  # (a base's method wrapped so is left as it is)
                self.functions[f"{name}.{method}"]["cached"] = True
        sets = self.classes[name].get("sets")
        if sets:  # as text, as `arguments` is: read back only for the attributes a question reaches
            self.classes[name]["sets"] = {attr: repr(stores) for attr, stores in sets.items()}
        attrs, scalars = self.classes[name]["attrs"], set(self.classes[name]["scalars"])
        if "gpu" in attrs and attrs["gpu"][0] == "" and ("cpu" in attrs or "np" in attrs) \
                and "gpu" not in self.classes[name].get("numbers", {}):
            # A buffer kept on both sides (`self.cpu`, `self.gpu`, `self.np`): `gpu` is the device copy (not a
            # count of GPUs annotated `gpu: int` beside `cpu: int`).
            attrs["gpu"] = [GPU, "has a host side `cpu`"]
        for attr in list(attrs):
            if attr in scalars or not names_a_tensor(attr) or _COUNT_WORDS.intersection(name_words(attr)):
                continue  # `use_fused_rope` beside `use_fused_rope_cpu` is a flag, `num_heads_cpu` a count
            for suffix in _MIRROR_SUFFIXES:
                mirror = attrs.get(attr + suffix)
                if mirror is not None and attrs[attr][0] == "" and mirror[0] != GPU:
                    attrs[attr] = [GPU, f"has a host mirror `{attr}{suffix}`"]

    def _dataclass_init(self, node: ast.ClassDef, name: str) -> None:
        """The `__init__` a dataclass decorator writes, as if the class defined it: a parameter per field, each
        field assigned its parameter, so that what the calls building objects of the class pass places the
        fields. Positional parameters only where their order is certain: no base class (its fields come first),
        no `KW_ONLY` marker nor `kw_only=True`. A field's default is what a call that leaves it out passes."""
        options = next((found for decorator in node.decorator_list
                        if (found := _dataclass_options(decorator)) is not None), None)
        if options is None or not options.get("init", True) or f"{name}.__init__" in self.functions:
            return
        fields, defaults, types = [], {}, {}
        positional = not node.bases and not options.get("kw_only", False)
        order: list[str] = []
        values = _Values(set(), {}, None, lambda call: call_reference(call, {}, None), self.imports, {})
        for statement in node.body:
            if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
                continue
            annotation = _dotted(statement.annotation.value if isinstance(statement.annotation, ast.Subscript)
                                 else statement.annotation) or ""
            kind = annotation.rpartition(".")[2]
            if kind == "ClassVar":
                continue
            if kind in ("KW_ONLY", "InitVar"):
                # The fields after a `KW_ONLY` marker are keyword-only; an `InitVar` is a parameter but no field.
                # Either way, the positions of the fields before it still hold, and those after it are not kept.
                if positional:
                    order, positional = list(fields), False
                continue
            field_name, default = statement.target.id, statement.value
            if isinstance(default, ast.Call) and (_dotted(default.func) or "").rpartition(".")[2] == "field":
                keywords = {keyword.arg: keyword.value for keyword in default.keywords}
                if _false(keywords.get("init")):
                    continue
                default = keywords.get("default")
                if default is None and "default_factory" in keywords:
                    default = ast.Call(func=keywords["default_factory"], args=[], keywords=[])
            fields.append(field_name)
            if statement.annotation is not None and (written := _dotted(statement.annotation)):
                types[field_name] = written
            if default is not None:
                defaults[field_name] = ["none"] if is_none(default) \
                    else values.of(default)
        if positional:
            order = list(fields)
        init = f"{name}.__init__"
        self.functions[init] = {"class": name, "calls": [], "params": types, "replay": False, "order": order,
                                "bound": True, "self": "self", "defaults": defaults}
        flows = self.classes[name].setdefault("flows", {})
        for field_name in fields:
            self._class_set(name, field_name, init, [])  # what the calls building objects pass: not followed
            # The class-level default is no assignment of its own: a call leaving the field out passes it.
            flows[field_name] = [[init, ["p", field_name]],
                                 *(flow for flow in flows.get(field_name, ()) if flow[0])]

    def _class_statement(self, statement: ast.stmt, class_name: str) -> None:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            self._attribute(class_name, statement.target.id, statement.value, statement.annotation)
            if statement.value is not None:
                # A field's default (a NamedTuple's, an attrs or dataclass field): constructors the model does not
                # see store what they are passed.
                self._class_set(class_name, statement.target.id, "", [])
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    self._attribute(class_name, target.id, statement.value, None)
                    # A class attribute: what the objects hold until they store their own.
                    self._class_set(class_name, target.id, "", _literal(statement.value))
            self._name_values_in(statement.value)  # `__call__ = forward`

    def _attribute(self, class_name: str, attr: str, value: ast.expr | None, annotation: ast.expr | None,
                   parameter_type: str | None = None) -> None:
        entry = self.classes[class_name]
        if annotation is not None:
            annotated = _dotted(annotation)
            if annotated and attr not in entry["types"]:
                entry["types"][attr] = annotated
                number = annotated_name(annotation)  # (of the annotation kept: the two never disagree)
                if number in SCALAR_ANNOTATIONS:
                    entry.setdefault("numbers", {})[attr] = number
        elif parameter_type:
            # `self.model = model` of a parameter `model: SupportsMultiModal`: a type only where none is written
            entry.setdefault("handed", {}).setdefault(attr, parameter_type)
        if isinstance(value, ast.Call):
            made = _dotted(value.func)
            if made and made.rpartition(".")[2][:1].isupper():
                entry["types"].setdefault(attr, made)
            elif made and "." not in made:
                # `self.state = init_state(...)`: a factory, whose result's class the model may find
                entry.setdefault("made", {}).setdefault(attr, made)
        if _not_a_tensor(value, annotation) and attr not in entry["scalars"]:
            entry["scalars"].append(attr)
        placement, why = value_placement(value) if value is not None else ("", "")
        if not placement and value is not None and not is_none(value) \
                and attr not in entry["unplaced"]:
            entry["unplaced"].append(attr)  # assigned something whose placement the summary cannot tell
        known = entry["attrs"].get(attr)
        if known is None or known[0] == "":
            entry["attrs"][attr] = [placement, why]
        elif placement and placement != known[0]:
            entry["attrs"][attr] = ["mixed", ""]
        if not placement and value is not None and not is_none(value):
            # Left for the model, which may place it through what the function is passed or calls.
            if self._pending is not None and self._pending.class_name == class_name:
                self._pending.attributes.append((attr, value))
            else:
                entry.setdefault("flows", {}).setdefault(attr, []).append(["", []])

    def _module_statement(self, statement: ast.stmt) -> None:
        self._scan("<module>", "", statement, params={})

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str, class_name: str) -> None:
        qualname = f"{prefix}{node.name}"
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        params = {arg.arg: _dotted(arg.annotation) for arg in arguments if arg.annotation is not None}
        params = {name: annotation for name, annotation in params.items() if annotation}
        record = {"class": class_name, "calls": [],
                  "params": params, "replay": False}
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self._name_values_in(default)  # `def run(x, kernel=_triton_kernel)`
        defaulted = parameter_defaults(node.args)
        literals = {arg.arg: literal[1] for arg, default in defaulted
                    if default is not None and (literal := _literal(default))}
        # A device written out as a default (`device="cpu"`) is what a call leaving the parameter out passes.
        devices = {arg.arg: ["d", ["k", kind, f"the device `{_describe(default)}`"]] for arg, default in defaulted
                   if default is not None and (kind := _device_kind(default))}
        if devices:
            record["defaults"] = devices
        returned = _dotted(node.returns) if node.returns is not None else None
        if returned:
            record["rtype"] = returned  # the class a call's result is an object of, when the project defines it
        if any(caches_results(decorator) for decorator in node.decorator_list):
            record["cached"] = True
        if any(not _plain_decorator(decorator) for decorator in node.decorator_list):
            record["decorated"] = True  # a property, a registered hook or op: run in ways no call shows
        if literals:
            record["literals"] = literals
        self.functions[qualname] = record
        static = any(_dotted(decorator) == "staticmethod" for decorator in node.decorator_list)
        bound = bool(class_name) and not static and bool(arguments)  # the first parameter is the object or class
        self_name = arguments[0].arg if bound else None
        positional = [arg.arg for arg in [*node.args.posonlyargs, *node.args.args]]
        record["order"] = positional[1:] if bound else positional
        record["bound"] = bound
        if class_name:
            # What a call of the method must pass, for calls by its name on objects of unknown class: one that
            # cannot bind its arguments to these parameters calls some other method (see `_fits`).
            record["sig"] = [max(0, len(positional) - len(node.args.defaults) - bound),
                             [arg.arg for arg in node.args.kwonlyargs],
                             [arg.arg for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)
                              if default is None],
                             node.args.vararg is not None, node.args.kwarg is not None]
        record["self"] = self_name or ""
        outer, self._pending = self._pending, _Pending(class_name, {arg.arg for arg in arguments} - {self_name},
                                                       node.body, self.imports, self.module_names)
        outer_constructs = self._constructs
        classmethod = bound and any(_dotted(decorator) == "classmethod" for decorator in node.decorator_list)
        if classmethod:
            record["classmethod"] = True  # `Class.build(x)` binds `cls` as `obj.build(x)` does
        self._constructs = (self_name, class_name) if classmethod and self_name else None
        try:
            once_in_a_while = {id(statement) for statement in statements_run_once_in_a_while(node, self._flags)}
            for statement in node.body:
                self._scan(qualname, class_name, statement, params, self_name, id(statement) in once_in_a_while)
            self._settle(qualname, record, params, self_name)
        finally:
            self._pending, self._constructs = outer, outer_constructs

    def _settle(self, qualname: str, record: dict, params: dict, self_name: str | None) -> None:
        """Turn what the function's scan collected into values: what it returns, what it passes in its calls, what
        it assigns to attributes of `self` that only the model can place."""
        pending = self._pending
        assert pending is not None
        # `self.get_builder(i).build(...)`: a method called on another call's result, typed as a local bound to
        # that result would be (once every assignment of the function is known). Its values say the same.
        typed_calls: dict[int, str] = {}
        for index, call in pending.chained:
            typed = _type_of(call.func.value, pending, self_name, 0)
            if typed is not None:
                record["calls"][index] = typed_calls[id(call)] = f"rc:{typed}@.{call.func.attr}"
        values = _Values(pending.parameters, pending.assigned, self_name,
                         lambda call: typed_calls.get(id(call)) or self._call_reference(call, params, self_name),
                         self.imports, params, lambda name: _local_type(name, pending, self_name),
                         pending.reaching_value, pending.stored_on, pending.shared)
        returns = [values.returned(value) for value in pending.returns]
        if returns:
            record["returns"] = returns
        # What each call passes: the values the model places (`passes`), and the literals and parameters, for the
        # values a parameter takes (ProjectModel.literals: `arguments`, and `bare` for a call passing nothing).
        passes, arguments, bare, shapes, objects = {}, {}, [], {}, {}
        for index, call in pending.calls:
            if not call.args and not call.keywords:
                bare.append(index)
                continue
            positional, keywords = _call_arguments(call, lambda expr: _object_passed(expr, pending, self_name))
            if any(positional) or any(keywords.values()):
                objects[index] = [positional, keywords]
            positional, keywords = _call_arguments(call, values.of)
            if any(positional) or any(keywords.values()):
                passes[index] = [positional, keywords]
            else:  # passes nothing the model can place: only which parameters it passes, for their defaults
                shapes[index] = f"{len(positional)}:{','.join(keywords)}" if keywords else str(len(positional))
            positional, keywords = _call_arguments(call, lambda expr: _literal_or_parameter(expr, pending))
            if any(positional) or any(keywords.values()):
                # Written out as text, read back only for the calls a question reaches (`_read_arguments`): a
                # summary holds one for most calls, and nested lists and dicts would take several times the
                # memory in every process that loads the summaries.
                arguments[index] = repr([positional, keywords])
        if passes:
            record["passes"] = passes
        if arguments:
            record["arguments"] = arguments
        if bare:
            record["bare"] = bare
        if shapes:
            record["shapes"] = shapes
        if objects:
            record["objects"] = objects
        for attr, value in pending.stores:
            self._class_set(pending.class_name, attr, qualname,
                            _literal_or_parameter(value, pending) if value is not None else [])
        # In the order of the calls, not a set's: a summary must not depend on the process's hash seed (the next
        # run compares it, in order, with this one's to tell whether the model is the same).
        receivers = dict.fromkeys(called[0] for reference in record["calls"]
                                  if (called := _method_on_a_name(reference)) is not None)
        # The locals an attribute is read from too (`meta = self._prepare(...)`, then `meta.logits_indices`): the
        # rules ask where such an attribute lives, which the local's class tells (`FileView.local_class`).
        local_types = {name: typed for name in {**receivers, **pending.read_on} if name in pending.typed
                       and name not in params and name not in pending.inner_names
                       and (typed := _local_type(name, pending, self_name))}
        # A parameter with no annotation that a method is called on (`head.init_state(h)`), or an attribute read on:
        # the model finds its class from what the calls of the function pass (`ProjectModel._type_parameters`,
        # `ProjectModel._parameter_class`).
        local_types.update({name: f"p:{name}" for name in {**receivers, **pending.read_on}
                            if name in pending.parameters and name not in params and name not in pending.typed
                            and pending.never_rebound(name)})
        if local_types:
            record["locals"] = local_types
        # The calls made in a nested `def` the function hands on (`register_forward_hook(hook)`, `return hook`):
        # they run when the hook does, not when the function does. One it only calls in place is its own code.
        nested = [index for index, name in pending.nested_calls if name in pending.named]
        # A call of a local bound to a function (`run = _grouped_mm if grouped else _for_loop`, then `run(x)`) may
        # call each function bound: added after the calls as written, whose indexes `passes`, `occasional` and
        # `nested` keep.
        occasional = record.get("occasional", [])
        for index, reference in enumerate(list(record["calls"])):
            if reference.startswith("n:") and reference[2:] in pending.assigned:
                for value in pending.assigned[reference[2:]]:
                    for name in _named_functions(value, self_name) if value is not None else ():
                        if name != reference and name not in record["calls"]:
                            if index in occasional:  # called once in a while, as the local's call is
                                occasional.append(len(record["calls"]))
                            if index in nested:
                                nested.append(len(record["calls"]))
                            record["calls"].append(name)
        if nested:
            record["nested"] = nested
        for name in pending.named:  # not its own locals and parameters: those name no function
            if name not in pending.assigned and name not in pending.parameters and name != self_name:
                self.named[name] = None
        flows = self.classes[pending.class_name].setdefault("flows", {}) if pending.attributes else {}
        for attr, value in pending.attributes:
            flows.setdefault(attr, []).append([qualname, values.of(value)])

    def _scan(self, qualname: str, class_name: str, statement: ast.stmt, params: dict,
              self_name: str | None = None, occasional: bool = False) -> None:
        """Record what `statement` does that the model needs: the calls it makes (nested functions and lambdas
        count as their function's), the imports, the attributes it reads and those it assigns on `self`, and the
        default-device contexts it opens. One walk, over the fields that may hold nodes."""
        record = self.functions.setdefault(qualname, {"class": class_name, "calls": [],
                                                     "params": {}, "replay": False})
        calls, reads = record["calls"], self.reads
        pending = self._pending if qualname != "<module>" else None
        # Names used as values, not to call them (`fn = _impl`, `register(self.on_alloc)`, `for f in [a, b]`):
        # a function named so is handed on (ProjectModel.uncalled). A bare name may be a local: left to `_settle`.
        named_attributes, named = self.named_attributes, pending.named if pending is not None else self.named
        called: set[int] = set()
        assigned_whole: set[int] = set()  # `self.x` targets whose whole value `_stored_attribute` has been given
        # `nested`: 0 in the function's own code, 1 in a lambda, the name of a nested `def` in its body.
        stack: list[tuple[ast.AST, bool, int | str, bool]] = [(statement, False, 0, occasional)]
        while stack:
            node, in_device_context, nested, occasional = stack.pop()
            kind = node.__class__
            if kind in _NOTED and pending is not None:
                if nested:
                    pending.note_for_types(node)
                else:
                    pending.note(node)
            if kind is ast.Attribute:
                if node.ctx.__class__ is ast.Load:
                    reads.add(node.attr)
                    if pending is not None and node.value.__class__ is ast.Name:
                        pending.read_on[node.value.id] = None  # type: ignore[attr-defined]
                    if id(node) not in called:
                        named_attributes[node.attr] = None
                elif id(node) not in assigned_whole:
                    self._stored_attribute(node, class_name, qualname, self_name, None)
                if pending is not None and node.ctx.__class__ is not ast.Load and node.value.__class__ is ast.Name:
                    pending.stored_on.add((node.value.id, node.attr))  # type: ignore[attr-defined]
            elif kind is ast.Call:
                called.add(id(node.func))
                reference = self._call_reference(node, params, self_name)
                self._store_call(node, class_name, self_name)
                if class_name and self_name and not nested:
                    target = async_copy_target(node)
                    if target.__class__ is ast.Attribute and _is_name(target.value, self_name):  # type: ignore
                        # `x.to(self.device, non_blocking=True)`: `self.device` is where the class's code copies
                        # asynchronously, which only an accelerator makes worth asking for.
                        accelerators = self.classes[class_name].setdefault("async_targets", [])
                        if target.attr not in accelerators:  # type: ignore[attr-defined]
                            accelerators.append(target.attr)  # type: ignore[attr-defined]
                if self_name and class_name and (_is_name(node.func, self_name, "__class__") or (
                        node.func.__class__ is ast.Call and _dotted(node.func.func) == "type"
                        and node.func.args and _is_name(node.func.args[0], self_name))):
                    self.classes[class_name]["remade"] = True  # `type(self)(...)`: constructions no name shows
                if reference is not None:
                    if pending is not None and not nested \
                            and not reference.startswith("d:torch.") and reference not in _BUILTIN_CALLS:
                        # (A call in a nested function or lambda passes that function's values: none of ours.)
                        pending.calls.append((len(calls), node))
                    if occasional and not nested:
                        record.setdefault("occasional", []).append(len(calls))
                    elif nested.__class__ is str and pending is not None:
                        pending.nested_calls.append((len(calls), nested))  # see `_settle`
                    if pending is not None and reference[:2] == "a:" and node.func.value.__class__ is ast.Call:
                        pending.chained.append((len(calls), node))  # typed by `_settle`
                    calls.append(reference)
                    if in_device_context:
                        self.device_context_calls.append((qualname, reference))
                    if reference.endswith(".replay") and not node.args:
                        record["replay"] = True
            elif kind is ast.ClassDef:
                # A class defined in a function: its own methods are not summarized, but what they call may run
                # (a factory's `class Builder(Base): def build(...)`, which the engine calls every step): a
                # function they call by a bare name (not their own parameters, locals or builtins) is named, so
                # the model does not take it for one nothing runs. Not `obj.name(...)`: a name on an object of
                # unknown class would count for every method of that name in the project.
                _name_nested_calls(node, named)
                continue
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                # Its decorators and defaults run where it is defined, its body when it is called.
                for child in (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults):
                    if child.__class__ is ast.Name:
                        named[child.id] = None
                    elif child is not None and child.__class__ is not ast.Constant:
                        stack.append((child, in_device_context, nested, occasional))
                stack.extend((child, in_device_context, node.name, occasional) for child in node.body)
                if pending is not None:
                    pending.inner_names.update(arg.arg for arg in parameters(node.args))
                continue
            elif kind is ast.Lambda:
                nested = nested or 1
                if pending is not None:
                    pending.inner_names.update(arg.arg for arg in parameters(node.args))
            elif kind is ast.comprehension and pending is not None:
                pending.inner_names.update(name.id for name in ast.walk(node.target) if name.__class__ is ast.Name)
            elif kind is ast.Import or kind is ast.ImportFrom:
                self._import(node)
                continue
            elif kind is ast.If and not occasional and (block := occasional_block(node, self._flags)):
                # Only that block runs once in a while; the test and the other block run every time.
                stack.append((node.test, in_device_context, nested, False))
                stack.extend((child, in_device_context, nested, node.body is block) for child in node.body)
                stack.extend((child, in_device_context, nested, node.orelse is block) for child in node.orelse)
                continue
            elif kind is ast.With or kind is ast.AsyncWith:
                if any(_is_device_context(item.context_expr) for item in node.items):
                    in_device_context = True
            elif (kind is ast.Assign or kind is ast.AnnAssign) and class_name and self_name:
                targets = node.targets if kind is ast.Assign else [node.target]
                if len(targets) == 1 and targets[0].__class__ is ast.Attribute and node.value is not None:
                    assigned_whole.add(id(targets[0]))
                    # (In a nested function, a parameter named alike is that function's: not followed.)
                    self._stored_attribute(targets[0], class_name, qualname, self_name,
                                           node.value if not nested else None)
                if any(target.__class__ is ast.Subscript and _is_name(target.value, self_name, "__dict__")
                       for target in targets):
                    self.classes[class_name]["dynamic"] = True  # `self.__dict__[key] = value`
                for target in targets:
                    if target.__class__ is ast.Attribute and target.value.__class__ is ast.Name \
                            and target.value.id == self_name:
                        annotation = node.annotation if kind is ast.AnnAssign else None
                        value = node.value
                        # `self.model = model` of a parameter `model: SupportsMultiModal`: the attribute's type
                        pending = self._pending
                        handed = params.get(value.id) if value.__class__ is ast.Name and not nested \
                            and pending is not None and value.id not in pending.assigned \
                            and value.id not in pending.rebound else None
                        self._attribute(class_name, target.attr, value, annotation, handed)
                        # `self._decode = self._decode_loop_labels`: a call of `self._decode(...)` runs the method
                        bound = [reference[2:] for reference in _named_functions(node.value, self_name)
                                 if reference.startswith("s:")] if node.value is not None else []
                        if bound:
                            methods = self.classes[class_name].setdefault("bound", {}).setdefault(target.attr, [])
                            methods.extend(method for method in bound if method not in methods)
            fields = _FIELDS.get(kind)
            if fields is None:
                fields = _FIELDS[kind] = tuple(name for name in kind._fields if name not in _NOT_CHILDREN)
            for name in fields:
                value = getattr(node, name)
                if value.__class__ is list:
                    for child in value:
                        if child is not None and child.__class__ not in _LEAVES:
                            stack.append((child, in_device_context, nested, occasional))
                        elif child.__class__ is ast.Name and child.ctx.__class__ is ast.Load:
                            named[child.id] = None
                elif value is not None and value.__class__ not in _LEAVES and isinstance(value, ast.AST):
                    stack.append((value, in_device_context, nested, occasional))
                elif value.__class__ is ast.Name and value.ctx.__class__ is ast.Load and id(value) not in called:
                    named[value.id] = None

    def _stored_attribute(self, target: ast.Attribute, class_name: str, qualname: str, self_name: str | None,
                          value: ast.expr | None) -> None:
        """Note a store into an attribute: into `self.x` (the class's `sets`, with the value stored when it is a
        literal or a parameter: settled with the function's other values), or into the attribute of any other
        object (`model.use_cache = False`: the file's `stored`, after which no class knows what `x` holds)."""
        receiver = target.value
        if receiver.__class__ is ast.Name and receiver.id == self_name and class_name and self._pending is not None:
            self._pending.stores.append((target.attr, value))
        else:
            self.stored[target.attr] = None

    def _class_set(self, class_name: str, attr: str, qualname: str, value: list) -> None:
        """Note that `qualname` ("" for the class body) sets `attr` of the class's objects to `value` (a literal, a
        parameter of `qualname`, or [] for one not told): the class's `sets`."""
        self.classes[class_name].setdefault("sets", {}).setdefault(attr, []).append([qualname, value])

    def _store_call(self, call: ast.Call, class_name: str, self_name: str | None) -> None:
        """A call that stores an attribute: `setattr(obj, "x", value)` (or `object.__setattr__(obj, "x", value)`,
        `self.__setattr__("x", value)`) stores as `obj.x = value` does; with a name it computes, or through
        `self.__dict__.update(...)` or `vars(self).update(...)`, it may store into any attribute of the class's
        objects (the class is `dynamic`). Other calls are left alone. So are stores by computed names into other
        objects (`setattr(args, key, value)`, `obj.__dict__.update(state)`): every large project has some, and
        reading them as "any attribute of any class" would leave no attribute known."""
        func, args = call.func, list(call.args)
        if func.__class__ is ast.Name:
            if func.id != "setattr":  # type: ignore[attr-defined]
                return
        elif func.__class__ is not ast.Attribute:
            return
        elif func.attr == "__setattr__":  # type: ignore[attr-defined]
            if _dotted(func) != "object.__setattr__":
                args = [func.value, *args]  # type: ignore[attr-defined]  # `self.__setattr__(name, value)`
        elif func.attr == "update" and _is_name(_holds_dict(func.value), self_name):  # type: ignore[attr-defined]
            args = [func.value]  # type: ignore[attr-defined]  # `self.__dict__.update(state)`: any attribute
        else:
            return
        holder = args[0] if args else None
        if holder.__class__ is ast.Call and _dotted(holder.func) == "super" \
                or _is_name(_holds_dict(holder), self_name):  # type: ignore[union-attr, arg-type]
            holder = ast.Name(id=self_name or "", ctx=ast.Load())  # `super().__setattr__(k, v)`, `self.__dict__`
        name = args[1] if len(args) > 1 else None
        if name.__class__ is ast.Constant and isinstance(name.value, str) and holder is not None:  # type: ignore
            target = ast.Attribute(value=holder, attr=name.value, ctx=ast.Store())  # type: ignore[union-attr]
            self._stored_attribute(target, class_name, "", self_name, args[2] if len(args) > 2 else None)
        elif _is_name(holder, self_name) and class_name:
            self.classes[class_name]["dynamic"] = True

    def _call_reference(self, call: ast.Call, params: dict, self_name: str | None) -> str | None:
        if self._constructs is not None and isinstance(call.func, ast.Name) and call.func.id == self._constructs[0]:
            return f"n:{self._constructs[1]}"  # `cls(...)` in a classmethod builds an object of the class
        return call_reference(call, params, self_name)


def call_reference(call: ast.Call, params: dict, self_name: str | None) -> str | None:
    """How a call is written, as the model resolves it (see the summary layout); None for a call of anything but a
    name or an attribute. `params`: the function's annotated parameters; `self_name`: its bound first parameter."""
    func = call.func
    if isinstance(func, ast.Name):
        return f"n:{func.id}"
    if not isinstance(func, ast.Attribute):
        return None
    receiver, method = func.value, func.attr
    if isinstance(receiver, ast.Name):
        if receiver.id == self_name:
            return f"s:{method}"
        if receiver.id in params:
            return f"p:{receiver.id}.{method}"
        return f"d:{receiver.id}.{method}"  # a module, a class, or an object: told apart when merged
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
        return f"u:{method}"
    if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name):
        if receiver.value.id == self_name:
            return f"sa:{receiver.attr}.{method}"
        dotted = _dotted(receiver)
        if dotted:
            return f"d:{dotted}.{method}"
    held = _self_attribute(receiver, self_name)  # (`self.x.m()` is written `sa:x.m` above)
    if held is not None:  # `self.tokenizer.encoder.encode(x)`: on the type of an attribute's attribute
        return f"rc:{held}@.{method}"
    dotted = dotted_name(receiver)  # `pkg.layers.Sub.method(x)`, `np.random.default_rng()`
    if dotted and dotted.partition(".")[0] != self_name:
        return f"d:{dotted}.{method}"
    return f"a:{method}"


def _self_attribute(expr: ast.expr, self_name: str | None) -> str | None:
    """`sa:x` for `self.x`, `sa:x.y` for `self.x.y` (see `_local_type`); None for any other expression."""
    if expr.__class__ is not ast.Attribute:
        return None
    inner = expr.value  # type: ignore[attr-defined]
    if inner.__class__ is ast.Name and inner.id == self_name:
        return f"sa:{expr.attr}"  # type: ignore[attr-defined]
    if inner.__class__ is ast.Attribute and inner.value.__class__ is ast.Name and inner.value.id == self_name:
        return f"sa:{inner.attr}.{expr.attr}"  # type: ignore[attr-defined]
    return None


# Calls of builtins pass nothing to a project function (a project that shadows `len` loses nothing worth the cost).
_BUILTIN_CALLS = frozenset(f"n:{name}" for name in dir(builtins))
# (An augmented assignment, `x += y`, keeps a tensor where it is: not noted.)
_NOTED = frozenset({ast.Return, ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor,
                    ast.With, ast.AsyncWith, ast.comprehension, ast.ExceptHandler, ast.MatchAs, ast.MatchStar,
                    ast.MatchMapping,
                    ast.AugAssign, ast.Nonlocal, ast.Global})  # the last three only rebind (`_Pending.rebound`)


# Expressions Python never evaluates to None (`_Pending.never_none`): displays, comprehensions, f-strings, lambdas,
# arithmetic and comparisons.
_NEVER_NONE = frozenset({ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp,
                         ast.GeneratorExp, ast.JoinedStr, ast.Lambda, ast.BinOp, ast.UnaryOp, ast.Compare})
# Builtins whose result is never None (not `min` or `max`, which return an element, nor `next` or `getattr`).
_VALUE_BUILTINS = frozenset({"list", "dict", "tuple", "set", "frozenset", "int", "float", "str", "bool", "bytes",
                             "len", "range", "sorted", "reversed", "zip", "enumerate", "map", "filter", "sum",
                             "abs", "round", "any", "all", "isinstance", "repr", "iter", "type", "divmod", "pow"})
# Methods of tensors (and arrays) that return a tensor or a value, by names other classes seldom define: not `to`,
# `cuda` or `cpu`, which a project's batch classes often define to move their fields in place.
_TENSOR_RESULTS = frozenset({"clone", "detach", "contiguous", "float", "half", "double", "bfloat16", "long", "int",
                             "view", "view_as", "reshape", "reshape_as", "flatten", "unsqueeze", "squeeze", "permute",
                             "transpose", "expand", "expand_as", "type_as", "masked_fill", "new_tensor", "new_zeros",
                             "new_ones", "new_empty", "new_full", "numpy", "tolist", "numel", "cumsum", "argmax"})
# The modules whose functions all return tensors (but those `_returns_a_value` leaves out by their names).
_TENSOR_MODULES = frozenset({"torch", "torch.nn.functional"})


def _tests_none(test: ast.expr) -> tuple[str, bool] | None:
    """(name, True) for a test that is true whenever the name is None (`x is None`, `not x`), (name, False) for
    one true only when it is not None (`x is not None`, `x`); None for any other test."""
    if test.__class__ is ast.Name:
        return test.id, False  # type: ignore[attr-defined]
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not and test.operand.__class__ is ast.Name:  # type: ignore
        return test.operand.id, True  # type: ignore[attr-defined]
    if test.__class__ is ast.Compare and len(test.ops) == 1 and test.left.__class__ is ast.Name \
            and test.ops[0].__class__ in (ast.Is, ast.IsNot) and is_none(test.comparators[0]):  # type: ignore
        return test.left.id, test.ops[0].__class__ is ast.Is  # type: ignore[attr-defined]
    return None


def _bound_names(statement: ast.stmt, imports: bool = True) -> Iterator[str]:
    """The names a statement of a module's or a class's body binds, in blocks of it (`if`, `try`) too: a `def`,
    a `class`, an import (unless not `imports`), an assignment's plain names; not those of the functions and classes
    it defines."""
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
            stack.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            yield node.id
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if imports:
                yield from (alias.asname or alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _picked_unless_none(expr: ast.IfExp) -> list[ast.expr] | None:
    """[d] for `x if x is not None else d`, `d if x is None else x` and `x if x else d`, where `x` is taken only when
    it is not None (so the value is never None where `d` is not); None for other conditional expressions."""
    tested = _tests_none(expr.test)
    if tested is None:
        return None
    name, when_none = tested
    kept, other = (expr.orelse, expr.body) if when_none else (expr.body, expr.orelse)
    return [other] if kept.__class__ is ast.Name and kept.id == name else None  # type: ignore[attr-defined]


def _narrowed_by(statement: ast.stmt, parameters: set[str]) -> list[str]:
    """The parameters that `statement`, run to its end, leaves not None when every binding of them in the function
    binds a value never None (`_Pending.narrowed_at` checks that): one it assigns (`x = x or []`), one it asserts
    (`assert x is not None`), one an `if` assigns or leaves for in the arm it may be None in (`if x is None: x = []`,
    `if x is None or not len(x): return`, `if x is not None: ... else: raise ...`)."""
    kind = statement.__class__
    if kind is ast.Assign or kind is ast.AnnAssign:
        targets = statement.targets if kind is ast.Assign else [statement.target]  # type: ignore[attr-defined]
        return [target.id for target in targets if target.__class__ is ast.Name and target.id in parameters
                and statement.value is not None]  # type: ignore[attr-defined]
    if kind is ast.Assert:  # (which `python -O` drops: read as the code is written)
        test = statement.test  # type: ignore[attr-defined]
        parts = test.values if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And else [test]
        return [tested[0] for part in parts if (tested := _tests_none(part)) and not tested[1]
                and tested[0] in parameters]
    if kind is not ast.If:
        return []
    test = statement.test  # type: ignore[attr-defined]
    narrowed = []
    if test.__class__ is ast.BoolOp and test.op.__class__ is ast.Or:  # `if x is None or ...:` runs its body
        cases = [(tested[0], statement.body) for part in test.values  # type: ignore[attr-defined]
                 if (tested := _tests_none(part)) and tested[1]]
    else:
        tested = _tests_none(test)
        cases = [(tested[0], statement.body if tested[1] else statement.orelse)] if tested else []  # type: ignore
    for name, arm in cases:
        if name in parameters and arm and (arm[-1].__class__ in (ast.Return, ast.Raise) or any(
                part.__class__ is ast.Assign and any(target.__class__ is ast.Name and target.id == name
                                                     for target in part.targets) for part in arm)):  # type: ignore
            narrowed.append(name)
    return narrowed


_LOOP_STATEMENTS = (ast.For, ast.AsyncFor, ast.While)


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The sequences of statements a compound statement holds (none for a simple one, nor for a `def` or a class,
    whose bodies are scopes of their own)."""
    found = [getattr(statement, field, None) or [] for field in ("body", "orelse", "finalbody")] \
        if statement.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) else []
    found += [handler.body for handler in getattr(statement, "handlers", ())]
    found += [case.body for case in getattr(statement, "cases", ())]
    return found


def _headers(statement: ast.stmt) -> list[ast.AST]:
    """The parts of a compound statement that are not its sequences of statements: a test, a loop's target and
    iterable, a `with`'s items, a handler's name, a `match`'s subject and patterns."""
    parts: list[ast.AST] = [value for field, value in ast.iter_fields(statement)
                            if field not in ("body", "orelse", "finalbody", "handlers", "cases")
                            and isinstance(value, ast.AST)]
    parts += [item for item in getattr(statement, "items", ())]
    parts += [ast.Name(id=handler.name, ctx=ast.Store()) for handler in getattr(statement, "handlers", ())
              if handler.name]
    parts += [case.pattern for case in getattr(statement, "cases", ())]
    return parts


def _holds(first: ast.stmt, at: tuple[int, int], last: ast.stmt | None = None) -> bool:
    """Whether the statements from `first` to `last` (or `first` alone) hold the position `at` (line, column)."""
    last = last or first
    return (first.lineno, first.col_offset) <= at \
        <= (last.end_lineno or last.lineno, last.end_col_offset or 1 << 30)


def _names_bound_by(node: ast.AST) -> list[str]:
    """The names a binding node of `_NOTED` (not a `return`) binds: the targets of an assignment, a loop or a
    comprehension, a `with`'s `as` names, a handler's or a pattern's name."""
    if isinstance(node, (ast.MatchAs, ast.MatchStar, ast.ExceptHandler)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    targets = node.targets if isinstance(node, ast.Assign) else \
        [item.optional_vars for item in node.items if item.optional_vars is not None] \
        if isinstance(node, (ast.With, ast.AsyncWith)) else [getattr(node, "target", None)]
    return [inner.id for target in targets if target is not None for inner in ast.walk(target)
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store)]


def _may_bind(node: ast.AST, name: str) -> bool:
    """Whether running `node` may bind `name` in the function's scope to another value (nested functions and
    classes bind only their own name there; `x += y` updates what `x` holds, which stays where it was)."""
    stack = [node]
    while stack:
        current = stack.pop()
        kind = current.__class__
        if kind is ast.AugAssign and current.target.__class__ is ast.Name:  # type: ignore[attr-defined]
            stack.append(current.value)  # type: ignore[attr-defined]
            continue
        if kind is ast.Name:
            if current.id == name and current.ctx.__class__ is not ast.Load:  # type: ignore[attr-defined]
                return True
            continue
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            if current.name == name:  # type: ignore[attr-defined]
                return True
            stack.extend(current.decorator_list)  # type: ignore[attr-defined]
            continue
        if kind is ast.Lambda:
            continue
        if kind in (ast.Import, ast.ImportFrom):
            if any((alias.asname or alias.name.partition(".")[0]) == name
                   for alias in current.names):  # type: ignore[attr-defined]
                return True
            continue
        if kind in (ast.Global, ast.Nonlocal) and name in current.names:  # type: ignore[attr-defined]
            return True
        if kind in (ast.ExceptHandler, ast.MatchAs, ast.MatchStar) and getattr(current, "name", None) == name \
                or kind is ast.MatchMapping and current.rest == name:  # type: ignore[attr-defined]
            return True
        stack.extend(ast.iter_child_nodes(current))
    return False


class _Pending:
    """What the scan of one function collects for `_Values`: its returns, its local assignments, its calls with
    arguments, and the values it assigns to attributes of `self`."""

    def __init__(self, class_name: str, parameters: set[str], body: list[ast.stmt] | None = None,
                 imports: dict[str, str] | None = None, module_names: frozenset[str] = frozenset()) -> None:
        self.class_name = class_name
        self.parameters = parameters
        self.body = body or []
        self.imports = imports or {}
        self.module_names = module_names
        # Each parameter no longer None after a statement of the function's own sequence (`if x is None: x = []`,
        # `x = x or {}`, `assert x is not None`): the last line of that statement. Made when first asked.
        self._narrowed: dict[str, int] | None = None
        self.returns: list[ast.expr] = []
        self.assigned: dict[str, list[ast.expr | None]] = {}  # None: bound in a way values do not follow
        self.calls: list[tuple[int, ast.Call]] = []
        self.attributes: list[tuple[str, ast.expr]] = []
        self.stores: list[tuple[str, ast.expr | None]] = []  # every `self.x = value` (None: a value not told)
        # Names rebound where values do not follow (`step += 1`, `nonlocal flag` in a nested function): a parameter
        # rebound so is not what the callers passed.
        self.rebound: set[str] = set()
        self.named: dict[str, None] = {}  # the bare names it uses as values, not to call them (`fn = _impl`)
        # The assignments of the function's nested functions too: what object a local holds (its class) does not
        # depend on the call, so a helper defined inside the function types its locals alike.
        self.typed: dict[str, list[ast.expr | None]] = {}
        self.chained: list[tuple[int, ast.Call]] = []  # `a().b(...)`, with its index among the function's calls
        # The calls made in a nested `def`, with its index among the function's calls and the def's name.
        self.nested_calls: list[tuple[int, str]] = []
        # Names bound in a scope of their own inside the function: the parameters of its nested functions and
        # lambdas, the targets of its comprehensions. A call on such a name is not a call on a parameter of its.
        self.inner_names: set[str] = set()
        self.read_on: dict[str, None] = {}  # the names it reads an attribute of (`meta.logits_indices`), in order
        self.stored_on: set[tuple[str, str]] = set()  # (name, attr) of its stores `name.attr = ...`
        self.shared: set[str] = set()  # names declared `nonlocal` or `global`: other code may bind them any time

    def never_rebound(self, name: str) -> bool:
        """Whether the parameter `name` holds what the call passed wherever the function reads it: never assigned
        nor otherwise rebound, and no nested function's parameter nor comprehension's target of that name."""
        return name not in self.assigned and name not in self.rebound and name not in self.inner_names

    def note_for_types(self, node) -> None:
        """Note a binding in a nested function or lambda: only what it tells of the class of the objects a name
        holds (a value assigned, or None for a loop's target, a handler's name, a parameter of a pattern...)."""
        if node.__class__ is ast.Assign and len(node.targets) == 1 and node.targets[0].__class__ is ast.Name:
            self.typed.setdefault(node.targets[0].id, []).append(node.value)
            return
        self._note_rebound(node)
        if node.__class__ in (ast.Return, ast.AugAssign, ast.Nonlocal, ast.Global):
            return
        for bound in _names_bound_by(node):
            self.typed.setdefault(bound, []).append(None)

    def _note_rebound(self, node) -> None:
        kind = node.__class__
        if kind is ast.AugAssign and node.target.__class__ is ast.Name:
            self.rebound.add(node.target.id)
        elif kind is ast.Nonlocal or kind is ast.Global:
            self.rebound.update(node.names)
            self.shared.update(node.names)

    def note(self, node) -> None:
        kind = node.__class__
        if kind is ast.Return:
            if node.value is not None and not (node.value.__class__ is ast.Constant and node.value.value is None):
                self.returns.append(node.value)
        elif kind is ast.Assign:
            for target in node.targets:
                self._bind(target, node.value if len(node.targets) == 1 else None)
        elif kind is ast.AnnAssign:
            if node.value is not None:
                self._bind(node.target, node.value)
        elif kind is ast.NamedExpr:
            self._bind(node.target, node.value)
        elif kind is ast.For or kind is ast.AsyncFor or kind is ast.comprehension:
            self._bind(node.target, None)
        elif kind is ast.With or kind is ast.AsyncWith:
            for item in node.items:
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, None)
        elif kind is ast.ExceptHandler and node.name:
            self._bind(ast.Name(id=node.name), None)
        elif (kind is ast.MatchAs or kind is ast.MatchStar) and node.name:
            self._bind(ast.Name(id=node.name), None)  # `case x:` binds `x`
        elif kind is ast.MatchMapping and node.rest:
            self._bind(ast.Name(id=node.rest), None)
        else:
            self._note_rebound(node)

    def never_none(self, expr: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """Whether `expr` is certainly not None where it is written: a literal other than None, a display, a
        comprehension, arithmetic, a call `_returns_a_value` knows returns one, `x if x is not None else []`,
        `x or []`, or a local every binding of which is such a value (a parameter only after a statement of the
        function's sequence has made it so: `narrowed_at`)."""
        cls = expr.__class__
        if cls is ast.Constant:
            return expr.value is not None  # type: ignore[attr-defined]
        if cls in _NEVER_NONE:
            return True
        if cls is ast.NamedExpr:
            return self.never_none(expr.value, seen)  # type: ignore[attr-defined]
        if cls is ast.BoolOp:  # `x or []`: a truthy operand (never None) or the last one
            return expr.op.__class__ is ast.Or and self.never_none(expr.values[-1], seen)  # type: ignore
        if cls is ast.IfExp:
            picked = _picked_unless_none(expr)  # type: ignore[arg-type]
            return all(self.never_none(arm, seen) for arm in (picked or [expr.body, expr.orelse]))  # type: ignore
        if cls is ast.Call:
            return self._returns_a_value(expr)  # type: ignore[arg-type]
        if cls is not ast.Name:
            return False
        name = expr.id  # type: ignore[attr-defined]
        if name in seen or name in self.rebound:
            return False
        values = self.assigned.get(name)
        if name in self.parameters:
            if not self.narrowed_at(name, expr.lineno):
                return False
        elif not values:
            return False  # a global or a module's name: not the function's to tell
        return all(value is not None and self.never_none(value, seen | {name}) for value in values or ())

    def _returns_a_value(self, call: ast.Call) -> bool:
        """A call of a builtin that returns a value, of one of torch's tensor functions (`torch.arange`,
        `F.pad`), or of a method only tensors and arrays have that returns one (`.clone()`, `.new_zeros()`)."""
        func = call.func
        if func.__class__ is ast.Name:
            name = func.id  # type: ignore[attr-defined]
            return name in _VALUE_BUILTINS and not self._bound_here(name) and name not in self.module_names \
                and name not in self.imports
        if func.__class__ is not ast.Attribute:
            return False
        if func.attr in _TENSOR_RESULTS:  # type: ignore[attr-defined]
            return True
        written = _dotted(func)
        root = (written or "").partition(".")[0]
        if not root or self._bound_here(root):
            return False
        module, _, function = (qualified_name(written, self.imports) or "").rpartition(".")
        # Not torch's other functions: `torch.cuda.synchronize()`, `torch.jit.annotate(Optional[T], None)`,
        # `torch.distributed.all_reduce(...)`, `torch.save(...)`, `torch.manual_seed(...)` may give None.
        return module in _TENSOR_MODULES and not function.startswith(("_", "set_", "use_", "save", "load", "manual"))

    def _bound_here(self, name: str) -> bool:
        return name in self.assigned or name in self.parameters or name in self.rebound

    # What `dtypes.integer_tensor` reads of the function (`dtypes.Reader`), with no flow: every binding counts.
    def qualify(self, dotted: str | None) -> str | None:
        return qualified_name(dotted, self.imports)

    def bindings(self, name: str, at) -> list[tuple[ast.expr | None, None]] | None:
        if name in self.parameters or name in self.rebound or name not in self.assigned:
            return None  # a parameter passed on is ["p", name], which the model follows
        return [(value, None) for value in self.assigned[name]]

    def is_int(self, expr: ast.expr, at) -> bool:
        return expr.__class__ is ast.Constant and type(expr.value) is int  # type: ignore[attr-defined]

    def is_device(self, expr: ast.expr, at, seen: frozenset[str] = frozenset()) -> bool:
        if expr.__class__ is ast.Name:
            name = expr.id  # type: ignore[attr-defined]
            values = self.bindings(name, at) if name not in seen else None
            return bool(values) and all(value is not None and self.is_device(value, at, seen | {name})
                                        for value, _ in values)  # type: ignore[union-attr]
        return bool(_device_kind(expr))

    def narrowed_at(self, name: str, line: int) -> bool:
        """Whether the parameter `name` is certainly not None at `line`: a statement of the function's own
        sequence (its body, and the bodies of `with` statements in it) before `line` made it so, and every
        binding of it in the function binds a value that is never None."""
        if self._narrowed is None:
            self._narrowed = {}  # (asked again while it is made: only statements before the one read count)
            self._note_narrowing(self.body)
        end = self._narrowed.get(name)
        return end is not None and end < line

    def _note_narrowing(self, body: list[ast.stmt]) -> None:
        assert self._narrowed is not None
        for statement in body:
            for name in _narrowed_by(statement, self.parameters):
                if name not in self._narrowed and self._binds_values_only(name):
                    self._narrowed[name] = statement.end_lineno or statement.lineno
            if (statement.__class__ is ast.With or statement.__class__ is ast.AsyncWith) and not any(
                    (_dotted(item.context_expr.func if item.context_expr.__class__ is ast.Call else item.context_expr)
                     or "").endswith("suppress") for item in statement.items):  # type: ignore[attr-defined]
                self._note_narrowing(statement.body)  # type: ignore[attr-defined]

    def _binds_values_only(self, name: str) -> bool:
        """Whether every binding of `name` in the function binds a value never None."""
        return name not in self.rebound and all(value is not None and self.never_none(value, frozenset({name}))
                                                for value in self.assigned.get(name, ()))

    def reaching_value(self, read: ast.Name) -> ast.expr | None:
        """The value of the one assignment `name = value` that certainly reaches `read` (of `name`) in the
        function's own code: the nearest before it in the same sequence of statements, or in the sequences around
        it, with nothing between that may bind `name`. What `idx = torch.from_numpy(idx).to(device)` makes of `idx =
        np.repeat(...)` is the second value after it, not a disagreement. None where no single one does (then
        every assignment counts, as `_Values._name` takes them): a name a nested scope binds too (a comprehension's
        target, a nested function's parameter) or rebinds (`nonlocal`), a loop around both that binds it again, a read in a part of a `try` other than its body where another part binds it, a `for` target, a `with
        ... as`."""
        name, at = read.id, (read.lineno, read.col_offset)
        if name in self.inner_names or name in self.shared:
            return None
        block, found = self.body, None
        while block:
            index = next((index for index, statement in enumerate(block) if _holds(statement, at)), None)
            if index is None:
                return found
            statement = block[index]
            if statement.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) \
                    or statement.__class__ in _LOOP_STATEMENTS and _may_bind(statement, name):
                return None  # a read in a nested scope, or one a later iteration's assignment may reach
            before = next((earlier for earlier in reversed(block[:index]) if _may_bind(earlier, name)), None)
            if before is not None:  # (else what an outer sequence found holds: nothing nearer binds the name)
                found = before.value if before.__class__ is ast.Assign and len(before.targets) == 1 \
                    and before.targets[0].__class__ is ast.Name \
                    and before.targets[0].id == name else None  # type: ignore[attr-defined]
            inner = next((inner for inner in _blocks(statement)
                          if inner and _holds(inner[0], at, inner[-1])), None)
            if inner is None:
                return found
            if statement.__class__.__name__ in ("Try", "TryStar") and inner is not statement.body \
                    and any(_may_bind(part, name) for other in _blocks(statement) if other is not inner
                            for part in other):
                return None  # a handler, `else` or `finally`: the other parts may have bound it, or part way
            if any(_may_bind(part, name) for part in _headers(statement)):
                return None  # `for name in ...`, `with ... as name`, `except E as name`, a walrus in a test
            block = inner
        return found

    def _bind(self, target: ast.expr, value: ast.expr | None, typed: bool = True) -> None:
        """Note that `target` is bound to `value` (None: a value not followed); `typed`: whether `value` tells the
        class of the object (`_local_type`), which an element of a call's result does not."""
        if target.__class__ is ast.Name:
            self.assigned.setdefault(target.id, []).append(value)
            self.typed.setdefault(target.id, []).append(value if typed else None)
        elif target.__class__ in (ast.Tuple, ast.List):
            elements = target.elts  # type: ignore[attr-defined]
            # `indices, meta = self._prepare(...)`: each name holds an element of what the call returns.
            unpacked = value is not None and value.__class__ is ast.Call \
                and not any(element.__class__ is ast.Starred for element in elements)
            for index, element in enumerate(elements):
                item = ast.copy_location(ast.Subscript(value=value, slice=ast.Constant(index), ctx=ast.Load()),
                                         value) if unpacked else None
                self._bind(element.value if element.__class__ is ast.Starred else element, item, typed=False)


class _Values:
    """Values (see the summary layout) of a function's expressions: from its parameters, its own assignments
    (a name's value when every assignment to it gives the same), the attributes of `self` and the calls it makes.
    Context free: a parameter's value is whatever every caller passes (resolved by the model)."""

    def __init__(self, parameters: set[str], assigned: dict[str, list[ast.expr | None]], self_name: str | None,
                 reference_of, imports: dict[str, str], annotations: dict[str, str],
                 local_type=lambda name: None, reaching=lambda read: None,
                 stored_on: set[tuple[str, str]] | frozenset = frozenset(),
                 shared: set[str] | frozenset = frozenset()) -> None:
        self.parameters = parameters
        self.local_type = local_type  # how to find the class of the object a local holds (`_local_type`)
        self.reaching = reaching  # the one assignment that reaches a read, if there is one (`_Pending.reaching_value`)
        self.stored_on = stored_on  # (local, attr) the function stores into: `local.attr` is then its own to tell
        self.shared = shared  # names a `nonlocal` or `global` shares with other code
        self.annotations = annotations
        self.assigned = assigned
        self.self_name = self_name
        self.reference_of = reference_of
        self.imports = imports
        self._names: dict[str, list] = {}

    def of(self, expr: ast.expr | None, depth: int = 0) -> list:
        if expr is None or depth > 5:
            return []
        cls = expr.__class__
        if cls is ast.Call or cls is ast.Constant or cls is ast.JoinedStr:  # the only kinds written out
            placement, why = value_placement(expr)
            if placement:
                return ["k", placement, why]
            kind = _device_kind(expr)
            if kind:
                return ["d", ["k", kind, f"the device `{_describe(expr)}`"]]
        if cls is ast.Name:
            name = expr.id
            if len(self.assigned.get(name, ())) > 1 or name in self.assigned and name in self.parameters:
                # Rebound (`idx = np.repeat(...)`, then `idx = torch.from_numpy(idx).to(device)`): what this read
                # sees, where one assignment certainly reaches it.
                reaching = self.reaching(expr)
                if reaching is not None:
                    return self.of(reaching, depth + 1)
            return self._name(name, depth)
        if cls is ast.Attribute:
            base = expr.value
            if (expr.attr == "device" or expr.attr in SAME_DEVICE_ATTRIBUTES) \
                    and not (base.__class__ is ast.Name and (base.id == self.self_name or base.id in self.annotations
                                                             and "Tensor" not in self.annotations[base.id])):
                inner = self.of(base, depth + 1)  # a tensor's device, or a view of it: where the tensor is
                return ["d", inner] if inner and expr.attr == "device" else inner
            if base.__class__ is ast.Name:
                if base.id == self.self_name:
                    return ["a", expr.attr]
                if base.id in self.parameters and base.id not in self.assigned:
                    return ["pa", base.id, expr.attr]
                if base.id in self.assigned and (base.id, expr.attr) not in self.stored_on \
                        and (typed := self.local_type(base.id)):
                    return ["ta", typed, expr.attr]  # (not what the function itself stores into it)
            elif base.__class__ is ast.Attribute and base.value.__class__ is ast.Name \
                    and base.value.id == self.self_name:
                return ["sa", base.attr, expr.attr]
            return []
        if cls is ast.Subscript:
            if expr.value.__class__ is ast.Call and expr.slice.__class__ is ast.Constant \
                    and expr.slice.value.__class__ is int:  # `f(x)[0]`, or `a, b = f(x)` (see `_Pending._bind`)
                inner = self.of(expr.value, depth + 1)
                return ["e", expr.slice.value, inner] if inner else []
            return self.of(expr.value, depth + 1)
        if cls is ast.BinOp:
            return _either(self.of(expr.left, depth + 1), self.of(expr.right, depth + 1))
        if cls is ast.UnaryOp and expr.op.__class__ is not ast.Not:
            return self.of(expr.operand, depth + 1)
        if cls is ast.IfExp:
            body, orelse = self.of(expr.body, depth + 1), self.of(expr.orelse, depth + 1)
            return ["both", body, orelse] if body and orelse else []
        if cls is ast.Call:
            return self._call(expr, depth)
        return []

    def returned(self, expr: ast.expr) -> list:
        """The value of what a `return` returns: a tuple written out (`return indices, meta`) is kept element by
        element, for the callers that unpack it (`["e", index, value]`)."""
        if expr.__class__ is ast.Tuple and not any(element.__class__ is ast.Starred
                                                    for element in expr.elts):  # type: ignore[attr-defined]
            elements = [self.of(element) for element in expr.elts]  # type: ignore[attr-defined]
            return ["tuple", *elements] if any(elements) else []
        return self.of(expr)

    def _name(self, name: str, depth: int) -> list:
        if name in self.shared:
            return []  # a nested function's `nonlocal name` rebinds it where no assignment of the function shows
        if name not in self.assigned:
            return ["p", name] if name in self.parameters else []
        if name in self._names:
            return self._names[name]
        self._names[name] = []  # while it is worked out: a name defined through itself is unknown
        found = [self.of(value, depth + 1) if value is not None else [] for value in self.assigned[name]]
        if name in self.parameters:
            found.append(["p", name])
        # Bound to values each known (`x = meta.x` in one branch, `x = self.buf[1:]` in the other): one or another,
        # placed where they all agree (`ProjectModel._value`).
        distinct = [value for index, value in enumerate(found) if value not in found[:index]]
        value = [] if not all(distinct) else distinct[0] if len(distinct) == 1 else ["both", *distinct]
        self._names[name] = value
        return value

    def _call(self, call: ast.Call, depth: int) -> list:
        func = call.func
        device = next((kw.value for kw in call.keywords if kw.arg == "device"), None)
        dotted = _dotted(func) or ""
        head, _, rest = dotted.partition(".")
        qualified = f"{self.imports.get(head, head)}.{rest}" if rest else self.imports.get(head, head)
        if func.__class__ is ast.Attribute:
            method, receiver = func.attr, func.value
            if method == "format" and receiver.__class__ is ast.Constant and str(receiver.value).startswith("cuda"):
                return ["d", ["k", GPU, f"the device `{receiver.value!r}.format(...)`"]]
            if method == "to":
                target = device if device is not None else call.args[0] if call.args else None
                if target is None or (_dotted(target) or "").rpartition(".")[2] in TORCH_DTYPES:
                    return self.of(receiver, depth + 1)
                return _on(self.of(target, depth + 1))  # a device, or a tensor whose device it takes
            if method in NEW_TENSOR_METHODS:
                return _on(self.of(device, depth + 1)) if device is not None else self.of(receiver, depth + 1)
        if qualified == "torch.device":
            inner = self.of(call.args[0], depth + 1) if call.args else []
            return ["d", inner] if inner else []
        if qualified.startswith("torch."):
            name = qualified.rpartition(".")[2]
            if name in NON_TENSOR_TORCH_FUNCTIONS:
                return []
            if name in _TORCH_FACTORIES:
                if device is not None:
                    return _on(self.of(device, depth + 1))
                return self.of(call.args[0], depth + 1) if name.endswith("_like") and call.args else []
            if qualified in JOINING_FUNCTIONS:
                tensors = call.args[0] if call.args else None
                elements = tensors.elts if isinstance(tensors, (ast.List, ast.Tuple)) else []
                return _either(*(self.of(element, depth + 1) for element in elements[:3])) if elements else []
            return _either(*(self.of(argument, depth + 1) for argument in call.args[:3]
                             if argument.__class__ is not ast.Starred))
        if func.__class__ is ast.Attribute:
            if func.attr in NON_TENSOR_METHODS:
                return []
            receiver = func.value
            if not (receiver.__class__ is ast.Name and receiver.id == self.self_name):
                # A method of a value the function has: a project method's result, else a tensor method's, on the
                # receiver's device (`logits.view(-1)`).
                inner = self.of(receiver, depth + 1)
                reference = self.reference_of(call)
                if inner:
                    return ["m", reference, inner] if reference else inner
        reference = self.reference_of(call)
        return ["c", reference] if reference else []


def _named_functions(expr: ast.expr, self_name: str | None) -> list[str]:
    """The call references of the functions `expr` may be without calling one: `_impl` ("n:_impl"), `self.impl`
    ("s:impl"), either branch of `a if fast else b`."""
    cls = expr.__class__
    if cls is ast.Name:
        return [f"n:{expr.id}"]
    if cls is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == self_name:
        return [f"s:{expr.attr}"]
    if cls is ast.IfExp:
        return [*_named_functions(expr.body, self_name), *_named_functions(expr.orelse, self_name)]
    return []


def _holds_dict(expr: ast.expr) -> ast.expr | None:
    """`obj` for `obj.__dict__` or `vars(obj)`: the object whose attributes the dict holds; None otherwise."""
    if expr.__class__ is ast.Attribute and expr.attr == "__dict__":  # type: ignore[attr-defined]
        return expr.value  # type: ignore[attr-defined]
    if expr.__class__ is ast.Call and _dotted(expr.func) == "vars" and len(expr.args) == 1:  # type: ignore
        return expr.args[0]  # type: ignore[attr-defined]
    return None


def _is_name(expr: ast.AST | None, name: str | None, attr: str | None = None) -> bool:
    """Whether `expr` is the bare name `name` (`self`), or, with `attr`, the attribute `name.attr`."""
    if name is None or expr is None:
        return False
    if attr is not None:
        return expr.__class__ is ast.Attribute and expr.attr == attr \
            and _is_name(expr.value, name)  # type: ignore[attr-defined]
    return expr.__class__ is ast.Name and expr.id == name  # type: ignore[attr-defined]


def _call_arguments(call: ast.Call, value_of: Callable[[ast.expr], list]) -> tuple[list, dict]:
    """What `call` passes, each argument as `value_of` tells it: [value of each positional argument] up to a
    `*args`, and {keyword: value}, with "*" when `*args` or `**kwargs` may pass more."""
    positional = []
    for argument in call.args:
        if isinstance(argument, ast.Starred):
            break  # the arguments after it land on parameters no one can tell
        positional.append(value_of(argument))
    keywords = {kw.arg: value_of(kw.value) for kw in call.keywords if kw.arg is not None}
    if len(positional) < len(call.args) or any(kw.arg is None for kw in call.keywords):
        keywords["*"] = []  # `*args` or `**kwargs`: no parameter is certainly left out
    return positional, keywords


def _literal(expr: ast.expr | None) -> list:
    """["l", value] for a literal a branch may test (a string, a number, True, False, None, `-1`); [] otherwise."""
    if expr.__class__ is ast.UnaryOp and expr.op.__class__ is ast.USub:  # type: ignore[union-attr]
        inner = _literal(expr.operand)  # type: ignore[union-attr]
        return ["l", -inner[1]] if inner and isinstance(inner[1], (int, float)) \
            and not isinstance(inner[1], bool) else []
    if expr.__class__ is not ast.Constant:
        return []
    value = expr.value  # type: ignore[union-attr]
    if value is None or isinstance(value, (bool, int, str)) or isinstance(value, float) and math.isfinite(value):
        return ["l", value]
    return []


def _literal_or_parameter(expr: ast.expr, pending: _Pending) -> list:
    """What a call passes or an attribute is assigned, as far as the values a branch tests follow it: a literal
    (`_literal`), ["p", name] for a parameter of the function the function does not rebind, ["h"] for Python data
    that is no tensor (a list or tuple display, a comprehension, `.tolist()`); [] otherwise."""
    cls = expr.__class__
    if cls is ast.Name and expr.id in pending.parameters \
            and expr.id not in pending.assigned and expr.id not in pending.rebound:  # type: ignore[attr-defined]
        # (`if x is None: raise ...` before: of what the callers pass, all but None reaches here.)
        narrowed = pending.narrowed_at(expr.id, expr.lineno)  # type: ignore[attr-defined]
        return ["p", expr.id, "not None"] if narrowed else ["p", expr.id]  # type: ignore[attr-defined]
    if cls is ast.List or cls is ast.ListComp or cls is ast.Tuple and expr.elts \
            or cls is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr == "tolist":  # type: ignore
        return ["h"]
    if integer_tensor(expr, pending):
        return ["i"]
    return _literal(expr) or (["n"] if pending.never_none(expr) else [])


def _plain_decorator(decorator: ast.expr) -> bool:
    """A decorator after which the function still runs only where a call written with its name runs it (a static
    method, `torch.no_grad()`, `functools.cache`); not a property, nor one that registers it (`@register_model`)."""
    written = dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
    return written.rpartition(".")[2] in _PLAIN_DECORATORS


_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "abstractmethod", "override", "wraps", "cache",
                               "lru_cache", "no_grad", "inference_mode", "enable_grad", "compile", "script",
                               "contextmanager", "asynccontextmanager", "deprecated", "nvtx_range", "annotate",
                               "typechecked", "beartype", "jaxtyped"})  # runtime type checks wrap the function


# Bases of other libraries whose code calls no method of a subclass besides special methods and those the model
# treats already (`forward` of an `nn.Module`, `__getitem__` of a `Dataset`).
_PLAIN_BASES = frozenset({"object", "ABC", "Generic", "Protocol", "Module", "Enum", "IntEnum", "NamedTuple",
                          "TypedDict", "Exception", "ValueError", "RuntimeError", "dict", "list", "tuple", "str",
                          "int", "Dataset", "IterableDataset", "Function", "Sequential", "ModuleList", "ModuleDict"})


def _on(device: list) -> list:
    """A tensor made on, or moved to, `device` (a device, or a tensor whose device it is)."""
    return ["t", device] if device else []


def _either(*values: list) -> list:
    """The value of an operation on several values: the one known value, or ["or", ...] of those known."""
    known = []
    for value in values:
        if value and value not in known:
            known.append(value)
    if not known:
        return []
    if len(known) == 1:
        return known[0]
    return ["or", *known]


_COUNT_WORDS = frozenset({"num", "count", "size", "dim", "heads", "flag", "enabled"})
_SCALAR_TYPES = frozenset({"int", "float", "bool", "str", "list", "dict", "set", "tuple", "List", "Dict", "Set",
                           "Tuple", "Optional.int", "typing.List", "typing.Dict"})


def _not_a_tensor(value: ast.expr | None, annotation: ast.expr | None) -> bool:
    """A value or annotation that is no tensor (see `syntax.certainly_no_tensor`), or a comparison or an `and`/`or`,
    which an attribute assigned one holds as a flag."""
    if annotation is not None and (_dotted(annotation) or "") in _SCALAR_TYPES:
        return True
    return value is not None and (certainly_no_tensor(value) or isinstance(value, (ast.Compare, ast.BoolOp)))


def value_placement(value: ast.expr) -> tuple[str, str]:
    """Where a value assigned to an attribute lives, when its expression says so: (GPU or HOST, why), or ("", "")."""
    if not isinstance(value, ast.Call):
        return "", ""
    func = value.func
    device = next((kw.value for kw in value.keywords if kw.arg == "device"), None)
    if isinstance(func, ast.Attribute):
        if func.attr == "cuda":
            return GPU, "made with `.cuda()`"
        if func.attr in _HOST_METHODS:
            return HOST, f"made with `.{func.attr}()`"
        if func.attr == "to":
            target = value.args[0] if value.args else device
            kind = _device_kind(target)
            if kind:
                return kind, f"moved with `.to({_describe(target)})`"
            if any(kw.arg == "non_blocking" and _true(kw.value) for kw in value.keywords) and target is not None:
                return GPU, f"moved with `.to({_describe(target)}, non_blocking=True)`"
            return "", ""
    name = (_dotted(func) or "").rpartition(".")[2]
    if name in _TORCH_FACTORIES and device is not None:
        kind = _device_kind(device)
        if kind:
            return kind, f"made with `{name}(..., device={_describe(device)})`"
    return "", ""


def _device_kind(expr: ast.expr | None) -> str:
    """GPU or HOST for a device written out (`"cuda:0"`, `torch.device("cpu")`, `torch.cuda.current_device()`),
    "" for any other expression."""
    if isinstance(expr, ast.Call):
        dotted = _dotted(expr.func) or ""
        if dotted.endswith("current_device") and "cuda" in dotted:
            return GPU
        if dotted.endswith("device") and expr.args:
            return _device_kind(expr.args[0])
        return ""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        kind = expr.value.split(":")[0]
        return GPU if kind == "cuda" else HOST if kind == "cpu" else ""
    if isinstance(expr, ast.JoinedStr) and expr.values and isinstance(expr.values[0], ast.Constant) \
            and str(expr.values[0].value).startswith("cuda"):
        return GPU
    return ""


def _describe(expr: ast.expr | None) -> str:
    if expr is None:
        return ""
    if isinstance(expr, ast.Constant):
        return repr(expr.value)
    written = _dotted(expr) or ast.unparse(expr)
    return written if len(written) <= 40 else written[:37] + "..."


def _dataclass_options(decorator: ast.expr) -> dict[str, bool] | None:
    """For a dataclass decorator (`@dataclass`, `@dataclasses.dataclass(frozen=True)`), the options written as
    constants (`init`, `kw_only`); None for another decorator."""
    called = decorator.func if isinstance(decorator, ast.Call) else decorator
    if (_dotted(called) or "").rpartition(".")[2] != "dataclass":
        return None
    keywords = decorator.keywords if isinstance(decorator, ast.Call) else []
    return {keyword.arg: bool(keyword.value.value) for keyword in keywords
            if keyword.arg in ("init", "kw_only") and isinstance(keyword.value, ast.Constant)}


def _false(expr: ast.expr | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is False


def _true(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def _is_device_context(expr: ast.expr) -> bool:
    """`torch.device(...)` used as a context manager, on a device that may be an accelerator: factories inside
    allocate on it by default."""
    return isinstance(expr, ast.Call) and (_dotted(expr.func) or "").endswith("device") \
        and (_dotted(expr.func) or "").split(".")[0] in ("torch", "device") \
        and not (expr.args and _device_kind(expr.args[0]) == HOST)


def _local_type(name: str, pending: _Pending, self_name: str | None, depth: int = 0) -> str | None:
    """How to find the class of the object a local name holds, for the model to resolve (`ProjectModel._class_of`),
    when every assignment to it agrees: `sa:attr` (the type of `self.attr`, or of its elements; `sa:attr.attr` of
    `self.attr.attr`), `p:param` (an annotated parameter), `c:Name` (a class made, or a function whose result is
    annotated), `r:method:<how>` (the annotated result of `method` called on an object found so). None when
    unknown. An assignment of `None` (`meta = None` in the branch that needs none) does not count: where an
    attribute is read or a method called, the name holds an object."""
    values = pending.typed.get(name)
    if not values or depth > 3:
        return None
    found = {_type_of(value, pending, self_name, depth) if value is not None else None for value in values
             if value is None or not is_none(value)}
    return found.pop() if len(found) == 1 else None


def _type_of(expr: ast.expr, pending: _Pending, self_name: str | None, depth: int) -> str | None:
    if depth > 3:  # as deep as `ProjectModel._class_of` follows
        return None
    while isinstance(expr, ast.Subscript):  # an element of a typed container (`list[Group]` records `Group`)
        expr = expr.value
    if isinstance(expr, ast.Attribute):
        return _self_attribute(expr, self_name)
    if isinstance(expr, ast.Name):
        if expr.id in pending.typed:
            return _local_type(expr.id, pending, self_name, depth + 1)
        return f"p:{expr.id}" if expr.id in pending.parameters else None
    if not isinstance(expr, ast.Call):
        return None
    func = expr.func
    if isinstance(func, ast.Attribute):
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id == self_name:
            return f"r:{func.attr}:self"
        named_alone = isinstance(receiver, ast.Name) and receiver.id not in pending.typed \
            and receiver.id not in pending.parameters  # a module or a class: `mod.make()`, `Config.load()`
        if not named_alone:
            inner = _type_of(receiver, pending, self_name, depth + 1)
            return f"r:{func.attr}:{inner}" if inner else None
    elif not isinstance(func, ast.Name):
        return None  # `makers[key]()`, `f()()`: nothing names what is called
    dotted = _dotted(func)
    return f"c:{dotted}" if dotted else None


def _object_passed(expr: ast.expr, pending: _Pending, self_name: str | None, depth: int = 0) -> str:
    """How to find the class of the object an argument is (see `_local_type`), for the model to type the parameter
    it binds (`ProjectModel._passed_class`): `self.attr` or `self.attr.attr`, a parameter, a local bound only to
    one of these, a constructor's result (a name that starts with a capital), a method of `self`'s result; "" for
    anything else.
    Not an element (`self.heads[0]`) nor any other expression that keeps only a tensor's device (`x.T`, `-x`),
    as the values of `passes` do."""
    if expr.__class__ is ast.Name:
        # By the function's own bindings (`typed` holds its nested functions' too): a parameter it never rebinds
        # (nor a nested function's parameter or a comprehension's target of that name), or a local every
        # assignment of which gives the same.
        name = expr.id  # type: ignore[attr-defined]
        if name in pending.parameters:
            return f"p:{name}" if pending.never_rebound(name) else ""
        values = pending.assigned.get(name)
        if not values or depth > 3 or name in pending.inner_names:
            return ""
        found = {_object_passed(value, pending, self_name, depth + 1) if value is not None else ""
                 for value in values}
        return found.pop() if len(found) == 1 else ""
    if expr.__class__ is ast.Attribute:
        return _self_attribute(expr, self_name) or ""
    if expr.__class__ is ast.Call:
        typed = _type_of(expr, pending, self_name, 0) or ""
        made = typed[2:].rpartition(".")[2][:1] if typed.startswith("c:") else ""
        return typed if typed.startswith("r:") and typed.endswith(":self") or made.isupper() else ""
    return ""


def _dotted(node: ast.expr | None) -> str | None:
    """`a.b.c` for a name or attribute chain (subscripts dropped: `Optional[Foo]` -> `Foo`); None otherwise."""
    if isinstance(node, ast.Subscript):
        inner = node.slice
        if isinstance(inner, ast.Tuple):
            inner = next((element for element in inner.elts
                          if not is_none(element)), None)
        return _dotted(inner)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if node.value.replace(".", "").isidentifier() else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # `Foo | None`
        return _dotted(node.left) if not (isinstance(node.left, ast.Constant) and node.left.value is None) \
            else _dotted(node.right)
    return dotted_name(node) if node is not None else None


def _defines(statement: ast.If | ast.Try) -> bool:
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for node in ast.walk(statement))


def runs_once(name: str) -> bool:
    """A function that by its name runs once or is set-up, I/O or diagnostics: hotness does not flow into it."""
    return name in RUN_ONCE_NAMES or any(word in NOT_PER_STEP_NAME_WORDS for word in name_words(name))


# ----- the merged model ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hot:
    """Why a function is hot: the chain of calls from a root, the root first."""

    chain: tuple[str, ...]

    def describe(self) -> str:
        return " -> ".join(short_name(name) for name in self.chain)


@dataclass(frozen=True)
class AttributePlacement:
    placement: str  # GPU or HOST
    where: str  # `Class.attr` (module), or the parameter or call placed
    why: str
    origin: str = ""  # for a placement followed through values: where the chain starts, and why
    device: bool = False  # a device (`self.device`), not a tensor on it
    # Whether the model knows the value to be a tensor (or a device). A module's unannotated input is placed only in
    # case it is one: it may be a flag or a list, which its placement must not make a tensor (values.py).
    typed: bool = True
    # A device placed by what the code means to do with it (copies to it with `non_blocking=True`), not by a value:
    # tensors made on it are on the GPU, but it is not certainly CUDA (a fix must still guard `pin_memory=`).
    intended: bool = False

    def describe(self) -> str:
        text = f"{self.where} {self.why}" if self.why else self.where
        return f"{text} (first: {self.origin})" if self.origin and self.origin not in text else text

    def through(self, where: str, how: str) -> AttributePlacement:
        """`where` placed as this is, `how` (a phrase naming this one) saying through what."""
        return AttributePlacement(self.placement, where, how, self.origin or self.describe(), self.device, self.typed,
                                  self.intended)


@dataclass
class ProjectModel:
    summaries: dict[str, dict]  # by file path (absolute)
    is_root: object = None  # function name -> reason or None; set by the builder (configured names)
    root: str | None = None  # the project root, which test paths are told from
    gpu_attributes: frozenset[str] = frozenset()  # configured attribute names that are CUDA tensors
    module_inputs_on_gpu: bool = False  # configured: see _module_input
    functions: dict[str, dict] = field(default_factory=dict)  # qualified name -> record (with "file", "module")
    classes: dict[str, dict] = field(default_factory=dict)
    hot: dict[str, Hot] = field(default_factory=dict)
    attribute_placements: dict[str, dict[str, AttributePlacement]] = field(default_factory=dict)
    by_attribute_name: dict[str, AttributePlacement | None] = field(default_factory=dict)
    methods_by_name: dict[str, list[str]] = field(default_factory=dict)
    subclasses: dict[str, list[str]] = field(default_factory=dict)
    under_device_context: dict[str, str] = field(default_factory=dict)  # function -> where the context is
    gpu_attribute_names: frozenset[str] = frozenset()  # attributes some class of the project places on the GPU
    # Whether some file's tree shows GPU evidence (facts.TreeEvidence.gpu); found when `module-inputs-on-gpu` asks.
    _gpu_project: bool | None = None
    _imports_by_module: dict[str, dict[str, str]] = field(default_factory=dict)
    _star_imports: dict[str, list[str]] = field(default_factory=dict)  # module -> modules it imports `*` from
    # Every module name and its trailing parts (`scheduler`, `managers.scheduler`) -> the module; "" when ambiguous.
    _module_suffixes: dict[str, str] = field(default_factory=dict)
    _project_names: dict[str, str | None] = field(default_factory=dict)
    _resolved: dict[tuple[str, str], str | None] = field(default_factory=dict)
    _result_classes: dict[str, str | None] = field(default_factory=dict)  # function -> the class of its result
    _results_working: set[str] = field(default_factory=set)
    _result_cuts: int = 0
    _subclasses_of: dict[str, list[str]] = field(default_factory=dict)
    _roots_by_name: dict[str, str | None] = field(default_factory=dict)
    _off_step_files: dict[str, bool] = field(default_factory=dict)
    _placement_digest: str | None = None
    # Values (see `_Values`), resolved on demand: who calls each function (caller, index into its calls, whether
    # the callee's first parameter is bound), and what was found for parameters, results and attributes.
    _incoming: dict[str, list[tuple[str, int, bool]]] = field(default_factory=dict)
    _calls_by_name: dict[str, list[tuple[str, int, str]]] | None = None
    _calls_index: dict[str, list[tuple[str, int, str]]] | None = None  # every call by its name (`_calls_by_name`)
    _import_aliases: dict[str, frozenset[str]] | None = None  # `_aliases`
    _unresolved_names: set[str] = field(default_factory=set)
    # The calls by a name on objects of unknown class (`self.dist.sample(n)`), which may run any method of that name:
    # by the name, and by the method they may run when `_callers` finds it has such callers.
    _unresolved_calls: dict[str, list[tuple[str, int, bool]]] = field(default_factory=dict)
    _mros: dict[str, tuple[str, ...]] = field(default_factory=dict)  # (asked only once the bases are resolved)
    _bases_written: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _unseen_names: dict[str, list[str]] = field(default_factory=dict)  # the names such calls may run a method by
    _unseen_callers: dict[str, list[tuple[str, int, bool]]] = field(default_factory=dict)  # `_unseen_calls`, kept
    _callers_of: dict[str, tuple[list[tuple[str, int, bool]], bool]] = field(default_factory=dict)
    _parameters: dict[tuple[str, str], AttributePlacement | None] = field(default_factory=dict)
    _results: dict[str, AttributePlacement | None] = field(default_factory=dict)
    _flows: dict[tuple[str, str], AttributePlacement | None] = field(default_factory=dict)
    _working: set = field(default_factory=set)
    _cuts: int = 0
    _value_names: tuple[frozenset[str], frozenset[str], frozenset[str]] | None = None
    _run_once_callers: dict[str, str | None] = field(default_factory=dict)
    _built_by: dict[str, str | None] = field(default_factory=dict)
    _data_loading: dict[str, str | None] = field(default_factory=dict)
    _data_reach: frozenset[str] | None = None  # `_reached_by_data_loaders`
    _holders: dict[str, set[str]] | None = None
    # The names some file uses as values (`named`): a function or class each bare name resolves to in its file;
    # by name alone, the attributes and the bare names that resolve to nothing of the project (a local, perhaps).
    _used_as_values: tuple[frozenset[str], frozenset[str]] | None = None
    _imported: frozenset[str] | None = None  # the modules other modules import from
    _bound_attributes: dict[str, set[str]] | None = None  # a method's name -> the attributes it is bound to
    _literals: dict[tuple[str, str], frozenset | None] = field(default_factory=dict)
    _python_values: dict[tuple[str, str], bool | None] = field(default_factory=dict)
    _integer_tensors: dict[tuple[str, str], bool | None] = field(default_factory=dict)
    _stored_elsewhere: frozenset[str] | None = None  # attributes stored into on objects other than `self`
    # (function, parameter) -> the project class of the objects every call passes it, for parameters with no
    # annotation that a method is called on (`_type_parameters`).
    _parameter_classes: dict[tuple[str, str], str] = field(default_factory=dict)
    _passed_classes: dict[tuple[str, str], str | None] = field(default_factory=dict)  # `_passed_class`, while found

    @classmethod
    def build(cls, summaries: dict[str, dict], is_root, gpu_attributes: Iterable[str] = (),
              root: str | None = None, hot: dict[str, Hot] | None = None,
              module_inputs_on_gpu: bool = False) -> ProjectModel:
        """The merged model; `hot`, when given, is the hotness a model of the same summaries and settings found."""
        model = cls(summaries, is_root, root=root, gpu_attributes=frozenset(gpu_attributes),
                    module_inputs_on_gpu=module_inputs_on_gpu)
        model._index()
        model._place_attributes()
        model._type_parameters()
        if hot is None:
            model._propagate_hotness()
        else:
            model.hot = hot
        model._propagate_device_contexts()
        return model

    # -- indexing --

    def _index(self) -> None:
        for path, summary in self.summaries.items():
            module = summary["module"]
            self._imports_by_module[module] = summary["imports"]
            if "star_imports" in summary:
                self._star_imports[module] = summary["star_imports"]
            parts = module.split(".")
            for start in range(1, len(parts)):
                suffix = ".".join(parts[start:])
                self._module_suffixes[suffix] = module if self._module_suffixes.get(suffix, module) == module else ""
            for name, record in summary["classes"].items():
                self.classes[f"{module}.{name}"] = {**record, "module": module, "file": path, "name": name}
            for name, record in summary["functions"].items():
                qualified = _function_key(module, name)
                self.functions[qualified] = {**record, "module": module, "file": path, "name": name}
        self._module_suffixes.update({summary["module"]: summary["module"] for summary in self.summaries.values()})
        for qualified, record in self.classes.items():
            record["resolved_bases"] = [base for base in (self._resolve_name(record["module"], dotted)
                                                          for dotted in record["bases"] if dotted) if base]
            for base in record["resolved_bases"]:
                self.subclasses.setdefault(base, []).append(qualified)
        for qualified, record in self.functions.items():
            if record["class"]:
                self.methods_by_name.setdefault(qualified.rpartition(".")[2], []).append(qualified)

    def _resolve_name(self, module: str, dotted: str) -> str | None:
        """The qualified name a dotted name written in `module` refers to, when the project defines it (a class or
        a function); None otherwise."""
        key = (module, dotted)
        if key not in self._resolved:
            self._resolved[key] = self._resolve_uncached(module, dotted)
        return self._resolved[key]

    def _resolve_uncached(self, module: str, dotted: str) -> str | None:
        summary_imports = self._imports(module)
        head, _, rest = dotted.partition(".")
        candidates = []
        if head in summary_imports:
            qualified_head = summary_imports[head]
            imported = f"{qualified_head}.{rest}" if rest else qualified_head
            candidates.append(imported)
            matched = self._as_project_name(imported)
            if matched is not None:
                candidates.append(matched)
        candidates.append(f"{module}.{dotted}")
        for candidate in candidates:
            for _ in range(3):  # `from pkg import Foo` where pkg/__init__ re-exports it from pkg.sub
                if candidate in self.classes or candidate in self.functions:
                    return candidate
                head_module, _, name = candidate.rpartition(".")
                reexported = self._imports(head_module).get(name) or self._star_imported(head_module, name)
                if reexported is None or reexported == candidate:
                    break
                candidate = reexported
        return None

    def _star_imported(self, module: str, name: str) -> str | None:
        """`name` as a module of the project takes it with `from .common import *` (sglang's `srt.utils`)."""
        for star in self._star_imports.get(module, ()):
            found = self._as_project_name(f"{star}.{name}")
            if found is not None:
                defining, _, _ = found.rpartition(".")
                if found in self.functions or found in self.classes or name in self._imports(defining):
                    return found
        return None

    def _as_project_name(self, imported: str) -> str | None:
        """`imported` (`sglang.srt.managers.scheduler.Scheduler`) as the project names it, when the project's module
        names lack leading parts the import spells out (`managers.scheduler.Scheduler`, the model of `srt` alone)
        or the import lacks some (a `src` layout checked from above `src`): matched on the longest run of parts that
        is, or ends, a module name of the project, when only one module matches. Where leading parts of the import
        are left out, what is left must be a whole module name of the project (less the root's own folder, where the
        root is a package that imports name otherwise), and what is left out no module of torch:
        `torch.distributed.all_gather` is neither the project's `training/utils/distributed.py`'s nor a top-level
        `distributed.py`'s `all_gather`."""
        found = self._project_names.get(imported, False)
        if found is not False:
            return found
        parts = imported.split(".")
        found = None
        for start in range(len(parts)):
            if start and parts[0] == "torch":
                break
            for end in range(len(parts), start, -1):
                run = ".".join(parts[start:end])
                module = self._module_suffixes.get(run)
                if module and (not start or module == run or module == f"{self._root_package}.{run}"):
                    found = ".".join([module, *parts[end:]])
                    break
            if found is not None:
                break
        self._project_names[imported] = found
        return found

    @property
    def _root_package(self) -> str:
        """The root folder's name: the first part of every module name where the root is itself a package."""
        return Path(self.root).name if self.root else ""

    def _imports(self, module: str) -> dict[str, str]:
        return self._imports_by_module.get(module, {})

    def mro(self, class_name: str) -> tuple[str, ...]:
        """The class and its bases the project defines, nearest first."""
        known = self._mros.get(class_name)
        if known is None:
            known = self._mros[class_name] = self._mro_uncached(class_name)
        return known

    def _mro_uncached(self, class_name: str) -> tuple[str, ...]:
        order, queue, seen = [], deque([class_name]), set()
        while queue:
            name = queue.popleft()
            if name in seen or name not in self.classes:
                continue
            seen.add(name)
            order.append(name)
            queue.extend(self.classes[name]["resolved_bases"])
        return tuple(order)

    def _is_module_class(self, class_name: str) -> bool:
        """An `nn.Module` subclass: some base, however far up, is written `nn.Module` / `torch.nn.Module`, or is
        another library's well-known subclass of it (`pl.LightningModule`, `transformers.PreTrainedModel`)."""
        return any(qualified in MODULE_CLASSES for qualified in self._written_bases(class_name))

    def _is_module_forward(self, record: dict) -> bool:
        """Whether the function `record` describes is the `forward` of an `nn.Module` subclass."""
        return record["name"].rpartition(".")[2] == "forward" and bool(record["class"]) \
            and self._is_module_class(_record_class(record))

    def _built_once_class(self, class_name: str) -> bool:
        """An `nn.Module` (one object per model) or a subclass of a `torch.optim` class (`torch.optim.Optimizer`,
        `torch.optim.AdamW`, a learning-rate scheduler: one object per training run), however far up."""
        return self._is_module_class(class_name) \
            or any(qualified.startswith("torch.optim.") for qualified in self._written_bases(class_name))

    def _written_bases(self, class_name: str) -> tuple[str, ...]:
        """The bases of the class and of its project bases, however far up, as written, with the module's imports
        resolved (`nn.Module` under `from torch import nn` is `torch.nn.Module`); a base the project defines by
        its qualified name (`class B(A)` with `A` in the same module: `pkg.mod.A`)."""
        known = self._bases_written.get(class_name)
        if known is None:
            known = self._bases_written[class_name] = tuple(self._written_bases_uncached(class_name))
        return known

    def _written_bases_uncached(self, class_name: str) -> Iterator[str]:
        for name in self.mro(class_name):
            record = self.classes[name]
            imports = self._imports(record["module"])
            for base in record["bases"]:
                resolved = self._resolve_name(record["module"], base) if base else None
                if resolved in self.classes:
                    yield resolved  # type: ignore[misc]
                    continue
                head, _, rest = base.partition(".")
                yield f"{imports.get(head, head)}.{rest}" if rest else imports.get(head, head)

    # -- calls --

    def callees(self, function: str, receiver: str | None = None) -> list[tuple[str, str]]:
        """The functions `function` may call every time it runs, each with the class of the object it runs on (see
        `_call_targets`), when `function` runs on an object of `receiver` (by default its own class): not those it
        calls once in a while (see `occasional` in the summary layout), nor those that cache their results."""
        record = self.functions[function]
        occasional = record.get("occasional", ())
        found: list[tuple[str, str]] = []
        for index, reference in enumerate(record["calls"]):
            if index not in occasional:
                found.extend(target for target in self._call_targets(record, reference, receiver, index)
                             if not self.functions[target[0]].get("cached"))
        return found

    def _resolve_call(self, record: dict, reference: str, index: int = -1) -> list[str]:
        """The project functions a call the function `record` describes makes may run (`index`: see
        `_call_targets`)."""
        return [callee for callee, _ in self._call_targets(record, reference, index=index)]

    def _call_targets(self, record: dict, reference: str, receiver: str | None = None,
                      index: int = -1) -> list[tuple[str, str]]:
        """The project functions the call may run, each with the class of the object it runs on, which decides
        what its own calls on `self` run: `EnvBase.reset`, inherited by `DreamerEnv` and called on one, runs
        `self._reset()` of `DreamerEnv`, not of every other environment. `receiver` is the class of the object
        the calling function runs on, when known to be narrower than its own class. `index`: the call's among
        the function's calls, where known, so that a method found by its name alone must take its arguments."""
        caller = record if index >= 0 else None
        kind, _, name = reference.partition(":")
        module = record["module"]
        own_class = _record_class(record)
        receiver = receiver or own_class
        if kind in ("n", "d"):
            target = self._resolve_name(module, name)
            held_class = self._class_called_on(record, reference) if target is None else None
            if held_class is not None:  # `Sub.method(obj, x)` of a method `Sub` inherits: found as on `Sub`
                return self._dispatch(held_class, name.rpartition(".")[2], overrides=False)
            imported = self._imports(module).get(name.partition(".")[0]) if kind == "d" else None
            if target is None and kind == "d" and (imported is None or name.count(".") > 1
                                                   and self._as_project_name(imported) is not None):
                # On a local, or deeper in a project module or class than the model follows
                # (`config.runner.engine.run(x)`); a chain headed by another library's module runs no project code.
                holder, _, method = name.rpartition(".")
                typed = record.get("locals", {}).get(holder)
                held = self._class_of(record, typed) if typed else None
                if held is not None:  # `builder = group.get_builder(); builder.build(...)`: a typed local
                    return self._dispatch(held, method, overrides=True)
                return self._by_method_name(method, caller, index)  # `<object>.method(...)`
            if target is None or target in self.classes:
                return []  # a constructor runs once per object: no hotness flows into it
            return [(target, _record_class(self.functions[target]))]
        if kind == "s":
            found = self._dispatch(receiver, name, overrides=True)
            if not found and receiver in self.classes:
                for method in self._bound_methods(receiver, name):  # `self._decode = self._decode_loop_labels`
                    found.extend(self._dispatch(receiver, method, overrides=True))
            if not found and "." not in name:
                # `self.visual(pixels)`: an attribute holding a module runs its `forward`
                holder = self.attribute_type(receiver, name) if receiver in self.classes else None
                if holder is not None and self._is_module_class(holder):
                    return self._dispatch(holder, "forward", overrides=True)
            return found
        if kind == "u":  # `super().name(...)`: a base's method, still on the same object
            bases = self.classes.get(own_class, {}).get("resolved_bases", [])
            found = next((found for base in bases if (found := self._methods(base, name, overrides=False))), [])
            return [(callee, receiver) for callee in found]
        if kind in ("sa", "p"):
            holder, _, method = name.partition(".")
            resolved = self._class_of(record, f"{kind}:{holder}")  # the type of `self.holder`, or an annotation
            if resolved is not None:
                return self._dispatch(resolved, method, overrides=True)
            return self._by_method_name(method, caller, index)
        if kind == "rc":
            typed, _, method = name.rpartition("@.")
            held = self._class_of(record, typed)
            return self._dispatch(held, method, overrides=True) if held is not None \
                else self._by_method_name(method, caller, index)
        if kind == "a":
            return self._by_method_name(name, caller, index)
        return []

    def _bound_methods(self, class_name: str, attr: str) -> list[str]:
        """The methods the class (or a base) binds to `self.attr` (`self._decode = self._decode_loop_labels`)."""
        return next((methods for owner in self.mro(class_name)
                     if (methods := self.classes.get(owner, {}).get("bound", {}).get(attr))), [])

    def _class_of(self, record: dict, typed: str, depth: int = 0) -> str | None:
        """The project class a local of the function (`record`) holds, by how the summary says to find it (see
        `_local_type`)."""
        if depth > 3:
            return None
        kind, _, rest = typed.partition(":")
        module, own_class = record["module"], _record_class(record)
        if kind == "sa":  # `self.x`, or `self.x.y`
            first, _, then = rest.partition(".")
            resolved = self.attribute_type(own_class, first)
            if then:
                resolved = self._attribute_of_any(resolved, then) if resolved in self.classes else None
        elif kind == "p":
            annotation = record["params"].get(rest)
            resolved = self._resolve_name(module, annotation) if annotation \
                else self._parameter_classes.get((_function_key(record["module"], record["name"]), rest))
        elif kind == "c":
            resolved = self._resolve_name(module, rest)
            if resolved in self.functions:
                resolved = self._result_class(resolved)
        elif kind == "r":
            method, _, inner = rest.partition(":")
            holder = own_class if inner == "self" else self._class_of(record, inner, depth + 1)
            found = self._methods(holder, method, overrides=False) if holder in self.classes else []
            resolved = self._result_class(found[0]) if found else None
        else:
            return None
        return resolved if resolved in self.classes else None

    def _attribute_of_any(self, class_name: str, attr: str) -> str | None:
        """The project class of `attr` on an object of `class_name` or of any subclass, when they all agree and no
        file stores into `attr` on other objects (`model.head = Manager()`, which the classes' own types miss)."""
        if attr in self._attributes_stored_elsewhere():
            return None
        found = {self.attribute_type(held, attr) for held in (class_name, *self._subclasses(class_name))}
        return found.pop() if len(found) == 1 else None

    def _result_class(self, function: str) -> str | None:
        """The project class of `function`'s result: the one its result is annotated with; with no such
        annotation, the nearest class every project class it returns an object of derives from (a factory,
        `return EncoderOnlyState(...)` in one branch and `return DefaultState(...)` in another, returns a
        `State`), or the class of what a function it returns the result of returns. A call the model cannot
        resolve (`cls(...)` of a class it was handed, `REGISTRY[key]()`) is taken to build an object of that
        class too, as factories that name their classes in some branches do in others; a return of any other
        value (a parameter, an attribute) leaves the class unknown. An answer found while the function's own
        answer was being worked out (a cycle of calls) is not kept, so it does not depend on what was asked first."""
        if function in self._result_classes:
            return self._result_classes[function]
        if function in self._results_working:
            self._result_cuts += 1
            return None
        record = self.functions[function]
        returned = record.get("rtype")
        resolved = self._resolve_name(record["module"], returned) if returned else None
        cuts = self._result_cuts
        if resolved not in self.classes:
            self._results_working.add(function)
            try:
                resolved = self._returned_class(record)
            finally:
                self._results_working.discard(function)
        found = resolved if resolved in self.classes else None
        if self._result_cuts == cuts:
            self._result_classes[function] = found
        return found

    def _returned_class(self, record: dict) -> str | None:
        """`_result_class` of an unannotated function, from what its summary says it returns."""
        made: list[str] = []
        for value in record.get("returns", ()):
            if not value:
                continue  # `None`, or an expression no value describes
            if value[0] != "c" or value[1][:2] not in ("n:", "d:"):
                return None
            target = self._resolve_name(record["module"], value[1][2:])
            if target in self.functions:
                target = self._result_class(target)
                if target is None:
                    return None
            if target in self.classes and target not in made:
                made.append(target)
        return self._common_base(made)

    def _common_base(self, classes: list[str]) -> str | None:
        """The nearest project class all of `classes` are (or derive from); None when they share none."""
        if not classes:
            return None
        others = [set(self.mro(other)) for other in classes[1:]]
        return next((owner for owner in self.mro(classes[0]) if all(owner in mro for mro in others)), None)

    def _methods(self, class_name: str, method: str, overrides: bool) -> list[str]:
        """`method` as found on `class_name` (its own or inherited) and, with `overrides`, as overridden in its
        subclasses: any of them may run for a call on `self`."""
        return [function for function, _ in self._dispatch(class_name, method, overrides)]

    def _dispatch(self, class_name: str, method: str, overrides: bool) -> list[tuple[str, str]]:
        """`_methods`, each with the class of the object it runs on: `class_name` for the method it has (its own or
        inherited), the subclass for an override."""
        found = next((f"{owner}.{method}" for owner in self.mro(class_name) if f"{owner}.{method}" in self.functions),
                     None)
        result = [(found, class_name)] if found else []
        if overrides:
            result.extend((f"{sub}.{method}", sub) for sub in self._subclasses(class_name)
                          if f"{sub}.{method}" in self.functions)
        return result

    def _subclasses(self, class_name: str) -> list[str]:
        """The project's subclasses of `class_name`, however far down, nearest first."""
        if class_name not in self._subclasses_of:
            queue, found = deque(self.subclasses.get(class_name, [])), {}
            while queue:
                sub = queue.popleft()
                if sub not in found:
                    found[sub] = None
                    queue.extend(self.subclasses.get(sub, []))
            self._subclasses_of[class_name] = list(found)
        return self._subclasses_of[class_name]

    def _by_method_name(self, method: str, caller: dict | None = None, index: int = -1) -> list[tuple[str, str]]:
        """The methods of that name a call on an object of unknown class may run, when few classes define one:
        those the call (`index` of the function `caller`, where known) can pass its arguments to."""
        if "_" not in method.strip("_") or method.startswith("__") or method.endswith("_") \
                or method in NOT_PROJECT_METHODS:
            return []
        candidates = self.methods_by_name.get(method, [])
        owners = {candidate.rpartition(".")[0] for candidate in candidates}
        if not 0 < len(owners) <= MAX_CLASSES_BY_NAME:
            return []
        return [(candidate, _record_class(self.functions[candidate])) for candidate in candidates
                if caller is None or _fits(self.functions[candidate], caller, index)]

    # -- hotness --

    def _off_the_step(self, path: str) -> bool:
        """A module of tests, benchmarks, profiling or export, by its path from the project root, as the engine
        tells one (`is_off_the_step_path`)."""
        if path not in self._off_step_files:
            self._off_step_files[path] = is_off_the_step_path(os.path.relpath(path, self.root) if self.root else path)
        return self._off_step_files[path]

    def _root_reason(self, qualified: str, record: dict) -> str | None:
        name = record["name"].rpartition(".")[2]
        if not name:
            return None
        if name not in self._roots_by_name:
            self._roots_by_name[name] = self.is_root(name) if self.is_root is not None else None
        reason = self._roots_by_name[name]
        if reason and (name not in NOT_PROPAGATING_ROOTS or reason.startswith("configured")):
            return reason
        if record["replay"]:
            return "replays a CUDA graph"
        if self._is_module_forward(record):
            return "`forward` of an `nn.Module`"
        return None

    def _type_parameters(self) -> None:
        """The class of each parameter with no annotation that its function calls a project method on
        (`head.next_state(h)`), when every call of the function the model sees passes an object of a project class
        (or of classes with a nearest common base), as the call's `objects` tell: `self.head` by the types the
        caller's class gives, a constructor's result, the annotated result of a method of `self`, an annotated
        parameter or one typed so in turn. Such a call then runs that class's method (or an override), not every
        method of that name (`_by_method_name`, which may take an unrelated class's). Found once, before hotness,
        from calls resolved without these classes; the calls are resolved again afterwards, with them, so that
        every answer sees the same call graph whatever was asked first."""
        wanted: dict[tuple[str, str], None] = {}
        for qualified, record in self.functions.items():
            if "locals" not in record:
                continue
            called: dict[str, list[str]] = {}  # by local: the methods called on it
            for reference in record["calls"]:
                if (on_a_name := _method_on_a_name(reference)) is not None:
                    called.setdefault(on_a_name[0], []).append(on_a_name[1])
            for local, typed in record["locals"].items():
                methods = called.get(local, [])
                while typed.startswith("r:"):  # `r:method:<how>`: a method called on the object found so
                    method, _, typed = typed[2:].partition(":")
                    methods = [*methods, method]
                # Only where a project class has such a method: on any other, the class decides no call.
                if typed.startswith("p:") and not record["params"].get(typed[2:]) \
                        and any(method in self.methods_by_name for method in methods):
                    wanted[(qualified, typed[2:])] = None
        found = {}
        for key in wanted:
            cuts = self._cuts
            held = self._passed_class(*key)
            if held is not None and self._cuts == cuts:  # not through a cycle, so the same whatever was asked first
                found[key] = held
        self._passed_classes = {}
        self._calls_by_name, self._incoming, self._callers_of = None, {}, {}
        self._unresolved_names, self._unresolved_calls, self._unseen_names, self._unseen_callers = set(), {}, {}, {}
        self._parameter_classes = found

    def _parameter_class(self, function: str, name: str) -> str | None:
        """The project class of the objects the parameter `name` of `function` holds, for the attributes read on it
        (`meta.logits_indices`): the class it is annotated with; with no annotation, the one every call the model
        sees passes (`_passed_class`, asked here once the calls are resolved for good: no call's target depends on
        it)."""
        record = self.functions[function]
        annotation = record["params"].get(name)
        if annotation:
            resolved = self._resolve_name(record["module"], annotation)
            return resolved if resolved in self.classes else None
        held = self._parameter_classes.get((function, name)) or self._passed_class(function, name)
        # The nearest base of the classes the calls pass: a subclass may place the attribute otherwise.
        return held if held is not None and not self._subclasses(held) else None

    def _held_class(self, record: dict, typed: str) -> str | None:
        """The project class of the object a local of the function holds (see `_local_type`), for the attributes
        read on it: the class made (`c:Meta`, exactly that class), or one a function, a method or an attribute
        gives where no subclass of it may be what it holds instead."""
        held = self._class_of(record, typed)
        if held is None or typed.startswith("c:") and self._resolve_name(record["module"], typed[2:]) == held:
            return held
        return held if not self._subclasses(held) else None

    def _passed_class(self, function: str, name: str, depth: int = 0) -> str | None:
        """The project class of the objects every call of `function` the model sees passes its parameter `name`
        (see `_type_parameters`); None when some call passes something else, or calls the model cannot see may."""
        return self._memoized(self._passed_classes, (function, name), depth,
                              lambda: self._passed_class_uncached(function, name, depth))

    def _passed_class_uncached(self, function: str, name: str, depth: int) -> str | None:
        record = self.functions[function]
        callers, unseen = self._callers(function)
        if not callers or unseen or len(callers) > _MAX_CALLERS or self._called_unseen(function, record) \
                or self._is_module_forward(record) or self._built_unseen(function, record):
            return None  # (a module's `forward` runs through `__call__` too: `layer(x, cache)` of a `ModuleList`)
        classes: list[str] = []
        for caller, index, bound in callers:
            calling = self.functions[caller]
            objects = calling.get("objects", {}).get(index)
            typed = _argument(record, name, objects, bound) if objects is not None else None
            if not typed or typed is _LEFT_OUT:
                return None
            held = self._passed_class(caller, typed[2:], depth + 1) \
                if typed.startswith("p:") and not calling["params"].get(typed[2:]) else self._class_of(calling, typed)
            if held is None:
                return None
            classes.append(held)
        base = self._common_base(classes)
        # Dispatched on the base, a call reaches the method the base has and the overrides below it: not a mixin's
        # that one of the classes puts before the base (`class A(Mixin, Base)`), nor, where the base is itself a
        # mixin (`A(Mixin, Base)` and `B(Mixin, Base)`), the method of a base after it.
        if base is None or any(base not in self.mro(owner) and owner not in self.mro(base)
                               for held in classes for owner in self.mro(held)):
            return None
        return base

    def _built_unseen(self, function: str, record: dict) -> bool:
        """Whether `function` is a constructor of objects that calls no summary holds may make: the class, or a
        related one, handed on by its name (`{"jets": JETS}`, then `REGISTRY[kind](...)`), or remade by
        `type(self)(...)`; or a constructor decorated, or of a class derived from another library's."""
        if record["name"].rpartition(".")[2] != "__init__":
            return False
        related = self._related_classes(function.rpartition(".")[0])
        return bool(record.get("decorated")) or any(self.classes[name].get("remade") for name in related) \
            or any(self._used_as_value(name) for name in related) \
            or bool(record["class"]) and self._framework_base(_record_class(record))

    def _propagate_hotness(self) -> None:
        """Breadth first from the roots along the calls, so that each function keeps the shortest chain from a
        root. A function is visited once per class of object it is reached running on (see `_call_targets`): a
        base's method reached on one subclass's objects does not make every subclass's overrides hot."""
        queue: deque[tuple[str, str]] = deque()
        chains: dict[tuple[str, str], tuple[str, ...]] = {}
        for qualified, record in self.functions.items():
            if self._root_reason(qualified, record) and not self._off_the_step(record["file"]):
                self.hot[qualified] = Hot((qualified,))
                state = (qualified, _record_class(record))
                chains[state] = (qualified,)
                queue.append(state)
        while queue:
            state = queue.popleft()
            caller, receiver = state
            for callee in self.callees(caller, receiver):
                if callee in chains:
                    continue
                function = callee[0]
                record = self.functions[function]
                if runs_once(record["name"].rpartition(".")[2]) or self._off_the_step(record["file"]):
                    continue
                chains[callee] = (*chains[state], function)
                if function not in self.hot:
                    self.hot[function] = Hot(chains[callee])
                queue.append(callee)

    def _propagate_device_contexts(self) -> None:
        """Functions that may run under `with torch.device(...)` opened elsewhere: the ones called inside such a
        block, the constructors of the classes made there, and what those call, transitively."""
        queue: deque[str] = deque()
        for summary in self.summaries.values():
            module = summary["module"]
            for function, reference in summary["device_context_calls"]:
                record = self.functions.get(_function_key(module, function))
                if record is None:
                    continue
                for target in self._context_targets(record, reference, _call_index(record, reference)):
                    if target not in self.under_device_context:
                        self.under_device_context[target] = f"{module}.{function or '<module>'}"
                        queue.append(target)
        while queue:
            caller = queue.popleft()
            record = self.functions[caller]
            for index, reference in enumerate(record["calls"]):
                for target in self._context_targets(record, reference, index):
                    if target not in self.under_device_context:
                        self.under_device_context[target] = self.under_device_context[caller]
                        queue.append(target)

    def _context_targets(self, record: dict, reference: str, index: int) -> list[str]:
        kind, _, name = reference.partition(":")
        if kind in ("n", "d"):
            target = self._resolve_name(record["module"], name)
            if target in self.classes:
                return [f"{owner}.__init__" for owner in self.mro(target)[:1] if f"{owner}.__init__" in self.functions]
        return [target for target in self._resolve_call(record, reference, index)]

    # -- placement --

    def _place_attributes(self) -> None:
        by_name: dict[str, list[AttributePlacement]] = {}
        unplaced: dict[str, int] = {}  # by attribute name: the classes that assign it values of unknown placement
        for qualified, record in self.classes.items():
            for attr in record["unplaced"]:
                if record["attrs"].get(attr, ("",))[0] == "":
                    unplaced[attr] = unplaced.get(attr, 0) + 1
            placements = {}
            for attr, (placement, why) in record["attrs"].items():
                if placement in (GPU, HOST):
                    where = f"`{record['name']}.{attr}` ({record['module']})"
                    placements[attr] = AttributePlacement(placement, where, why)
                    by_name.setdefault(attr, []).append(placements[attr])
                elif placement == "mixed":
                    by_name.setdefault(attr, []).append(AttributePlacement("mixed", "", ""))
            self.attribute_placements[qualified] = placements
        for attr, found in by_name.items():
            # Placed by its name alone when the classes that place it agree on the GPU, and the classes that assign
            # it something else are none, or few against several that agree (a name shared by unrelated classes,
            # `RequestOutput.prompt_token_ids` a list, `PoolingMetadata.prompt_token_ids` a tensor, says nothing).
            kinds = {placement.placement for placement in found}
            others = unplaced.get(attr, 0)
            agreed = kinds == {GPU} and (others == 0 or len(found) >= 2 and len(found) > 2 * others)
            self.by_attribute_name[attr] = found[0] if agreed else None
        # The names whose reads the model may place on the GPU, where the file's words cannot show it: those
        # placed by name alone, and those some class places on the GPU that say something by themselves (a read
        # of `out` or `buffer` is too common to make every file that has one worth a closer look).
        self.gpu_attribute_names = frozenset(attr for attr, placed in self.by_attribute_name.items()
                                             if placed is not None and _distinctive(attr)) | frozenset(
            configured.rpartition(".")[2] for configured in self.gpu_attributes)

    def attribute(self, class_name: str | None, attr: str) -> AttributePlacement | None:
        """Where `<object>.attr` lives: from the class of the object when known (its own or inherited attribute),
        else from the attribute's name when every class of the project that places an attribute of that name puts
        it on the GPU."""
        owner = class_name.rpartition(".")[2] if class_name else None
        if attr in self.gpu_attributes or owner and f"{owner}.{attr}" in self.gpu_attributes or owner is None and any(
                configured.endswith(f".{attr}") for configured in self.gpu_attributes):
            return AttributePlacement(GPU, f"`{attr}`", "configured in `gpu-attributes`")
        if class_name is not None:
            for owner in self.mro(class_name):
                placed = self.attribute_placements.get(owner, {}).get(attr)
                if placed is not None:
                    return placed
            if class_name in self.classes:
                return self._attribute_flow(class_name, attr, 0) or self._async_copy_target(class_name, attr)
        return self.by_attribute_name.get(attr) if _distinctive(attr) else None

    # -- values: placement through parameters, results and attribute assignments --

    def parameter(self, function: str, name: str, depth: int = 0) -> AttributePlacement | None:
        """Where the parameter `name` of `function` lives when the calls of it in the project pass values the model
        places, all in one place (and there is at least one); None otherwise. A subclass's `super()` call is left
        out: what it passes is what objects of the subclass hold (`CPUModelRunner` passes the host device to
        `GPUModelRunner.__init__`), not what the class's own objects do."""
        return self._memoized(self._parameters, (function, name), depth,
                              lambda: self._parameter_uncached(function, name, depth))

    def _memoized(self, table: dict, key, depth: int, compute):
        """`table[key]`, computed once. A question met again while it is being answered (a cycle of calls or
        assignments), or too deep, is answered None; what was found through such an answer is not kept, so that
        every answer kept is the same whatever was asked first."""
        if key in table:
            return table[key]
        tagged = (id(table), key)
        if tagged in self._working or depth > _MAX_VALUE_DEPTH:
            self._cuts += 1
            return None
        cuts = self._cuts
        self._working.add(tagged)
        try:
            found = compute()
        finally:
            self._working.discard(tagged)
        if self._cuts == cuts:
            table[key] = found
        return found

    def _parameter_uncached(self, function: str, name: str, depth: int) -> AttributePlacement | None:
        record = self.functions.get(function)
        if record is None or (record["params"].get(name) or "") in _SCALAR_TYPES:
            return None
        seen, unseen = self._callers(function)
        callers = [(caller, index, bound) for caller, index, bound in seen
                   if not self.functions[caller]["calls"][index].startswith("u:")]
        # A module's input that no seen call passes is assumed on the GPU, where configured: then calls the model
        # cannot see (through `__call__`) pass what the seen ones pass only when that is on the GPU too.
        module_input = self._module_input(function, record, name)
        if not callers and module_input:
            return AttributePlacement(GPU, f"`{name}` of `{short_name(function)}`",
                                      "(an input of a module's `forward`, assumed on the module's device)",
                                      typed=name in record["params"])
        if not callers or len(callers) > _MAX_CALLERS or unseen and not module_input:
            return None
        placed: list[tuple[str, AttributePlacement]] = []
        defaulted = False
        for caller, index, bound in callers:
            passed = _passed(self.functions[caller], index)
            if passed is None:
                return None
            value, where = _argument(record, name, passed, bound), caller
            if value is _LEFT_OUT and name in record.get("defaults", {}):
                # Left out: the default (a dataclass field's, or a device written out), unless it is None, which
                # holds no tensor and says nothing of where the others passed live.
                value, where, defaulted = record["defaults"][name], function, True
                if value == ["none"]:
                    continue
            elif value is _LEFT_OUT or value is None:
                return None
            found = self._value(value, where, depth + 1)
            if found is None:
                return None
            placed.append((caller, found))
        agreed = _agreed([found for _, found in placed])
        # Calls the model cannot see may pass a CUDA device where the seen ones leave the default.
        hidden = unseen or defaulted and self._called_unseen(function, record)
        if agreed is None or hidden and agreed.placement != GPU:
            return None
        caller, found = placed[0]
        others = f" and {len(placed) - 1} more" if len(placed) > 1 else ""
        return found.through(f"`{name}` of `{short_name(function)}`",
                             f"passed {found.where} by `{short_name(caller)}`{others}")

    def _called_unseen(self, function: str, record: dict) -> bool:
        """Whether code no summary shows may call `function` (so pass its parameters anything): it is decorated
        (a registry), its name is used as a value (`functools.partial(decode, ...)`, `{"default": decode}`), it is
        a special method other than `__init__`, or a method of a class derived from another library's, whose code
        may call it. (`literals` asks this of every function but `__init__`, whose callers it judges by the
        classes handed on instead.)"""
        short = function.rpartition(".")[2]
        return bool(record.get("decorated") or self._used_as_value(function)
                    or short.startswith("__") and short != "__init__"
                    or record["class"] and self._framework_base(_record_class(record)))

    def takes_module_inputs(self, function: str) -> bool:
        """Whether `function` is the `forward` of an `nn.Module` whose inputs the model takes to be on the GPU when
        no call of the project tells otherwise (`module-inputs-on-gpu`): a model's inputs live on its device, and in
        a project whose files show CUDA devices, that is the GPU. Off by default: inference engines keep much of
        what their modules take (image grids, sizes, lengths) on the host on purpose (docs/precision.md). Not in a
        file written for another accelerator only, nor in a test module."""
        record = self.functions.get(function) if self.module_inputs_on_gpu else None
        if record is None or not self._is_module_forward(record):
            return False
        if self._gpu_project is None:
            self._gpu_project = any(summary["evidence"][0] for summary in self.summaries.values())
        return self._gpu_project and not self.summaries[record["file"]]["evidence"][6] \
            and not self._off_the_step(record["file"])

    def _module_input(self, function: str, record: dict, name: str) -> bool:
        """Whether `name` is a tensor input of such a `forward` (see `takes_module_inputs`): a parameter annotated
        with a tensor type, or not annotated."""
        if name not in record.get("order", ()) and name not in record["params"]:
            return False
        annotation = record["params"].get(name)
        return (annotation is None or annotation.endswith("Tensor")) and self.takes_module_inputs(function)

    def call_result(self, function: str, reference: str, depth: int = 0) -> AttributePlacement | None:
        """Where the result of a call (by its reference, made in `function`) lives, when every project function
        it may call returns values the model places, all in one place."""
        record = self.functions.get(function)
        if record is None:
            return None
        return _agreed([self._result(target, depth + 1)
                        for target, _ in self._value_targets(record, reference, _call_index(record, reference))])

    def _result(self, function: str, depth: int) -> AttributePlacement | None:
        return self._memoized(self._results, function, depth, lambda: self._result_uncached(function, depth))

    def _result_uncached(self, function: str, depth: int) -> AttributePlacement | None:
        found = _agreed([self._value(value, function, depth + 1)
                         for value in self.functions[function].get("returns", [])])
        return found.through(f"what `{short_name(function)}` returns", f"from {found.where}") if found else None

    def _attribute_flow(self, class_name: str, attr: str, depth: int) -> AttributePlacement | None:
        """`self.attr` of `class_name` placed through what its methods assign it: every assignment's value, in its
        method, placed alike."""
        return self._memoized(self._flows, (class_name, attr), depth,
                              lambda: self._attribute_flow_uncached(class_name, attr, depth))

    def _attribute_flow_uncached(self, class_name: str, attr: str, depth: int) -> AttributePlacement | None:
        for owner in self.mro(class_name):
            record = self.classes[owner]
            if attr not in record["attrs"]:
                continue
            flows = record.get("flows", {}).get(attr)
            if record["attrs"][attr][0] != "" or not flows:
                return None
            found = _agreed([self._value(value, f"{record['module']}.{function}", depth + 1) if function else None
                             for function, value in flows])
            if found is None:
                return None
            return found.through(f"`{record['name']}.{attr}` ({record['module']})",
                                 f"from {found.where}")
        return None

    def _value(self, value: list, function: str, depth: int) -> AttributePlacement | None:
        """Where a value (see `_Values`) of `function` lives, if the model can tell."""
        if not value or depth > _MAX_VALUE_DEPTH:
            return None
        kind = value[0]
        record = self.functions.get(function)
        if record is None:
            return None
        own_class = _record_class(record)
        if kind == "k":
            return AttributePlacement(value[1], f"{value[2]} in `{short_name(function)}`", "")
        if kind == "d" or kind == "t":
            inner = self._value(value[1], function, depth + 1)
            return replace(inner, device=kind == "d") if inner is not None else None
        if kind == "p":
            return self.parameter(function, value[1], depth)
        if kind == "c":
            return self.call_result(function, value[1], depth)
        if kind == "m":
            if self._value_targets(record, value[1], _call_index(record, value[1])):
                return self.call_result(function, value[1], depth)
            return self._value(value[2], function, depth + 1)
        if kind == "a":
            return self._placed_attribute(own_class, value[1], depth) if own_class else None
        if kind == "sa":
            holder = self.attribute_type(own_class, value[1]) if own_class else None
            return self._placed_attribute(holder, value[2], depth) if holder else None
        if kind == "pa":
            return self._placed_attribute(self._parameter_class(function, value[1]), value[2], depth)
        if kind == "ta":
            return self._placed_attribute(self._held_class(record, value[1]), value[2], depth)
        if kind == "e":
            return self._element(value[1], value[2], function, depth)
        if kind == "tuple":
            return None  # a tuple is no tensor; its elements are placed where they are taken (`_element`)
        found = [self._value(part, function, depth + 1) for part in value[1:]]
        if kind == "or":
            on_gpu = next((placed for placed in found if placed is not None and placed.placement == GPU), None)
            if on_gpu is not None:
                return on_gpu
        return _agreed(found)

    def _placed_attribute(self, class_name: str | None, attr: str, depth: int) -> AttributePlacement | None:
        """An attribute of an object of a known class: its placement as assigned, else through the values
        assigned to it. (Not by its name alone: a value resolved across calls needs the class.)"""
        if class_name is None or class_name not in self.classes:
            return None
        for owner in self.mro(class_name):
            placed = self.attribute_placements.get(owner, {}).get(attr)
            if placed is not None:
                return placed
        return self._attribute_flow(class_name, attr, depth + 1) or self._async_copy_target(class_name, attr)

    def _async_copy_target(self, class_name: str, attr: str) -> AttributePlacement | None:
        """`self.attr` as a GPU device, where the class's code (or a base's) copies to it with `non_blocking=True`
        and nothing places it otherwise: an asynchronous copy is worth asking for only to an accelerator. Not
        where some value assigned to it may be the host's (`"cuda" if gpu else "cpu"`, or values that disagree),
        nor where it is a property returning the host's device (`return torch.device("cpu")`; one returning
        `self.proj.weight.device` says nothing more)."""
        owners = self.mro(class_name)
        record = next((self.classes[owner] for owner in owners
                       if attr in self.classes.get(owner, {}).get("async_targets", ())), None)
        if record is None or self._may_be_host(class_name, attr):
            return None
        method = next((f"{owner}.{attr}" for owner in owners if f"{owner}.{attr}" in self.functions), None)
        returned = self._result(method, 0) if method is not None else None
        if returned is not None and returned.placement == HOST:
            return None
        return AttributePlacement(GPU, f"`{record['name']}.{attr}` ({record['module']})",
                                  f"copied to with `non_blocking=True` in `{record['name']}`", device=True,
                                  intended=True)

    def _may_be_host(self, class_name: str, attr: str) -> bool:
        """Whether some value assigned to `self.attr` of the class (or a base) may be the host's."""
        for owner in self.mro(class_name):
            record = self.classes.get(owner, {})
            if record.get("attrs", {}).get(attr, ("",))[0] in (HOST, "mixed"):
                return True
            for function, value in record.get("flows", {}).get(attr, ()):
                if function and self._places_host(value, f"{record['module']}.{function}", 0):
                    return True
        return False

    def _element(self, index: int, value: list, function: str, depth: int) -> AttributePlacement | None:
        """Where element `index` of a value of `function` lives: of a call's result, the element each function it
        may run returns there (`return indices, meta`; a function returning no tuple written out returns a tensor,
        whose element is where it is); of any other value, where the value is."""
        record = self.functions[function]
        if value[0] not in ("c", "m") or not (targets := self._value_targets(record, value[1],
                                                                            _call_index(record, value[1]))):
            return self._value(value, function, depth + 1) if value[0] != "c" else None
        return _agreed([self._memoized(self._results, (target, index), depth,
                                       lambda target=target: self._returned_element(target, index, depth))
                        for target, _ in targets])

    def _returned_element(self, function: str, index: int, depth: int) -> AttributePlacement | None:
        found = _agreed([self._value(_element_returned(returned, index), function, depth + 1)
                         for returned in self.functions[function].get("returns", [])])
        return found.through(f"what `{short_name(function)}` returns", f"from {found.where}") if found else None

    def _places_host(self, value: list, function: str, depth: int) -> bool:
        if value and value[0] == "both":  # `a if c else b`: either
            return any(self._places_host(part, function, depth + 1) for part in value[1:])
        placed = self._value(value, function, depth + 1)
        return placed is not None and placed.placement == HOST

    def _value_targets(self, record: dict, reference: str, index: int = -1) -> list[tuple[str, bool]]:
        """The project functions a call may run, each with whether the call binds the callee's first parameter
        (a method called on an object, or a constructor running `__init__`); `index`: see `_call_targets`."""
        kind, _, name = reference.partition(":")
        if kind in ("n", "d"):
            target = self._resolve_name(record["module"], name)
            if target in self.classes:
                return [(f"{owner}.__init__", True) for owner in self.mro(target)
                        if f"{owner}.__init__" in self.functions][:1]
            if target is not None:
                return [(target, False)]
        # A method called on a class (`Sub.method(obj, x)`, `type(obj).method(obj, x)`, `obj.__class__.method(obj,
        # x)`) takes the object as its first argument.
        bound = self._class_called_on(record, reference) is None and not _on_an_objects_class(reference)
        return [(target, bound) for target in self._resolve_call(record, reference, index)]

    def _class_called_on(self, record: dict, reference: str) -> str | None:
        """The project class a call `Class.method(...)` is written on, for a method the summary's dotted name does
        not find because the class inherits it; None for any other call."""
        kind, _, name = reference.partition(":")
        holder = name.rpartition(".")[0]
        if kind != "d" or not holder:
            return None
        held = self._resolve_name(record["module"], holder)
        return held if held in self.classes else None

    def called_only_from_run_once_code(self, function: str) -> str | None:
        """Where `function` is called from when every call of it in the project is in code that runs once or once
        in a while: a run-once function by its name (`__init__`, loading, set-up), module-level code, a function
        itself called only from such code, a call filling a cache or under a periodic guard, a cached function.
        None when it has no caller, or one that may run more often, or when it is hot."""
        if function in self.hot:
            return None
        return self._memoized(self._run_once_callers, function, 0, lambda: self._run_once_callers_uncached(function))

    def _run_once_callers_uncached(self, function: str) -> str | None:
        def runs_once(caller: str, index: int) -> bool:
            record = self.functions[caller]
            if record.get("cached") or index in record.get("occasional", ()):
                return True  # called once in a while: once per key of a cache, or every so many steps
            name = record["name"].rpartition(".")[2]
            words = name_words(name)
            return name == "" or name in RUN_ONCE_NAMES or bool(_RUN_ONCE_WORDS.intersection(words)) \
                or "load" in words and bool(_LOADED_ONCE.intersection(words)) \
                or self.called_only_from_run_once_code(caller) is not None
        return self._where_every_caller(function, runs_once)

    def _where_every_caller(self, function: str, accepts: Callable[[str, int], bool]) -> str | None:
        """Where `function` is called from (`caller and 2 more`) when it has callers, the model sees them all,
        and `accepts(caller, index into its calls)` holds for each; None otherwise. A call made in a hook the
        caller defines and hands on (`nested`) is accepted by none: it runs when the hook does, maybe every step."""
        callers, unseen = self._callers(function)
        if not callers or unseen or not all(index not in self.functions[caller].get("nested", ())
                                            and accepts(caller, index) for caller, index, _ in callers):
            return None
        return short_name(callers[0][0]) + (f" and {len(callers) - 1} more" if len(callers) > 1 else "")

    def built_only_by_constructors(self, function: str) -> str | None:
        """Where `function` is called from when every call of it is in the constructor or the `load_state_dict` of
        an `nn.Module` or of an optimizer (a `torch.optim` class: `Optimizer`, a learning-rate scheduler), or in a
        function only those call: it runs once per model or optimizer, loops and all, as `__init__` itself does
        (`hotness.runs_once`). Not a constructor of any class: a batch or a request may be built every step."""
        if function in self.hot:
            return None
        return self._memoized(self._built_by, function, 0, lambda: self._built_by_uncached(function))

    def _built_by_uncached(self, function: str) -> str | None:
        def builds(caller: str, index: int) -> bool:
            record = self.functions[caller]
            return record["name"].rpartition(".")[2] in ("__init__", "load_state_dict") and bool(record["class"]) \
                and self._built_once_class(_record_class(record)) \
                or self.built_only_by_constructors(caller) is not None
        return self._where_every_caller(function, builds)

    def uncalled(self, function: str, unseen_callers: bool = True) -> bool:
        """Whether nothing in the project runs `function`: no call of it (see `_callers`), with no call by its name
        on an object of unknown class; not hot; not a special method (`__len__`, run by Python) nor an event hook
        (a method `on_*`, which the framework raising the event calls: `on_train_batch_end`), not a property or
        a registered hook (a decorator the model cannot see through, `decorated`), not named anywhere but to call it
        (`named`: returned, as `get_forward_backward_func` returns the schedule the training loop then calls,
        passed as in `register_on_alloc(self.clear_states)`, stored, put in a list to loop over), and no method of a
        class derived from another library's (`_framework_base`: its code may call it). Public functions no module
        of the project calls are API for code outside it, or dead; in neither case does the project show that they
        run at all, let alone every step.
        Only in a module other modules import from: a script or an example no module imports is code of its own,
        whose functions the project says nothing about. `unseen_callers=False`: calls by its name that the model
        sees run another library's function (`torch.inverse(x)` for a method `inverse`) do not count."""
        record = self.functions.get(function)
        name = function.rpartition(".")[2]
        if record is None or not record["name"] or function in self.hot or record.get("decorated") \
                or name.startswith("__") or self._used_as_value(function) \
                or record["class"] and name.startswith("on_"):  # an event hook: `on_step_end`, `on_after_backward`
            return False
        if record["module"] not in self._imported_modules():
            return False  # a script or an example of its own: the project says nothing of how it runs
        if record["class"] and self._framework_base(_record_class(record)):
            return False  # a framework's hook: `compute_loss` of a `Trainer`, `get_lr` of an `LRScheduler`
        callers, unseen = self._callers(function)
        return not callers and not (unseen and (unseen_callers or next(self._unseen_calls(function), None)))

    def _framework_base(self, class_name: str) -> bool:
        """Whether the class derives from a class of another library whose own code may call its methods (a
        `Trainer`, an `LRScheduler`, a `LightningModule`): any base the project does not define, but for the plain
        ones whose code calls none of a subclass's methods but those the model knows (`nn.Module` its `forward`)."""
        return any(base and base not in self.classes and base.rpartition(".")[2] not in _PLAIN_BASES
                   for base in self._written_bases(class_name))

    def _imported_modules(self) -> frozenset[str]:
        """The modules of the project some other module imports from (`from pkg.losses import ctc_loss`, `from
        .losses import *`): the project uses them, so a function of theirs nothing calls is one it does not use."""
        if self._imported is None:
            modules = self._imports_by_module
            found = set()
            for module, imports in modules.items():
                for imported in [*imports.values(), *(f"{star}.*" for star in self._star_imports.get(module, ()))]:
                    name = self._as_project_name(imported) or imported
                    while name and name not in modules:
                        name = name.rpartition(".")[0]
                    if name and name != module:
                        found.add(name)
            self._imported = frozenset(found)
        return self._imported

    def _used_as_value(self, qualified: str) -> bool:
        """Whether some file of the project uses the function or class `qualified` as a value, not to call it (the
        summaries' `named`): `partial(decode, ...)` names the `decode` its file defines or imports, not every
        function of that name; an attribute (`register(self.on_alloc)`), or a bare name that names nothing of the
        project where it is written, may be any of that name."""
        if self._used_as_values is None:
            resolved, by_name = set(), set()
            for summary in self.summaries.values():
                by_name.update(summary.get("named_attributes", ()))
                ambiguous = summary.get("ambiguous", ())
                for name in summary.get("named", ()):
                    found = self._resolve_name(summary["module"], name) if name not in ambiguous else None
                    if found is None:
                        by_name.add(name)
                    else:
                        resolved.add(found)
            self._used_as_values = frozenset(resolved), frozenset(by_name)
        resolved, by_name = self._used_as_values
        return qualified in resolved or qualified.rpartition(".")[2] in by_name

    def _bound_attribute_names(self) -> dict[str, set[str]]:
        """For each method's name, the attributes some class binds it to (`self._decode = self._decode_loop`)."""
        if self._bound_attributes is None:
            bound: dict[str, set[str]] = {}
            for record in self.classes.values():
                for attr, methods in record.get("bound", {}).items():
                    for method in methods:
                        bound.setdefault(method, set()).add(attr)
            self._bound_attributes = bound
        return self._bound_attributes

    def literals(self, function: str, name: str, depth: int = 0) -> frozenset | None:
        """The values the parameter `name` of `function` takes, when every call of it in the project passes a literal
        (`"time_uniform"`, `False`, `None`, a number), leaves it to a literal default, or passes on a parameter of
        its own whose values are known so: what a branch testing the parameter may see (none when nothing calls
        it: see `uncalled` for what that says). None when a call passes anything else, or when calls the model
        cannot see may run it: the function is used as a value (`functools.partial(sample, ...)`, a registry),
        decorated, a special method other than `__init__`, or a method of a class derived from another
        library's. A call by its name on an object of unknown class (`self.dist.sample(n)`) may run it: what such
        calls pass counts too. Only in the project: a library's API that its users call with other values is read
        as the project uses it (as `uncalled` reads it)."""
        return self._memoized(self._literals, (function, name), depth,
                              lambda: self._literals_uncached(function, name, depth))

    def _literals_uncached(self, function: str, name: str, depth: int) -> frozenset | None:
        record = self.functions.get(function)
        if record is None or not record["name"]:
            return None
        short = function.rpartition(".")[2]
        if short == "__init__":
            if self._built_unseen(function, record):  # objects made by calls no summary holds
                return None
        elif self._called_unseen(function, record):
            return None
        callers = self._callers_passing(function)
        if not callers:
            # Nothing the project shows runs it: it passes nothing on to the functions it calls, unless calls the
            # model cannot see may run it (a constructor: objects made from a registry; see `uncalled`).
            return frozenset() if short != "__init__" and self.uncalled(function, unseen_callers=False) else None
        if len(callers) > _MAX_LITERAL_CALLERS:
            return None
        found: set = set()
        for caller, index, bound in callers:
            value = self._branch_argument(record, name, caller, index, bound)
            if value is _LEFT_OUT and name in record.get("literals", {}):
                found.add(record["literals"][name])
                continue
            values = self._value_literals(value, caller, depth + 1) if value is not _LEFT_OUT else None
            if values is None:
                return None
            found.update(values)
        return frozenset(found)

    def _value_literals(self, value: list, function: str, depth: int) -> frozenset | None:
        """The values one value a summary writes for an argument or a store may take (see `_literal_or_parameter`),
        as `literals` gives them: a literal's own, NOT_NONE for Python data or another value never None, those of
        the parameter of `function` passed on (less None where the function ruled it out first: `["p", name, "not
        None"]`, NOT_NONE where its callers' are not known); None when not known."""
        if not value:
            return None
        if value[0] == "h" or value[0] == "n" or value[0] == "i":
            return frozenset({NOT_NONE})
        if value[0] == "l":
            return frozenset({value[1]})
        inner = self.literals(function, value[1], depth)
        ruled_out = len(value) > 2
        if inner is None:
            return frozenset({NOT_NONE}) if ruled_out else None
        return inner - {None} if ruled_out else inner

    def attribute_literals(self, class_name: str, attr: str) -> frozenset | None:
        """The values `self.attr` takes in the methods of the class, when every store into it, in the class, its
        bases and its subclasses, stores a literal or a parameter whose values `literals` knows (`self.schedule =
        schedule` in `__init__`, with every construction passing `"linear"`), and no code stores into an attribute
        of that name on another object (`model.use_cache = False`, `setattr(obj, "schedule", ...)`). None otherwise:
        a class that stores by a name it computes (`setattr(self, key, value)`), one derived from another library's
        class, which may store it too, or `training`, which `nn.Module` sets."""
        if class_name not in self.classes or attr == "training" or attr in self._attributes_stored_elsewhere():
            return None
        found: set = set()
        stored = False
        for owner in self._related_classes(class_name):
            record = self.classes[owner]
            if record.get("dynamic") or self._framework_base(owner) or f"{owner}.{attr}" in self.functions:
                return None  # (a method or a property of that name: what it returns is no store)
            written = record.get("sets", {}).get(attr)
            for function, value in ast.literal_eval(written) if written is not None else ():
                stored = True
                values = self._value_literals(value, f"{record['module']}.{function}", 0)
                if values is None:
                    return None
                found.update(values)
        return frozenset(found) if stored else None

    def passes_python_value(self, function: str, name: str, depth: int = 0) -> bool:
        """Whether some call of `function` in the project passes its parameter `name` Python data that is no
        tensor: a literal other than None, a list or tuple display, a comprehension, `.tolist()`, or a parameter of
        the caller's own that some call passes such data (a few calls up). What a branch for values that are not
        tensors (`if not torch.is_tensor(x):`) needs to run; calls that pass anything else are not counted."""
        return bool(self._memoized(self._python_values, (function, name), depth,
                                   lambda: self._passes_python_value(function, name, depth)))

    def _passes_python_value(self, function: str, name: str, depth: int) -> bool:
        record = self.functions.get(function)
        if record is None or depth > _MAX_VALUE_DEPTH:
            return False
        for caller, index, bound in self._callers_passing(function)[:_MAX_LITERAL_CALLERS]:
            value = self._branch_argument(record, name, caller, index, bound)
            if not value or value is _LEFT_OUT:
                continue
            if value[0] == "h" or value[0] == "l" and value[1] is not None:
                return True
            if value[0] == "p" and self.passes_python_value(caller, value[1], depth + 1):
                return True
        return False

    def passes_integer_tensors(self, function: str, name: str, depth: int = 0) -> bool:
        """Whether every call of `function` in the project passes its parameter `name` a tensor of integers
        (`dtypes.integer_tensor`: `upload(ids, dtype=torch.int32)`, `torch.arange(n)`, a local bound only to one),
        or a parameter of the caller's own that every call passes one (a few calls up); and some call does. Not
        where calls the model cannot see may run it (see `_called_unseen`; a module's `forward`, which most calls
        reach through `__call__`), nor where a call leaves the parameter to its default. What tells a tensor used
        as an index from a boolean mask."""
        return bool(self._memoized(self._integer_tensors, (function, name), depth,
                                   lambda: self._passes_integer_tensors(function, name, depth)))

    def _passes_integer_tensors(self, function: str, name: str, depth: int) -> bool:
        record = self.functions.get(function)
        if record is None or not record["name"] or depth > _MAX_VALUE_DEPTH \
                or function.endswith(".__init__") or self._called_unseen(function, record):
            return False
        if self._is_module_forward(record):
            return False  # a module's `forward` runs through `__call__` (`self.layers[i](x)`), mostly unseen
        callers = self._callers_passing(function)
        if not callers or len(callers) > _MAX_LITERAL_CALLERS:
            return False
        for caller, index, bound in callers:
            value = self._branch_argument(record, name, caller, index, bound)
            if not value or value is _LEFT_OUT:
                return False
            if not (value[0] == "i" or value[0] == "p" and self.passes_integer_tensors(caller, value[1], depth + 1)):
                return False
        return True

    def _callers_passing(self, function: str) -> list[tuple[str, int, bool]]:
        """The calls whose arguments reach the parameters of `function` (see `_callers`): calls by its name on
        objects of unknown class may run it, so what they pass counts too."""
        callers, unseen = self._callers(function)
        if not unseen:
            return callers
        if function not in self._unseen_callers:
            self._unseen_callers[function] = list(self._unseen_calls(function))
        return [*callers, *self._unseen_callers[function]]

    def _branch_argument(self, record: dict, name: str, caller: str, index: int, bound: bool) -> list | object:
        """What call `index` of `caller` passes the parameter `name` of the function `record` describes, as the
        summaries' `arguments` write it (`_literal_or_parameter`); `_LEFT_OUT` where the call leaves it to its
        default; [] where it passes something else."""
        calling = self.functions[caller]
        passed = [[], {}] if index in calling.get("bare", ()) else _read_arguments(calling, index)
        if passed is not None:
            return _argument(record, name, passed, bound)
        # A call passing no literal nor parameter: it may still leave `name` to its default.
        shape = _passed(calling, index)
        return _LEFT_OUT if shape is not None and _argument(record, name, shape, bound) is _LEFT_OUT else []

    def sets_attribute_alone(self, class_name: str, attr: str) -> bool:
        """Whether only `class_name` and its bases set `attr` of its objects: no subclass defines it (a method or
        a property) or assigns it, no code stores it on another object, and no class involved stores by computed
        names or derives from another library's class below `class_name`."""
        if class_name not in self.classes or attr in self._attributes_stored_elsewhere():
            return False
        own = set(self.mro(class_name))
        for owner in self._related_classes(class_name):
            record = self.classes[owner]
            if record.get("dynamic"):
                return False
            if owner not in own and (self._framework_base(owner) or f"{owner}.{attr}" in self.functions
                                     or attr in record["attrs"] or attr in record.get("sets", {})):
                return False
        return True

    def _related_classes(self, class_name: str) -> set[str]:
        """The classes whose code may run on an object of `class_name` or store into it: its subclasses, however
        far down, and the project bases of each (mixins a subclass adds included)."""
        return {owner for sub in [class_name, *self._subclasses(class_name)] for owner in self.mro(sub)}

    def _attributes_stored_elsewhere(self) -> frozenset[str]:
        """Every attribute some file of the project stores into on an object other than `self` (`stored`)."""
        if self._stored_elsewhere is None:
            self._stored_elsewhere = frozenset(attr for summary in self.summaries.values()
                                               for attr in summary.get("stored", ()))
        return self._stored_elsewhere

    def runs_in_data_loading(self, function: str) -> str | None:
        """The data loader's entry `function` runs under when it prepares samples on the host (in a loader's
        workers, before the batch reaches the model): the `__getitem__` or `__getitems__` of a subclass of
        `torch.utils.data.Dataset`, the `__iter__` of a sampler, or a function every call of which is in such code.
        None when it is hot, has no caller, or one elsewhere. (Not a function named for collating: an inference
        server collates requests too, on their way to the GPU.)"""
        if function in self.hot or function not in self._reached_by_data_loaders():
            return None
        return self._memoized(self._data_loading, function, 0, lambda: self._data_loading_uncached(function))

    def _data_loading_uncached(self, function: str) -> str | None:
        if self._data_loader_entry(function):
            return short_name(function)
        callers, unseen = self._callers(function)
        if not callers or unseen:
            return None
        entries = [self.runs_in_data_loading(caller) for caller, _, _ in callers]
        return entries[0] if all(entries) else None

    def _data_loader_entry(self, function: str) -> bool:
        record = self.functions[function]
        if not record["class"]:
            return False
        name = record["name"].rpartition(".")[2]
        if name not in ("__getitem__", "__getitems__", "__iter__"):
            return False
        kind = self._data_class_kind(_record_class(record))
        return kind == "Dataset" and name != "__iter__" or kind == "Sampler" and name == "__iter__"

    def _reached_by_data_loaders(self) -> frozenset[str]:
        """Every function a data loader's entry (see `runs_in_data_loading`) may run, through the calls of each
        function reached, resolved as `_callers` resolves them: only these can run in data loading, so the callers
        of no other function need be resolved to tell (most projects have few datasets, or none)."""
        if self._data_reach is None:
            reached = {function for function in self.functions if self._data_loader_entry(function)}
            queue = deque(reached)
            while queue:
                record = self.functions[queue.popleft()]
                for index, reference in enumerate(record["calls"]):
                    for target, _ in self._value_targets(record, reference, index):
                        if target not in reached and target in self.functions:
                            reached.add(target)
                            queue.append(target)
            self._data_reach = frozenset(reached)
        return self._data_reach

    def _data_class_kind(self, class_name: str) -> str | None:
        """"Dataset" for a subclass of `torch.utils.data.Dataset` (however far up), "Sampler" for one of a sampler;
        None for any other class, an `IterableDataset` among them: its `__iter__` may be a loop that runs a policy on
        the GPU (torchrl's collectors), not a pipeline of host samples."""
        for qualified in self._written_bases(class_name):
            if not qualified.startswith("torch.utils.data."):
                continue
            last = qualified.rpartition(".")[2]
            if last in ("Dataset", "TensorDataset", "Subset", "ConcatDataset"):
                return "Dataset"
            if last.endswith("Sampler"):
                return "Sampler"
        return None

    def answer(self, question: tuple) -> AttributePlacement | str | None:
        """The answer to a question a file's rules asked, as FileView asks and keys record them: a placement; for
        "once" where the function is called from; for "data" the data loader's entry it runs under; for "scalar"
        the attribute's number annotation; for "attribute_type" and "type" a project class; for "built_once" whether
        the class is an `nn.Module` or an optimizer."""
        kind, first, second = question
        if kind in ("once", "built", "data", "uncalled", "parameter", "result", "element", "literals",
                    "python_value", "integer_tensors", "local") and first not in self.functions:
            return None  # asked of a function the project no longer has: a question kept from an earlier run
        if kind == "once":
            return self.called_only_from_run_once_code(first)
        if kind == "built":
            return self.built_only_by_constructors(first)
        if kind == "data":
            return self.runs_in_data_loading(first)
        if kind == "uncalled":
            return "uncalled" if self.uncalled(first) else None
        if kind == "literals":
            return _written_literals(self.literals(first, second))
        if kind == "python_value":
            return "passed" if self.passes_python_value(first, second) else None
        if kind == "integer_tensors":
            return "passed" if self.passes_integer_tensors(first, second) else None
        if kind == "attribute_literals":
            return _written_literals(self.attribute_literals(first, second)) if first in self.classes else None
        if kind == "alone":
            return "alone" if self.sets_attribute_alone(first, second) else None
        if kind == "parameter":
            return self.parameter(first, second)
        if kind == "result":
            return self.call_result(first, second)
        if kind == "element":
            index, _, reference = second.partition(":")
            return self._element(int(index), ["c", reference], first, 0)
        if kind == "scalar":
            return self.number_field(first, second) if first in self.classes else None
        if kind == "attribute_type":
            return self.attribute_type(first, second) if first in self.classes else None
        if kind == "local":
            typed = self.functions[first].get("locals", {}).get(second)
            if typed == f"p:{second}":
                return self._parameter_class(first, second)
            return self._held_class(self.functions[first], typed) if typed else None
        if kind == "type":
            resolved = self._resolve_name(first, second)
            return resolved if resolved in self.classes else None
        if kind == "built_once":
            return "built_once" if first in self.classes and self._built_once_class(first) else None
        return self.attribute(first or None, second)

    def value_names(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """Names through which values may place something (see FileView._may_receive_values): those of the functions
        calls pass a value to, those of the functions that return one, and the attributes assigned one."""
        if self._value_names is None:
            passed, returned, assigned = set(), set(), set()
            for name, record in self.functions.items():
                for index in record.get("passes", ()):
                    passed.add(written_name(record["calls"][index]))
                if any(record.get("returns", ())):
                    returned.add(name.rpartition(".")[2])
            for record in self.classes.values():
                assigned.update(attr for attr, flows in record.get("flows", {}).items()
                                if any(value for _, value in flows))
            # A call may name the function by a name an import gave it: `y(v)` passes `v` to `z` imported as `y`.
            aliases = self._aliases()
            returned.update(alias for name in list(returned) for alias in aliases.get(name, ()))
            passed.update(name for name, found in aliases.items() if not found.isdisjoint(passed))
            self._value_names = (frozenset(passed), frozenset(returned), frozenset(assigned))
        return self._value_names

    def _callers(self, function: str) -> tuple[list[tuple[str, int, bool]], bool]:
        """The calls in the project that may run `function`: (caller, index into its calls, whether the call binds
        the first parameter); and whether it may have callers the model cannot see: a method some call written
        with its name reaches on an object of unknown class (`self.model_state.prepare_attn(...)`, resolved to no
        function). Only the calls written with its name (or, for `__init__`, the name of its class or of a
        subclass that inherits it) are resolved."""
        known = self._callers_of.get(function)
        if known is not None:
            return known
        if self._calls_by_name is None:
            if self._calls_index is None:
                by_name: dict[str, list[tuple[str, int, str]]] = {}
                for caller, record in self.functions.items():
                    for index, reference in enumerate(record["calls"]):
                        by_name.setdefault(written_name(reference), []).append((caller, index, reference))
                self._calls_index = by_name
            self._calls_by_name = dict(self._calls_index)  # names are taken out of it as their calls are resolved
        owner, _, name = function.rpartition(".")
        names = {name}
        if name == "forward" and owner in self.classes:
            # `self.visual(...)` of a `self.visual = Vision()`, with `Vision` this class or a subclass inheriting its
            # `forward`
            holders = self._module_holders()
            for held in [owner, *self._subclasses(owner)]:
                if held == owner or self._dispatch(held, name, overrides=False) == [(function, held)]:
                    names.update(holders.get(held, ()))
        if name == "__init__":
            queue = [owner]
            while queue:
                class_name = queue.pop()
                names.add(class_name.rpartition(".")[2])
                queue.extend(sub for sub in self.subclasses.get(class_name, ())
                             if f"{sub}.__init__" not in self.functions and sub.rpartition(".")[2] not in names)
        names.update(alias for written in list(names) for alias in self._aliases().get(written, ()))
        if owner in self.classes:
            names.update(self._bound_attribute_names().get(name, ()))  # called as `self._decode(...)`
        for written in names:
            # Every call written with this name is resolved once, and filed under each function it may run.
            calls = self._calls_by_name.pop(written, None)
            for caller, index, reference in calls or ():
                targets = self._value_targets(self.functions[caller], reference, index)
                for target, bound in targets:
                    self._incoming.setdefault(target, []).append((caller, index, bound))
                if not targets and reference[:2] in ("d:", "a:", "p:", "sa", "rc"):
                    self._unresolved_names.add(written)  # `obj.name(...)` on an object of unknown class
                    bound = not _on_an_objects_class(reference)  # (`type(obj).name(obj, ...)` passes `obj` first)
                    self._unresolved_calls.setdefault(written, []).append((caller, index, bound))
        # (`Base.__init__(self)` on no project class says nothing of who builds this class's objects.)
        unseen = bool(self.functions[function]["class"]) and not (names - {"__init__"}).isdisjoint(
            self._unresolved_names)
        found = self._callers_of[function] = (self._incoming.get(function, []), unseen)
        if unseen:
            self._unseen_names[function] = sorted(names - {"__init__"})
        return found

    def _unseen_calls(self, function: str) -> Iterator[tuple[str, int, bool]]:
        """The calls by a name on objects of unknown class that may run `function` (a method `_callers` found such
        calls for): not those of another library's module, nor those whose arguments the method cannot bind.
        A generator: `uncalled` needs only the first."""
        record = self.functions[function]
        for name in self._unseen_names.get(function, ()):
            for call in self._unresolved_calls.get(name, ()):
                if not self._calls_outside(call) and _fits(record, self.functions[call[0]], call[1]):
                    yield call

    def _aliases(self) -> dict[str, frozenset[str]]:
        """A name as defined -> every name imports give it, however many times renamed (`from .b import z as x`,
        then `from .a import x as y`: `z` -> {`x`, `y`})."""
        if self._import_aliases is None:
            direct: dict[str, set[str]] = {}
            for imports in self._imports_by_module.values():
                for local, qualified in imports.items():
                    written = qualified.rpartition(".")[2]
                    if local != written:
                        direct.setdefault(written, set()).add(local)
            closed: dict[str, frozenset[str]] = {}
            for written in direct:
                found: set[str] = set()
                pending = [written]
                while pending:
                    for alias in direct.get(pending.pop(), ()):
                        if alias not in found and alias != written:
                            found.add(alias)
                            pending.append(alias)
                closed[written] = frozenset(found)
            self._import_aliases = closed
        return self._import_aliases

    def _calls_outside(self, call: tuple[str, int, bool]) -> bool:
        """Whether a call by a name on an object the model cannot type is one of another library's module
        (`random.sample(...)`, `np.random.sample(...)`: written on a name the caller imports from outside the
        project), which runs no project function."""
        caller, index, _ = call
        record = self.functions[caller]
        reference = record["calls"][index]
        if not reference.startswith("d:"):
            return False
        imported = self._imports(record["module"]).get(reference[2:].partition(".")[0])
        return imported is not None and self._as_project_name(imported) is None

    def _module_holders(self) -> dict[str, set[str]]:
        """For each `nn.Module` class, the names of the attributes of project classes that may hold one (typed as
        the class or one of its bases): calls through them run its `forward`."""
        if self._holders is None:
            holders: dict[str, set[str]] = {}
            for class_name in self.classes:
                record = self.classes[class_name]
                for attr in {**record["types"], **record.get("handed", {}), **record.get("made", {})}:
                    holder = self.attribute_type(class_name, attr)
                    if holder is None or not self._is_module_class(holder):
                        continue
                    queue = [holder]
                    while queue:
                        held = queue.pop()
                        if attr not in holders.setdefault(held, set()):
                            holders[held].add(attr)
                            queue.extend(self.subclasses.get(held, ()))
            self._holders = holders
        return self._holders

    def attribute_type(self, class_name: str, attr: str) -> str | None:
        """The project class of `<object of class_name>.attr`, by its annotation or the class assigned to it; where
        no type is written, by the annotation of a parameter assigned to it (`self.model = model`) or the class of
        what a factory assigned to it returns (`self.state = init_state(...)`)."""
        written = self._written_type(class_name, attr)
        if written is not None:
            resolved = self._resolve_name(written[0], written[1])
            return resolved if resolved in self.classes else None
        for owner in self.mro(class_name):
            record = self.classes[owner]
            handed = record.get("handed", {}).get(attr)
            if handed:
                resolved = self._resolve_name(record["module"], handed)
                if resolved in self.classes:
                    return resolved
            factory = record.get("made", {}).get(attr)
            if factory:
                found = self._resolve_name(record["module"], factory)
                return self._result_class(found) if found in self.functions else None
        return None

    def number_field(self, class_name: str, attr: str) -> str | None:
        """`int`, `float` or `bool` when the first class of `class_name`'s MRO that writes a type for `attr` writes
        that number (`top_p: float`, `Optional[int]`; not `Union[float, Tensor]` nor `List[int]`), and no class
        up to it assigns `attr` a tensor it places (a subclass's `self.scale = torch.ones(1, device="cuda")` under
        a base's `scale: float`), nor does the model place it otherwise (`self.scale = scale` of a tensor every
        constructor call passes). Values nothing places (`self.rank = int(env) // n`, `envs.RANK`) do not count."""
        if self.attribute(class_name, attr) is not None:  # (the MRO's GPU and host placements among them)
            return None
        for owner in self.mro(class_name):
            record = self.classes[owner]
            if record["attrs"].get(attr, ("",))[0] == "mixed":
                return None
            if record["types"].get(attr):
                return record.get("numbers", {}).get(attr)
        return None

    def _written_type(self, class_name: str, attr: str) -> tuple[str, str] | None:
        """(the module of the first class of the MRO that writes a type for `attr`, that type as written)."""
        for owner in self.mro(class_name):
            written = self.classes[owner]["types"].get(attr)
            if written:
                return self.classes[owner]["module"], written
        return None

    def placement_digest(self) -> str:
        """A digest of every attribute placement and class hierarchy of the project: what a finding on an attribute
        of another file's class may depend on."""
        if self._placement_digest is None:
            digest = hashlib.blake2b(digest_size=12)
            for qualified in sorted(self.attribute_placements):
                for attr, placed in sorted(self.attribute_placements[qualified].items()):
                    digest.update(f"{qualified}.{attr}={placed.placement}:{placed.where};".encode())
            for qualified in sorted(self.classes):
                digest.update(f"{qualified}<{self.classes[qualified]['resolved_bases']}>".encode())
            digest.update(repr((sorted(self.gpu_attributes), self.module_inputs_on_gpu)).encode())
            self._placement_digest = digest.hexdigest()
        return self._placement_digest

    # -- per file --

    def view(self, path: str) -> FileView:
        return FileView(self, os.path.abspath(path))


# How deep values are followed (calls, parameters, assignments: each hop takes one to three levels), and the most
# calls a parameter's placement is gathered from: a helper called from everywhere is placed by none of them.
_MAX_VALUE_DEPTH = 24
_MAX_CALLERS = 12
# The most calls whose arguments `literals` reads for one parameter: a method's name may be common (`sample`).
_MAX_LITERAL_CALLERS = 60

_TOO_COMMON_ATTRIBUTES = frozenset({"data", "weight", "bias", "grad", "device", "dtype", "shape", "value", "values",
                                    "input", "output", "state", "buffer", "cache", "mask", "tensor"})


def _distinctive(attr: str) -> bool:
    """An attribute name that says what it holds well enough to be taken, by its name alone, for the same tensor
    wherever it is read: not `out`, `value` or `buffer`."""
    return len(attr) >= 4 and attr not in _TOO_COMMON_ATTRIBUTES and "_" in attr.strip("_")


def _read_arguments(record: dict, index: int) -> list | None:
    """What the call `index` of the function `record` describes passes, as the summary's `arguments` writes it
    ([positional, keywords]); None for a call that passes no literal nor parameter."""
    written = record.get("arguments", {}).get(index)
    return ast.literal_eval(written) if written is not None else None


_LEFT_OUT = ["left out"]  # a parameter a call does not pass (see `_argument`)


def _passed(record: dict, index: int) -> list | None:
    """What the call `index` of the function `record` describes passes ([positional, keywords], as `passes`
    holds it); for a call that passes nothing the model places, which parameters it passes, each unknown ([]),
    so that those it leaves out take their defaults."""
    passed = record.get("passes", {}).get(index)
    if passed is not None:
        return passed
    if index in record.get("bare", ()):
        return [[], {}]
    shape = record.get("shapes", {}).get(index)
    if shape is None:
        return None
    count, _, keywords = shape.partition(":")
    return [[[]] * int(count), {keyword: [] for keyword in keywords.split(",") if keyword}]


def _argument(record: dict, name: str, passed: list, bound: bool) -> list | None:
    """What a call passes to the parameter `name` of the function `record` describes, as the caller's summary
    holds it (`passed`: [positional, keywords]): the value written for it, `_LEFT_OUT` when the call leaves it to
    its default, None when `*args` or `**kwargs` (or more positional arguments than the function names) may."""
    positional, keywords = passed
    if name in keywords:
        return keywords[name]
    order = record.get("order", [])
    position = order.index(name) if name in order else -1
    if position >= 0 and not bound and record.get("bound") and not record.get("classmethod"):
        position += 1  # `Class.method(obj, x)`: the object comes first
    if 0 <= position < len(positional):
        return positional[position]
    if "*" in keywords or positional[len(order):]:
        return None
    return _LEFT_OUT


def _on_an_objects_class(reference: str) -> bool:
    """Whether a call is of a method on an object's class (`type(obj).method(obj, x)`, `obj.__class__.method(obj,
    x)`), which takes the object as its first argument."""
    if reference.startswith("rc:"):
        receiver = reference[3:].rpartition("@.")[0]
        return receiver == "c:type" or receiver.endswith("__class__")
    receiver = reference.partition(":")[2].rpartition(".")[0]
    return receiver == "__class__" or receiver.endswith(".__class__")


def _fits(record: dict, caller: dict, index: int) -> bool:
    """Whether call `index` of the function `caller` describes may call the method `record` describes, on an object
    or on a class with the object passed first (`type(batch).filter_batch(batch, ids)`), by what it passes: not
    with more positional arguments than it takes, a keyword it does not have, or without one it requires (Python
    would raise). True where the call's arguments are not known, or a decorator may change what the method takes."""
    passed = _passed(caller, index)
    signature = record.get("sig") if not record.get("decorated") else None
    if passed is None or signature is None:
        return True
    required, keyword_only, keyword_required, varargs, varkw = signature
    positional, keywords = passed
    if "*" in keywords:
        return True  # `*args` or `**kwargs`: anything may be passed
    order = record.get("order", [])
    if not varkw and not set(keywords) <= {*order, *keyword_only} \
            or not all(name in keywords for name in keyword_required):
        return False
    unbound = record.get("bound", False) and not record.get("classmethod", False)
    counts = (len(positional), len(positional) - 1) if unbound else (len(positional),)  # (the object first)
    return any(0 <= count and (count <= len(order) or varargs)
               and all(name in keywords for name in order[count:required]) for count in counts)


def _name_nested_calls(class_node: ast.ClassDef, named: dict[str, None]) -> None:
    """Add to `named` the functions the methods of a class defined in a function call by a bare name: not the
    methods' own parameters or locals, nor builtins."""
    local: set[str] = set()
    called: list[str] = []
    for node in ast.walk(class_node):
        kind = node.__class__
        if kind is ast.Name and node.ctx.__class__ is ast.Store:  # type: ignore[attr-defined]
            local.add(node.id)  # type: ignore[attr-defined]
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef or kind is ast.Lambda:
            local.update(arg.arg for arg in parameters(node.args))  # type: ignore[attr-defined]
        elif kind is ast.Call and node.func.__class__ is ast.Name:  # type: ignore[attr-defined]
            called.append(node.func.id)  # type: ignore[attr-defined]
    for name in called:
        if name not in local and not hasattr(builtins, name):
            named[name] = None


def _call_index(record: dict, reference: str) -> int:
    """The index of the call `reference` names among the calls of the function `record` describes, when the
    function makes only one call by that name; -1 otherwise, which binds no arguments (see `_fits`). By the name,
    not the reference: a value may name a call otherwise than the function's calls keep it (`a:make_ids` for
    the `rc:...@.make_ids` of `self.batch_of().make_ids()`, typed once the function's summary was settled)."""
    name = written_name(reference)
    found = [index for index, call in enumerate(record["calls"]) if written_name(call) == name]
    return found[0] if len(found) == 1 else -1


def _element_returned(returned: list, index: int) -> list:
    """The value of element `index` of what a `return` returns: of a tuple written out, its element there (unknown
    past its end); of anything else (a tensor), the whole."""
    if returned and returned[0] == "tuple":
        return returned[1 + index] if len(returned) > 1 + index else []
    return returned


def _agreed(found: list[AttributePlacement | None]) -> AttributePlacement | None:
    """The first of `found` when there is one and all are placed, in one place; None otherwise."""
    if not found or any(placed is None for placed in found):
        return None
    return found[0] if len({placed.placement for placed in found if placed is not None}) == 1 else None


def _written_literals(values: frozenset | None) -> str | None:
    """Literal values as an answer keeps them (a string: see FileView.literals); None for unknown."""
    return repr(sorted(values, key=repr)) if values is not None else None


def _method_on_a_name(reference: str) -> tuple[str, str] | None:
    """(`x`, `m`) for a call `x.m(...)` on a bare name (`d:x.m`: a local, a parameter with no annotation, a module,
    a class); None for any other call."""
    if not reference.startswith("d:") or reference.count(".") != 1:
        return None
    name, _, method = reference[2:].partition(".")
    return name, method


def written_name(reference: str) -> str:
    """The name a call is written with, from its reference: `sa:buffer.copy_to` -> `copy_to`, `n:f` -> `f`."""
    return reference.rpartition(".")[2].rpartition(":")[2]


def _function_key(module: str, name: str) -> str:
    """How `ProjectModel.functions` keys the function `name` (a qualname in `module`; "" for its module-level code)."""
    return f"{module}.{name}" if name else f"{module}.<module>"


def _record_class(record: dict) -> str:
    """The qualified name of the class the function `record` describes is a method of; "" for a plain function."""
    return f"{record['module']}.{record['class']}" if record["class"] else ""


def short_name(qualified: str) -> str:
    """`pkg.mod.Class.method` -> `Class.method`; `pkg.mod.function` -> `function`."""
    parts = qualified.split(".")
    for index, part in enumerate(parts):
        if part[:1].isupper():
            return ".".join(parts[index:])
    return parts[-1]


_JOURNALED: set[str] = set()  # the names of the methods `_journaled` keeps the answers of


def _journaled(method):
    """A FileView method that asks the project model: each answer is kept in the view's journal, which a run leaves
    for the next (Project.save), so that a file re-checked against the same model is answered without building it
    (Project.view). Its arguments are plain values (names, question tuples), so that they key the journal."""
    name = method.__name__
    _JOURNALED.add(name)

    @functools.wraps(method)
    def answered(self, *args):
        key = (name, *args)
        if key in self.journal:
            return self.journal[key]
        answer = self.journal[key] = method(self, *args)
        return answer
    return answered


def _read_literals(answer) -> frozenset | None:
    return frozenset(ast.literal_eval(answer)) if isinstance(answer, str) else None


class FileView:
    """What the project model says about one file, asked by its rules.

    Every answer that depends on the model goes through a `_journaled` method. A view made from the last run's
    journal (`journal`, with the model not built: `model` None and `build` making it) answers from there, and
    builds the model only for a question the last run did not ask."""

    def __init__(self, model: ProjectModel | None, path: str, summary: dict | None = None,
                 journal: dict | None = None, build: Callable[[], ProjectModel] | None = None) -> None:
        self._model = model
        self._build = build
        self.path = path
        if model is not None:
            summary = model.summaries.get(path)
        self.module = summary["module"] if summary else None
        self.summary = summary
        # What this view was asked of the model, with the answers, by method and arguments (see `_journaled`).
        self.journal: dict[tuple, object] = journal if journal is not None else {}
        # The questions about values asked through this view: a file's findings depend on their answers (key).
        self.asked: set[tuple[str, ...]] = set()
        self._evidence: TreeEvidence | None = None

    def ask_again(self, question: tuple) -> None:
        """Ask a question of another view's journal (its method's name, then its arguments) of this view's model,
        so that this view's journal holds the answer."""
        if question and question[0] in _JOURNALED:
            getattr(self, question[0])(*question[1:])

    @property
    def model(self) -> ProjectModel:
        if self._model is None:
            assert self._build is not None, "a view without a model is made with a way to build it"
            self._model = self._build()
        return self._model

    def qualified(self, local_qualname: str) -> str:
        return f"{self.module}.{local_qualname}"

    @_journaled
    def hot(self, local_qualname: str) -> Hot | None:
        if self.module is None:
            return None
        return self.model.hot.get(self.qualified(local_qualname))

    def class_of(self, local_class: str) -> str | None:
        return self.qualified(local_class) if self.module is not None else None

    def built_once(self, local_class: str) -> bool:
        """Whether the class (`Outer.Inner` in this file) is an `nn.Module` or an optimizer (a `torch.optim`
        class): one object per model or per training run."""
        qualified = self.class_of(local_class)
        return qualified is not None and self._ask(("built_once", qualified, "")) == "built_once"

    def resolve_type(self, dotted: str) -> str | None:
        """The project class `dotted`, as written in this file, names (through imports and re-exports)."""
        if self.module is None:
            return None
        resolved = self._ask(("type", self.module, dotted))
        return resolved if isinstance(resolved, str) else None

    def attribute(self, class_name: str | None, attr: str) -> AttributePlacement | None:
        placed = self._ask(("attribute", class_name or "", attr))
        return placed if isinstance(placed, AttributePlacement) else None

    def attribute_type(self, class_name: str | None, attr: str) -> str | None:
        """The class of `<object of class_name>.attr`, when the project defines it (`self.x = Buffer(...)`, or an
        annotation)."""
        held = self._ask(("attribute_type", class_name, attr)) if class_name else None
        return held if isinstance(held, str) else None

    def local_class(self, local_qualname: str, name: str) -> str | None:
        """The project class of the object the local `name` of the function holds, when every assignment to it in
        the function makes one of that class (`meta = Meta(...)`, `meta = self._prepare(...)` of a method whose
        result is annotated or made so; see `_local_type`)."""
        if self.module is None:
            return None
        held = self._ask(("local", self.qualified(local_qualname), name))
        return held if isinstance(held, str) else None

    def scalar_attribute(self, class_name: str | None, attr: str) -> str | None:
        """`int`, `float` or `bool` when `<object of class_name>.attr` is annotated so in the project (a config
        dataclass's field) and holds no tensor the project places (ProjectModel.number_field)."""
        answer = self._ask(("scalar", class_name, attr)) if class_name else None
        return answer if isinstance(answer, str) else None

    def parameter(self, local_qualname: str, name: str) -> AttributePlacement | None:
        """Where parameter `name` of the function lives, by what every call of it in the project passes."""
        if self.module is None:
            return None
        placed = self._ask(("parameter", self.qualified(local_qualname), name))
        return placed if isinstance(placed, AttributePlacement) else None

    def call_result(self, local_qualname: str, call: ast.Call) -> AttributePlacement | None:
        """Where the result of `call`, made in the function, lives, by what the project functions it may call
        return."""
        reference = self._reference(local_qualname, call)
        placed = self._ask(("result", self.qualified(local_qualname), reference)) if reference else None
        return placed if isinstance(placed, AttributePlacement) else None

    def call_element(self, local_qualname: str, call: ast.Call, index: int) -> AttributePlacement | None:
        """Where element `index` of the result of `call`, made in the function, lives (`indices, meta =
        self._prepare(...)`), by what the project functions it may call return there."""
        reference = self._reference(local_qualname, call)
        placed = self._ask(("element", self.qualified(local_qualname), f"{index}:{reference}")) if reference else None
        return placed if isinstance(placed, AttributePlacement) else None

    def _reference(self, local_qualname: str, call: ast.Call) -> str | None:
        """The reference the summary writes `call`, made in the function, with (see `call_reference`)."""
        # The function is this file's: its record is the summary's, as the model holds it.
        record = self.summary["functions"].get(local_qualname) if self.summary is not None else None
        return call_reference(call, record["params"], record.get("self") or None) if record is not None else None

    def called_only_from_run_once_code(self, local_qualname: str) -> str | None:
        """Where the function is called from, when every call of it in the project is in code that runs once."""
        if self.module is None:
            return None
        where = self._ask(("once", self.qualified(local_qualname), ""))
        return where if isinstance(where, str) else None

    def built_only_by_constructors(self, local_qualname: str) -> str | None:
        """Where the function is called from, when only the constructors of `nn.Module`s and optimizers call it
        (see ProjectModel.built_only_by_constructors)."""
        if self.module is None:
            return None
        where = self._ask(("built", self.qualified(local_qualname), ""))
        return where if isinstance(where, str) else None

    def uncalled(self, local_qualname: str) -> bool:
        """Whether nothing in the project runs the function (see ProjectModel.uncalled)."""
        return self.module is not None and self._ask(("uncalled", self.qualified(local_qualname), "")) == "uncalled"

    def literals(self, local_qualname: str, name: str) -> frozenset | None:
        """The values the parameter `name` of the function takes, when every call of it in the project passes a
        literal (see ProjectModel.literals); None when not known."""
        if self.module is None:
            return None
        return _read_literals(self._ask(("literals", self.qualified(local_qualname), name)))

    def attribute_literals(self, local_class: str, attr: str) -> frozenset | None:
        """The values `self.attr` takes in the class's methods, when every store into it stores a literal (see
        ProjectModel.attribute_literals); None when not known."""
        class_name = self.class_of(local_class)
        return _read_literals(self._ask(("attribute_literals", class_name, attr))) if class_name else None

    def passes_python_value(self, local_qualname: str, name: str) -> bool:
        """Whether some call of the function passes its parameter `name` Python data that is no tensor (see
        ProjectModel.passes_python_value)."""
        return self.module is not None \
            and self._ask(("python_value", self.qualified(local_qualname), name)) == "passed"

    def passes_integer_tensors(self, local_qualname: str, name: str) -> bool:
        """Whether every call of the function passes its parameter `name` a tensor of integers (see
        ProjectModel.passes_integer_tensors)."""
        return self.module is not None \
            and self._ask(("integer_tensors", self.qualified(local_qualname), name)) == "passed"

    def sets_attribute_alone(self, class_name: str, attr: str) -> bool:
        """Whether only the project class `class_name` and its bases set `attr` of its objects (see
        ProjectModel.sets_attribute_alone)."""
        return self._ask(("alone", class_name, attr)) == "alone"

    def runs_in_data_loading(self, local_qualname: str) -> str | None:
        """The data loader's entry the function runs under, when it prepares samples on the host (see
        ProjectModel.runs_in_data_loading)."""
        if self.module is None:
            return None
        where = self._ask(("data", self.qualified(local_qualname), ""))
        return where if isinstance(where, str) else None

    def _ask(self, question: tuple[str, str, str]) -> AttributePlacement | str | None:
        """The model's answer to `question`, which the file's findings then depend on (see `key`)."""
        self.asked.add(question)
        return self._answer(question)

    @_journaled
    def _answer(self, question: tuple[str, str, str]) -> AttributePlacement | str | None:
        return self.model.answer(question)

    @_journaled
    def device_context(self, local_qualname: str) -> str | None:
        """Where a `with torch.device(...)` that may be open around this function is, if the model sees one."""
        if self.module is None:
            return None
        return self.model.under_device_context.get(self.qualified(local_qualname))

    @_journaled
    def opened_for(self) -> frozenset[str]:
        """The facts the model knows of this file that its own words cannot show: "hotness" when a function of it
        is hot through calls, "placement" when it reads an attribute some class of the project places on the GPU.
        The text tests of the rules that ask for those facts then give way to their word tests alone."""
        return self._facts_the_text_cannot_show()

    @_journaled
    def placement_digest(self) -> str:
        return self.model.placement_digest()

    def evidence(self) -> TreeEvidence | None:
        """What the file's tree shows about devices, streams and collectives (see facts.TreeEvidence)."""
        if self._evidence is None and self.summary is not None and "evidence" in self.summary:
            self._evidence = TreeEvidence.from_data(self.summary["evidence"])
        return self._evidence

    def gate(self, settings, text: str) -> FileGate | None:
        """What the file's summary tells the text tests before parsing (see FileGate); None without a summary.
        The run's `gpu-device-names` are not in the cached summary: a file naming the last part of one is open."""
        evidence = self.evidence()
        if evidence is None:
            return None
        opened = self.opened_for()
        gpu = evidence.gpu or "placement" in opened or any(name.rsplit(".", 1)[-1] in text for name in settings.gpu_device_names)
        configured = frozenset(settings.hot_functions)
        return FileGate(gpu=gpu, hot_names="hotness" in opened or any(is_hot_function(name, configured)
                                                                         for name in evidence.defined))

    def _facts_the_text_cannot_show(self) -> frozenset[str]:
        if self.summary is None:
            return frozenset()
        facts = set()
        if any((hot := self.hot(name)) and len(hot.chain) > 1 for name in self.summary["functions"] if name):
            facts.add("hotness")
        if not self.model.gpu_attribute_names.isdisjoint(self.summary["reads"]) or self._uses_gpu_holding_class() \
                or self._may_receive_values() or self._defines_module_forward():
            facts.add("placement")
        return frozenset(facts)

    def _may_receive_values(self) -> bool:
        """Whether the model may place a value in this file through values (a superset, by names alone): one of its
        functions has the name of a function some call passes a value to or a parameter whose default a call may
        take (`device="cpu"`), one of its calls has the name of a function that returns a value, or it reads an
        attribute of that name that some class is assigned a value."""
        passed, returned, assigned = self.model.value_names()
        for name, record in self.summary["functions"].items():
            if name.rpartition(".")[2] in passed or name.endswith("__init__") \
                    and record["class"].rpartition(".")[2] in passed:
                return True
            if any(value != ["none"] for value in record.get("defaults", {}).values()):
                return True  # a call that leaves the parameter out passes its default
            if any(written_name(reference) in returned for reference in record["calls"]):
                return True
        return not assigned.isdisjoint(self.summary["reads"])

    def _defines_module_forward(self) -> bool:
        """Whether the file defines the `forward` of an `nn.Module` whose inputs the model may place (see
        ProjectModel.takes_module_inputs)."""
        return self.model.module_inputs_on_gpu and any(self.model.takes_module_inputs(self.qualified(name))
                                                       for name in self.summary["functions"] if name)

    def _uses_gpu_holding_class(self) -> bool:
        """Whether the file's classes hold, or its functions take, objects of a class that places an attribute on
        the GPU (`self.input_ids = CpuGpuBuffer(...)`, `def plan(self, batch: ForwardBatch)`), or derive from one."""
        module = self.module
        written = [written for record in self.summary["classes"].values()
                   for written in [*record["types"].values(), *record.get("handed", {}).values(), *record["bases"]]
                   if written]
        written += [annotation for record in self.summary["functions"].values()
                    for annotation in record["params"].values()]
        factories = [made for record in self.summary["classes"].values() for made in record.get("made", {}).values()]
        for dotted in [*written, *factories]:
            resolved = self.model._resolve_name(module, dotted)
            if resolved in self.model.functions:  # `self.state = init_state(...)`: the class it returns
                resolved = self.model._result_class(resolved)
            if resolved in self.model.classes and any(
                    self.model.classes.get(owner, {}).get("async_targets")
                    or any(placed.placement == GPU for placed in self.model.attribute_placements.get(owner, {}).values())
                    for owner in self.model.mro(resolved)):
                return True
        return False

    def key(self, asked: tuple = ()) -> str:
        """What the findings of this file depend on in the model, as a digest: the hotness (and chains) of its
        functions, every attribute placement of the project, the facts its text cannot show, and the answers to the questions about values its
        rules `asked` (see `asked`). A findings cache entry is valid only with the same key."""
        digest = hashlib.blake2b(digest_size=12)
        if self.summary is not None:
            for name in sorted(self.summary["functions"]):
                hot = self.hot(name) if name else None
                digest.update(f"{name}={hot.chain if hot else ''};".encode())
                context = self.device_context(name) if name else None
                digest.update(f"{context or ''};".encode())
        digest.update(self.placement_digest().encode())
        digest.update(f"opened={sorted(self.opened_for())};".encode())  # the rules' text tests give way to these
        for question in asked:
            answer = self._answer(tuple(question))
            shown = f"{answer.describe()}{answer.device}{answer.typed}" if isinstance(answer, AttributePlacement) else answer or ""
            digest.update(f"{question}={shown};".encode())
        return digest.hexdigest()


# ----- building and caching ---------------------------------------------------------------------------------------


def _read_cached(file: Path | None):
    """What `_write_cached` wrote to `file`; None when there is no file, or it cannot be read as one."""
    if file is None:
        return None
    with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
        data = marshal.loads(file.read_bytes())
        _touch(file)
        return data
    return None


def _touch(*files: Path | None) -> None:
    """Mark cache files used (their modification time now): the findings cache's pruning deletes only the files
    of the cache folder no run has used for a week (an earlier version's, see cache.STALE_AFTER_SECONDS)."""
    for file in files:
        if file is not None:
            with contextlib.suppress(OSError):  # gone, or a read-only cache: nothing to keep
                os.utime(file)


def _write_cached(file: Path, data) -> None:
    """Replace `file` in the cache folder with `data` (plain values), in one rename; a cache that cannot be written
    only costs time next run."""
    with contextlib.suppress(OSError, ValueError):  # ValueError: a value marshal cannot write
        payload = marshal.dumps(data)
        make_cache_folder(file.parent)
        handle, temp = tempfile.mkstemp(dir=file.parent, suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
        os.replace(temp, file)


_CODE_KEY = ""  # in the summary cache's file, beside the paths: the fingerprint of the code that made them


class SummaryCache:
    """Summaries by file, valid while the file's size and modification time are unchanged; in `_SUMMARY_SHARDS`
    marshal files, a file's shard chosen by its path.

    Each summary is kept marshalled on its own, so that loading a shard costs little, a summary is decoded only
    when asked for, and saving writes the unchanged ones back as they were read. A shard is read when a path of
    it is first asked for, and written only when one of its summaries changed: after an edit to one file, a run
    reads and writes one shard, not every summary of the project."""

    def __init__(self, folder: Path | None, layout: str = "") -> None:
        # Module names depend on the project root and source roots: each layout has its own files.
        name = hashlib.blake2b(f"{__version__}:{SUMMARY_VERSION}:{_SUMMARY_CACHE_FORMAT}:{layout}".encode(),
                               digest_size=8).hexdigest()
        self.stem = f"summaries-{name}"
        self.folder = folder
        self.shards: dict[int, dict[str, tuple[int, int, bytes]]] = {}
        self.changed: set[int] = set()  # the shards to write

    def entries(self, path: str) -> dict[str, tuple[int, int, bytes]]:
        """The entries of the shard `path` belongs in, read when first asked for."""
        index = _shard_of(path)
        shard = self.shards.get(index)
        if shard is None:
            shard = self.shards[index] = {}
            cached = _read_cached(self._file(index))
            # Summaries made by other h2dlint code are not taken, whatever its version says (a development build).
            if isinstance(cached, dict) and cached.get(_CODE_KEY) == code_fingerprint():
                shard.update((path, entry) for path, entry in cached.items() if path != _CODE_KEY)
        return shard

    def _file(self, index: int) -> Path | None:
        return self.folder / f"{self.stem}-{index:02d}.marshal" if self.folder is not None else None

    def lookup(self, path: str, size: int, mtime_ns: int) -> dict | None:
        entry = self.entries(path).get(path)
        if entry is not None and entry[0] == size and entry[1] == mtime_ns:
            return _decoded(entry[2])
        return None

    def stamp(self, path: str) -> tuple[int, int] | None:
        """The size and modification time of the file when its cached summary was made."""
        entry = self.entries(path).get(path)
        return (entry[0], entry[1]) if entry is not None else None

    def cached(self, path: str) -> dict | None:
        """The cached summary of `path`, whatever the file's state now."""
        entry = self.entries(path).get(path)
        return _decoded(entry[2]) if entry is not None else None

    def store(self, path: str, size: int, mtime_ns: int, summary: dict) -> None:
        self.store_encoded(path, size, mtime_ns, marshal.dumps(summary))

    def store_encoded(self, path: str, size: int, mtime_ns: int, data: bytes) -> None:
        if self.folder is None:
            return  # nowhere to keep it: not held in memory either
        self.entries(path)[path] = (size, mtime_ns, data)
        self.changed.add(_shard_of(path))

    def save(self, live: set[str]) -> None:
        """Write the shards that changed; the summaries of files not in `live` are dropped from the shards read."""
        if self.folder is None:
            return
        written = set()
        for index, shard in self.shards.items():
            dead = [path for path in shard if path not in live]
            for path in dead:
                del shard[path]
            if dead or index in self.changed:
                _write_cached(self._file(index), {**shard, _CODE_KEY: code_fingerprint()})  # type: ignore[arg-type]
                written.add(index)
        self.changed.clear()
        # The shards this run did not read are this project's too: the findings cache's pruning must keep them.
        _touch(*(self._file(index) for index in range(_SUMMARY_SHARDS) if index not in written))


def _shard_of(path: str) -> int:
    """The summary cache's shard of a path: the same in every process (not `hash`, which each process seeds)."""
    return zlib.crc32(path.encode("utf-8", "surrogatepass")) % _SUMMARY_SHARDS


def _decoded(data) -> dict | None:
    with contextlib.suppress(ValueError, EOFError, TypeError):
        summary = marshal.loads(data)
        if isinstance(summary, dict):
            return summary
    return None


def summarize_file(path: str, source_roots: tuple[str, ...], project_root: str | None = None) -> dict | None:
    """The summary of the file at `path`; None when it cannot be read or parsed (the linter reports that)."""
    from .source import SourceError, read_source

    try:
        source = read_source(Path(path))
        tree = ast.parse(source.text)
    except (OSError, SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    module = module_name_for(Path(path), [Path(root) for root in source_roots],
                             Path(project_root) if project_root else None)
    return summarize(tree, module, is_package=Path(path).name == "__init__.py")


def _summarize_job(job: tuple[str, tuple[str, ...], str | None]) -> bytes | None:
    # Marshalled here, in the worker: it is what the cache keeps, and it comes back faster than a pickled summary.
    summary = summarize_file(*job)
    return marshal.dumps(summary) if summary is not None else None


def _init_summary_worker() -> None:
    # As in the lint workers (runner.py): parsing makes many short-lived objects, which the cyclic collector
    # would keep traversing for nothing.
    gc.disable()
    gc.freeze()


def build_model(files: Iterable[str | os.PathLike[str]], source_roots: tuple[str, ...], is_root, gpu_attributes: Iterable[str] = (),
                cache_folder: Path | None = None, jobs: int = 1, project_root: Path | None = None,
                cache: SummaryCache | None = None, hot: dict[str, Hot] | None = None,
                module_inputs_on_gpu: bool = False) -> ProjectModel:
    """Summarize `files` (from the cache where unchanged) and merge the summaries. `hot`: the hotness of a model
    built before from the same summaries, taken instead of propagated again."""
    root = str(project_root) if project_root is not None else None
    if cache is None:
        cache = SummaryCache(cache_folder, summary_layout(root, source_roots))
    with _collector_paused():
        summaries: dict[str, dict] = {}
        missing: list[tuple[str, int, int]] = []
        for file in files:
            path = os.path.abspath(file)
            try:
                status = os.stat(path)
            except OSError:
                continue
            summary = cache.lookup(path, status.st_size, status.st_mtime_ns)
            if summary is not None:
                summaries[path] = summary
            else:
                summaries[path] = {}  # keeps the files' order, which the merge depends on
                missing.append((path, status.st_size, status.st_mtime_ns))
        if missing:
            jobs_list = [(path, source_roots, root) for path, _, _ in missing]
            if jobs > 1 and len(missing) >= 24:
                from concurrent.futures import ProcessPoolExecutor

                with ProcessPoolExecutor(max_workers=jobs, initializer=_init_summary_worker) as pool:
                    results = list(pool.map(_summarize_job, jobs_list, chunksize=8))
            else:
                results = [_summarize_job(job) for job in jobs_list]
            for (path, size, mtime_ns), data in zip(missing, results, strict=True):
                summary = _decoded(data) if data is not None else None
                if summary is not None:
                    summaries[path] = summary
                    cache.store_encoded(path, size, mtime_ns, data)
                else:
                    del summaries[path]
        cache.save(set(summaries))
        return ProjectModel.build(summaries, is_root, gpu_attributes, root, hot=hot,
                                  module_inputs_on_gpu=module_inputs_on_gpu)


def summary_layout(root: str | None, source_roots: tuple[str, ...]) -> str:
    return repr((root, source_roots))


@contextlib.contextmanager
def _collector_paused():
    # Loading and merging the summaries makes hundreds of thousands of containers that live until the run ends;
    # the cyclic collector, triggered by their allocation, would traverse them again and again for nothing.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # Out of the collector's generations: else the first allocation after it is enabled again has it
        # traverse every object made meanwhile. Objects still die by reference counting.
        gc.freeze()
        if was_enabled:
            gc.enable()


def find_project_root(paths: list[Path], settings) -> Path:
    """The folder the model covers: `project-root` when configured, else the closest folder above the checked
    paths that holds a pyproject.toml or a .git, else the deepest folder holding every checked path."""
    if settings.model_root:
        return Path(settings.model_root)
    from .config import common_folder

    start = common_folder(paths)
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return start


@dataclass(frozen=True)
class HotRoots:
    """Why a function is a root of hotness by its name alone (the model's `is_root`): named like a per-step
    function, or configured in `hot-functions`. A class rather than a closure, so that the model pickles: worker
    processes started by spawn (macOS, Windows) or forkserver receive the linter, with its model, pickled."""

    configured: frozenset[str] = frozenset()

    def __call__(self, name: str) -> str | None:
        if is_hot_function(name):
            return "named like a per-step function"
        return "configured in `hot-functions`" if is_hot_function(name, self.configured) else None


class Project:
    """The project model of a run, built only when a file must be linted.

    What a run leaves for the next (`save`): the files' sizes and modification times, the model keys of its files
    (what their cached findings were computed with) and, in a file of its own read only when a model is built, the
    model's hotness, and the journal of what each file's view asked the model (FileView.journal). The next run takes
    them as its own when the model would be the same: the same settings and files, and each file that changed since
    with the same summary as before (an edit inside a function's body that changes no call, a comment). Then a run
    whose findings all come from the cache never builds the model, and one that lints a changed file answers its
    rules from the file's journal, building the model (without propagating hotness again) only for a question the
    journal does not hold."""

    def __init__(self, root: Path, files: list[str] | list[Path], settings, cache_folder: Path | None,
                 jobs: int) -> None:
        self.root, self.files, self.settings, self.cache_folder, self.jobs = root, files, settings, cache_folder, jobs
        self._model: ProjectModel | None = None
        self._keys: dict[str, tuple] = {}  # by file: the questions its rules asked, and its key
        self._summaries: SummaryCache | None = None
        # The model's answers come from h2dlint's code as much as from the files: a run of other code starts afresh.
        self._settings = repr((SUMMARY_VERSION, code_fingerprint(), str(self.root), self.settings.hot_functions,
                               self.settings.gpu_attributes, self.settings.source_roots,
                               self.settings.module_inputs_on_gpu))
        self._stamps = self._file_stamps()
        self._state_file = cache_folder / f"model-{__version__}.marshal" if cache_folder is not None else None
        self._hot_file = cache_folder / f"model-{__version__}-hot.marshal" if cache_folder is not None else None
        self._journal_file = cache_folder / f"model-{__version__}-journal.marshal" if cache_folder is not None \
            else None
        self._journals: dict[str, dict] = {}  # by file: what its views asked the model this run, with the answers
        self._linted: set[str] = set()  # the files linted this run: their journals hold all their rules asked
        self._last_journals: dict[str, bytes] | None = None  # the last run's, encoded, when the model is the same
        self._last: tuple[dict, dict, str] | None = None  # the stamps, keys and hotness token the last run saved
        self._checked = False  # whether the last run's state was compared with this one's
        self._same_model = False  # whether the model is the last run's
        self._hot_token: str | None = None  # that of the hotness the model was built with, when it was the last run's
        cached = _read_cached(self._state_file)
        if isinstance(cached, tuple) and len(cached) == 5 and cached[0] == _STATE_FORMAT \
                and cached[1] == self._settings and isinstance(cached[2], dict) and list(cached[2]) == list(self._stamps):
            self._last = cached[2], cached[3], cached[4]

    def _file_stamps(self) -> dict[str, tuple[int, int]]:
        stamps = {}
        for file in self.files:
            with contextlib.suppress(OSError):
                status = os.stat(file)
                stamps[os.path.abspath(file)] = (status.st_size, status.st_mtime_ns)
        return stamps

    def _take_last_run(self) -> None:
        """Take the last run's keys when the model is the same as the last run's."""
        if self._checked:
            return
        self._checked = True
        if self._last is None:
            return
        stamps, keys, _ = self._last
        changed = [path for path, stamp in self._stamps.items() if stamps[path] != stamp]
        if len(changed) > _MAX_CHANGED_TO_COMPARE:
            return  # summarized in parallel by the model's build, sooner than one by one here
        if changed:
            cache = self._summary_cache()
            for path in changed:
                # The cached summary must be the one the last model was built from, and the file's still the same.
                if cache.stamp(path) != tuple(stamps[path]):
                    return
                before = cache.cached(path)
                size, mtime_ns = self._stamps[path]
                now = summarize_file(path, tuple(self.settings.source_roots), str(self.root))
                if now is None:
                    return
                cache.store(path, size, mtime_ns, now)
                if not _same_in_order(now, before):
                    return
        if isinstance(keys, dict):
            self._keys = dict(keys)
            self._same_model = True

    def _last_hotness(self) -> dict[str, Hot] | None:
        """The hotness of the last run's model, when this run's model is the same, and no file changed since that
        was found (a language server builds the model when first needed, which may be long after)."""
        self._take_last_run()
        if not self._same_model or self._last is None or self._file_stamps() != self._stamps:
            return None
        cached = _read_cached(self._hot_file)
        if not (isinstance(cached, tuple) and len(cached) == 2 and cached[0] == self._last[2]):
            return None
        with contextlib.suppress(TypeError, ValueError, AttributeError):
            hot = {name: Hot(*values) for name, values in cached[1].items()}
            self._hot_token = self._last[2]
            return hot
        return None

    def _summary_cache(self) -> SummaryCache:
        if self._summaries is None:
            self._summaries = SummaryCache(self.cache_folder, summary_layout(str(self.root),
                                                                             tuple(self.settings.source_roots)))
        return self._summaries

    @property
    def model(self) -> ProjectModel:
        if self._model is None:
            self._model = build_model(self.files, tuple(self.settings.source_roots),
                                      HotRoots(frozenset(self.settings.hot_functions)),
                                      self.settings.gpu_attributes, self.cache_folder, self.jobs, self.root,
                                      cache=self._summary_cache(), hot=self._last_hotness(),
                                      module_inputs_on_gpu=self.settings.module_inputs_on_gpu)
        return self._model

    def view(self, path: str) -> FileView:
        """The model's view of the file: from the last run's journal of it, when the model is the same as the last
        run's and not built yet (the model is built at the first question the journal lacks)."""
        absolute = os.path.abspath(path)
        journal = self._journals.get(absolute)
        if self._model is None:
            if journal is None:
                journal = self._last_journal(absolute)
            summary = self._summary_cache().lookup(absolute, *self._stamps[absolute]) \
                if journal is not None and absolute in self._stamps else None
            if summary is not None:
                self._journals[absolute] = journal  # type: ignore[assignment]
                return FileView(None, absolute, summary, journal, build=lambda: self.model)
        view = FileView(self.model, absolute, journal=journal)
        self._journals[absolute] = view.journal
        return view

    def build(self, paths: Iterable[str | os.PathLike[str]] = ()) -> None:
        """Build the model now (before worker processes start, so that they share it), unless each of `paths`, the
        files to be linted, has a journal from the last run (see `view`)."""
        if paths and all(os.path.abspath(path) in self._journals_of_last_run() for path in paths):
            return
        self._model = self.model

    def keep_journal(self, path: str | os.PathLike[str], journal: dict) -> None:
        """Keep what the view of a file linted this run asked the model (in this process or a worker), for the
        next run."""
        absolute = os.path.abspath(path)
        self._linted.add(absolute)
        self._journals.setdefault(absolute, {}).update(journal)

    def _last_journal(self, absolute: str) -> dict | None:
        """The last run's journal of the file, when this run's model is the same."""
        encoded = self._journals_of_last_run().get(absolute)
        return _decoded_journal(encoded) if encoded is not None else None

    def _journals_of_last_run(self) -> dict[str, bytes]:
        """The last run's journals by file, encoded; none when this run's model is not the same."""
        if self._last_journals is None:
            self._last_journals = {}
            self._take_last_run()
            if self._same_model and self._last is not None:
                cached = _read_cached(self._journal_file)
                if isinstance(cached, tuple) and len(cached) == 2 and cached[0] == self._last[2] \
                        and isinstance(cached[1], dict):
                    self._last_journals = cached[1]
        return self._last_journals

    def key(self, path, asked: tuple = ()) -> str:
        """The model key of the file at `path` (FileView.key), with the answers to the questions about values
        `asked` when its findings were made."""
        absolute = os.path.abspath(path)
        self._take_last_run()
        known = self._keys.get(absolute)
        if known is not None and tuple(map(tuple, known[0])) == asked:
            return known[1]
        key = self.view(absolute).key(asked)
        self._keys[absolute] = (asked, key)
        return key

    def save(self) -> None:
        """Keep this run's state for the next run (see the class's docs)."""
        if self._state_file is None or self._hot_file is None or (self._model is None and not self._same_model):
            return
        _touch(self._hot_file, self._journal_file)  # kept, unless written again below
        if self._summaries is not None:
            self._summaries.save(set(self._stamps))
        token = self._hot_token  # set only where the model was built with the last run's hotness
        if self._model is None and self._last is not None:
            if self._last[0] == self._stamps and self._last[1] == self._keys:
                return  # nothing new to keep
            token = self._last[2]
        elif token is None and self._model is not None:
            token = os.urandom(8).hex()
            parts = [part.name for part in fields(Hot)]
            _write_cached(self._hot_file, (token, {name: tuple(getattr(found, part) for part in parts)
                                                   for name, found in self._model.hot.items()}))
        self._save_journals(token)
        _write_cached(self._state_file, (_STATE_FORMAT, self._settings, self._stamps, self._keys, token))

    def _save_journals(self, token: str | None) -> None:
        """Keep the journals of this run's views with the token of its model, and only those of files still in the
        project. The last run's stay where the model is the same (the same token). Where this run built another
        model, the questions of the last run's journals are asked of it again: a file this run did not lint has
        only what its key asked in this run's journal, and its next edit would otherwise build the model. A file
        it linted has what its rules ask now, and nothing older (a question about a function since renamed)."""
        if not self._journals or self._journal_file is None:
            return
        kept: dict[str, bytes] = {}
        if self._last is not None and token == self._last[2]:
            kept = {path: encoded for path, encoded in self._journals_of_last_run().items() if path in self._stamps}
        elif self._model is not None:
            cached = _read_cached(self._journal_file)
            last = cached[1] if isinstance(cached, tuple) and len(cached) == 2 and isinstance(cached[1], dict) \
                else {}
            for path, encoded in last.items():
                journal = _decoded_journal(encoded) if path in self._stamps and path not in self._linted else None
                if journal:
                    view = self.view(path)
                    for question in journal.keys() - view.journal.keys():
                        with contextlib.suppress(TypeError, KeyError, ValueError, AttributeError):
                            view.ask_again(question)  # a journal this code did not write: its question is dropped
        for path, journal in self._journals.items():
            kept[path] = _encoded_journal(journal)
        _write_cached(self._journal_file, (token, kept))


# What the state a run keeps for the next looks like (Project.save).
_STATE_FORMAT = 3

# At most this many files changed since the last run are summarized one by one to find whether the model is the
# same as the last run's.
_MAX_CHANGED_TO_COMPARE = 16


def _same_in_order(first, second) -> bool:
    """Whether two summaries are equal, their dicts' keys in the same order too: the model walks classes and
    functions in that order (roots, attribute names, callers), so two classes swapped make another model."""
    if isinstance(first, dict):
        return isinstance(second, dict) and list(first) == list(second) and all(
            _same_in_order(value, second[key]) for key, value in first.items())
    if isinstance(first, (list, tuple)):
        return type(first) is type(second) and len(first) == len(second) and all(
            _same_in_order(a, b) for a, b in zip(first, second, strict=True))
    return first == second


def _encoded_journal(journal: dict) -> bytes:
    """A view's journal as marshal writes it: each answer tagged with its kind (the model's records are tuples)."""
    items = []
    for question, answer in journal.items():
        if isinstance(answer, Hot):
            items.append((question, "hot", answer.chain))
        elif isinstance(answer, AttributePlacement):
            items.append((question, "placed", tuple(getattr(answer, part.name) for part in fields(answer))))
        else:
            items.append((question, "", answer))
    return marshal.dumps(items)


def _decoded_journal(data: bytes) -> dict | None:
    """What `_encoded_journal` wrote; None when it cannot be read (the model then answers)."""
    with contextlib.suppress(ValueError, EOFError, TypeError):
        journal = {}
        for question, kind, value in marshal.loads(data):
            journal[question] = Hot(value) if kind == "hot" else AttributePlacement(*value) if kind == "placed" \
                else value
        return journal
    return None


def project_model_for(paths: list[Path], settings, cache_folder: Path | None, jobs: int | None,
                      checked: list[Path] = (), found: list[Path] | None = None) -> Project:
    """The project the checked `paths` belong to: every Python file under its root (the excludes and .gitignore
    apply), and the `checked` files themselves (a tree checked on purpose counts even where the repository around
    it ignores it); its model is built from their summaries, taken from the cache where unchanged. `found`: the
    files the run found under `paths`, which are the project's when `paths` is its root, spelled as found."""
    from .discovery import find_python_files

    root = find_project_root(paths, settings)
    if found is not None and len(paths) == 1 and os.path.abspath(paths[0]) == os.path.abspath(root) \
            and paths[0].is_dir():
        under_root = found  # the same walk as the one below: not done twice
    else:
        under_root = find_python_files([root], settings.exclude, settings.respect_gitignore, [],
                                       exclude_base=Path(settings.project_root))
    files: dict[str, None] = {}
    for path in (*under_root, *checked):
        absolute = os.path.abspath(path)  # a string: making thousands of Path objects takes long
        if os.path.splitext(absolute)[1] in (".py", ".pyi"):
            files[absolute] = None
    return Project(root, list(files), settings, cache_folder, jobs or os.cpu_count() or 1)

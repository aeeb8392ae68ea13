"""The per-file index: what h2dlint reads from one file's `ast`, once.

`ast` parses much faster than LibCST, so the facts rules need about the whole file (import aliases,
what a local name is bound to and where, the functions, loops and conditional bodies around a line,
whether a call's result is read back to the host at once, the file's evidence of devices) come from
here, while the rules themselves are LibCST visitors over the candidate calls only. What those facts
mean is answered elsewhere: where a value lives in `placement.py`, how often code runs in
`hotness.py`.
"""

from __future__ import annotations

import ast
import enum
import functools
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, TypeVar

from .hotness import (
    HOT_FUNCTION_NAMES,
    caches_results,
    empty_input_arm,
    flag_uses,
    is_count,
    loops_over_contents,
    methods_cached_on_objects,
    occasional_block,
    statements,
    statements_run_once_in_a_while,
)
from .syntax import (
    COMPOUND_STATEMENTS,
    TRY_STATEMENTS,
    async_copy_target,
    blocks,
    dotted_name,
    name_words,
    parameter_defaults,
    parameters,
    terminal_name,
)

if TYPE_CHECKING:
    from .project import FileView

_T = TypeVar("_T")

SYNC_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
SYNC_BUILTINS = frozenset({"int", "float", "bool"})
HOST_NAME_SUFFIXES = ("_cpu", "_list", "_np", "_numpy", "_host")
GPU_NAME_SUFFIXES = ("_gpu", "_cuda")  # of attributes
# Words that make a `*_gpu` / `*_cuda` name a flag, a count or an action (`is_cuda`, `use_gpu`, `num_gpu`,
# `inputs_on_cuda`, `move_to_gpu`), not a tensor: as its first word, or as the word before the suffix.
_NOT_TENSOR_FIRST_WORDS = frozenset({"is", "has", "use", "uses", "using", "used", "with", "no", "only", "enable",
                                     "disable", "keep", "require", "requires", "can", "skip", "check", "n", "num",
                                     "min", "max", "multi", "per", "run", "test", "benchmark", "to", "on", "any",
                                     "all"})
_NOT_TENSOR_LAST_WORDS = frozenset({"on", "to", "per", "multi", "any", "all", "for", "from", "of"})
MIRROR_SUFFIXES = ("_cpu", "_host")  # a host mirror's name: `seq_lens_cpu` mirrors `seq_lens`, the device copy
GRAPH_CAPTURE_CALLS = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})
# torch.distributed collectives and their tensor arguments (position, keyword): on a device group (NCCL)
# these are CUDA tensors. List arguments (`all_gather`'s `tensor_list`) are left out.
DEVICE_COLLECTIVES = {
    "all_reduce": ((0, "tensor"),), "broadcast": ((0, "tensor"),), "reduce": ((0, "tensor"),),
    "all_gather": ((1, "tensor"),), "reduce_scatter": ((0, "output"),),
    "all_gather_into_tensor": ((0, "output_tensor"), (1, "input_tensor")),
    "_all_gather_base": ((0, "output_tensor"), (1, "input_tensor")),
    "reduce_scatter_tensor": ((0, "output"), (1, "input")), "_reduce_scatter_base": ((0, "output"), (1, "input")),
    "all_to_all_single": ((0, "output"), (1, "input")),
}


class Device(enum.Enum):
    CUDA = "certainly a CUDA device"
    NOT_CUDA = "certainly not a CUDA device"
    UNKNOWN = "a device known only at run time"


class Placement(enum.Enum):
    """Where a tensor-valued expression lives."""

    GPU = "a CUDA tensor"
    HOST = "a host (CPU) tensor"
    UNKNOWN = "a tensor of unknown placement"


# Tensor methods and torch functions whose result is not a tensor (sizes, flags, Python values).
NON_TENSOR_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "element_size", "stride", "data_ptr", "storage_offset",
    "is_contiguous", "is_floating_point", "is_complex", "is_pinned", "is_shared", "get_device", "tolist", "item",
    "storage", "untyped_storage", "type", "equal", "allclose", "dim_order", "__len__",
})
NON_TENSOR_PREFIXES = ("_", "is_", "has_", "get_", "set_", "are_", "use_", "sym_")
# Tensor methods that return no tensor, besides NON_TENSOR_METHODS and the names NON_TENSOR_PREFIXES mark.
NON_TENSOR_TENSOR_METHODS = frozenset({"numpy", "backward", "register_hook", "record_stream", "sparse_dim", "dense_dim",
                                       "q_scale", "q_zero_point", "q_per_channel_axis", "qscheme"})
NON_TENSOR_TORCH_FUNCTIONS = frozenset({
    "is_tensor", "is_storage", "numel", "is_floating_point", "is_complex", "is_nonzero", "equal", "allclose",
    "is_same_size", "result_type", "can_cast", "promote_types", "get_default_dtype", "is_grad_enabled",
})
# torch functions (in the namespaces of TENSOR_OP_NAMESPACES) that return no tensor, besides
# NON_TENSOR_TORCH_FUNCTIONS and the names NON_TENSOR_PREFIXES and capitals (`torch.Size`) mark.
NON_TENSOR_TORCH_NAMES = frozenset({
    "broadcast_shapes", "typename", "manual_seed", "seed", "initial_seed", "compile", "no_grad", "enable_grad",
    "inference_mode", "autocast", "load", "save", "vmap", "cond", "device", "dtype", "finfo", "iinfo",
})
# The legacy tensor types, with the dtype of each: `torch.<type>` is a CPU tensor's, `torch.cuda.<type>` a CUDA
# tensor's.
LEGACY_TENSOR_DTYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16", "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16", "CharTensor": "int8",
    "ByteTensor": "uint8", "BoolTensor": "bool",
}
HOST_TENSOR_TYPES = frozenset(f"torch.{name}" for name in LEGACY_TENSOR_DTYPES)
CUDA_TENSOR_TYPES = frozenset(f"torch.cuda.{name}" for name in LEGACY_TENSOR_DTYPES)
# numpy methods whose result is an array again (of a numpy receiver; of a host tensor, a host tensor).
NUMPY_ARRAY_METHODS = frozenset({"astype", "reshape", "copy", "transpose", "flatten", "ravel", "squeeze", "clip",
                                 "cumsum", "repeat", "view", "take", "T"})
# Functions that return a CPU tensor whatever device they describe: a generator's state is a CPU `ByteTensor`, for a
# CUDA generator too.
HOST_TENSOR_FUNCTIONS = frozenset({"torch.get_rng_state", "torch.random.get_rng_state", "torch.cuda.get_rng_state",
                                   "torch.cuda.random.get_rng_state"})
# Namespaces whose functions compute tensors from tensors, on the device of their inputs.
TENSOR_OP_NAMESPACES = ("torch.", "torch.nn.functional.", "torch.linalg.", "torch.special.", "torch.fft.")
# Tensor methods that make a tensor on the receiver's device unless given a `device=`.
NEW_TENSOR_METHODS = frozenset({"new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"})
# `.attr` of a tensor that is a tensor on the same device.
SAME_DEVICE_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})
TORCH_DTYPES = frozenset({
    "float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "int8", "int16", "int32",
    "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
})

# torch functions that join a sequence of tensors (which must all be on one device) into one.
JOINING_FUNCTIONS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack",
                               "torch.vstack", "torch.dstack", "torch.column_stack", "torch.row_stack"})

TORCH_FACTORIES = frozenset({
    "tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "rand", "randn", "randint", "randperm",
    "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "linspace", "eye",
})


class Data(enum.Enum):
    HOST = "host data"  # Python literals, comprehensions, .tolist() results
    LIKELY_HOST = "probably host data"  # by name (`*_cpu`, `*_list`) or numpy
    TENSOR = "a tensor"
    UNKNOWN = "unknown data"


@dataclass(frozen=True)
class Binding:
    line: int
    value: ast.expr | None


@dataclass(frozen=True)
class Scope:
    """A function (or the module): the names it binds and to what.

    A binding value of None means the name is bound in a way h2dlint does not
    follow (a parameter, a loop target, tuple unpacking, `with ... as`).
    """

    first_line: int
    last_line: int
    node: ast.AST | None = None  # the function; None for the module
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    # Names passed as a tensor to a torch.distributed collective, with the statement of each such call.
    collective_arguments: dict[str, list[tuple[ast.Call, ast.stmt]]] = field(default_factory=dict)
    # The statements that bind a name on every path through them (`x = ...`, an `if` whose arms all do), by name:
    # (first line, last line, first and last line of the block holding the statement, whether that block is the
    # function's own body). The function's code on a later line of that block runs after the statement, so the
    # bindings made before it do not reach there (see `FileFacts.reaching`).
    definite: dict[str, list[tuple[int, int, int, int, bool]]] = field(default_factory=dict)
    # `xs.append(v)` as a binding of v; `xs.extend(...)` / `xs.insert(...)` as one of None (not followed).
    list_additions: dict[str, list[Binding]] = field(default_factory=dict)


@dataclass
class Site:
    """A candidate expression some rule may report on, and what is known around it."""

    node: ast.expr
    line: int
    column: int  # code points, 0-based
    end_line: int
    end_column: int
    parent: ast.AST | None
    synced_by: str | None = None  # e.g. ".item()" when a call's result is read back to the host at once
    rules: set[str] = field(default_factory=set)  # codes of the rules that named it


# ----- the per-file index of what the tree shows -------------------------------------------------------------------
#
# Each fact below comes from the file's `ast` (the nodes FileFacts' index walk visits, annotations left out), never
# from its text: a word in a comment or a string that is no device proves nothing. The project model's summaries
# hold the same facts (`evidence_of`), so that the engine can skip, before parsing, a file whose tree holds no GPU
# evidence for the rules that need some.

CUDA_DEVICE_STRING = re.compile(r"cuda(?::\d+)?")  # a whole string constant (PyTorch takes no blanks around it)
_HOST_DEVICE_STRING = re.compile(r"cpu\b", re.IGNORECASE)  # the start of a string constant naming the CPU
# `Stream(`, `wait_stream(`, ...: calls that show the file uses streams besides the current one (and `cuda.stream`).
_STREAM_CALLS = frozenset({"Stream", "ExternalStream", "wait_stream", "record_stream", "set_stream"})
# In a file written for another accelerator, the device copy of a mirrored tensor is not a CUDA tensor.
# (Not `torch_xla`: diffusers' pipelines import it where available, and run on CUDA as well; nor Apple's `mlx`,
# which quantizers import for a faster path on Macs beside their CUDA one.)
_OTHER_ACCELERATOR_MODULES = frozenset({"torch_npu", "torch_mlu"})
_OTHER_ACCELERATOR_ATTRIBUTES = frozenset({"npu", "xpu", "hpu", "mlu"})  # `torch.npu`, ...
OTHER_ACCELERATOR_APIS = tuple([*(f"torch.{name}." for name in sorted(_OTHER_ACCELERATOR_ATTRIBUTES)),
                                 *(f"{module}." for module in sorted(_OTHER_ACCELERATOR_MODULES))])
# Where a string or int constant may be what classify_device reads as a device: the value of a keyword, the first
# argument of a call, the value of an assignment or a `return`, a parameter's default, a branch of `a if c else b`.
# Not where no device is read: compared (`device.type == "cuda"`), a later argument, in a collection or an f-string.
_DEVICE_READING_PARENTS = (ast.keyword, ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.Return, ast.arguments, ast.IfExp)


@dataclass(frozen=True)
class TreeEvidence:
    """What one walk of a file's tree shows about devices, streams and collectives."""

    gpu: bool  # something classify_placement may prove to be on the GPU (the run's `gpu-device-names` aside)
    # Names `x` read in the tree that have a host mirror `x_cpu` / `x_host` there too (`seq_lens` beside
    # `seq_lens_cpu`), less those that read as a flag, a count or an action; none in a file for another accelerator.
    mirrored: frozenset[str]
    several_streams: bool  # calls Stream, ExternalStream, wait_stream, record_stream, set_stream or `cuda.stream`
    device_collectives: bool  # calls a torch.distributed collective, and names no gloo backend anywhere
    mentions_torch: bool  # imports or names something called torch
    defined: frozenset[str]  # the name of every function defined
    other_accelerator: bool = False  # names `torch.npu`, `torch_npu`, ... (another accelerator's API)

    def as_data(self) -> tuple:
        """As plain data, for the project model's cached summaries (see `from_data`)."""
        return (self.gpu, sorted(self.mirrored), self.several_streams, self.device_collectives, self.mentions_torch,
                sorted(self.defined), self.other_accelerator)

    @classmethod
    def from_data(cls, data) -> TreeEvidence:
        gpu, mirrored, streams, collectives, torch_named, defined, other_accelerator = data
        return cls(gpu, frozenset(mirrored), streams, collectives, torch_named, frozenset(defined), other_accelerator)


@dataclass(frozen=True)
class FileGate:
    """What the project model's summary of a file tells the rules' text tests before the file is parsed: whether
    its tree holds GPU evidence (or it reads a GPU placement the model knows of), and whether it defines a function
    hot by its name (or one hot through calls). Without a summary both stay open: the word tests alone decide."""

    gpu: bool = True
    hot_names: bool = True


OPEN_GATE = FileGate()
# The words without which a file's tree holds no GPU evidence (TreeEvidence.gpu): `.cuda()`, a CUDA device string,
# a `*_gpu` / `*_cuda` attribute, `current_device`, a host mirror, a torch.distributed collective, a copy with
# `non_blocking=True` to a device named so (see syntax.async_copy_target); and, for an
# ordinal (`.to(0)`, `device=0`), `to` or `device` then a digit past anything but words (brackets, blanks, comments).
_GPU_WORDS = ("cuda", "_gpu", "current_device", "_cpu", "_host")
_ORDINAL_DEVICE = re.compile(r"(?:to|device)(?:[^\w#]|#[^\n]*+)*+\d")


def word_gate(text: str, settings) -> FileGate:
    """The gate of a file the project model has no summary of (or with `project-model = false`): word tests, a
    superset of what the summary would say. Parsing a few more files is the price of not summarizing them."""
    gpu = any(word in text for word in _GPU_WORDS) or any(
        name.rsplit(".", 1)[-1] in text for name in settings.gpu_device_names) or bool(_ORDINAL_DEVICE.search(text)) \
        or "distributed" in text and any(collective in text for collective in DEVICE_COLLECTIVES) \
        or "non_blocking" in text
    configured = settings.hot_functions
    # A name the parser NFKC-normalizes (`def ｆorward`) is no ASCII word: such a text stays open.
    hot_names = "def" in text and (not text.isascii() or bool(_DEFINES_A_HOT_NAME.search(text)) or any(
        name in text or any(glob in name for glob in "*?[") for name in configured))
    return FileGate(gpu=gpu, hot_names=hot_names)


def evidence_of(tree: ast.Module) -> TreeEvidence:
    """What the tree shows about devices, streams and collectives: one walk over the nodes FileFacts indexes
    (annotations left out) sorts out the few kinds that matter; what they say is read afterwards from the (much
    fewer) distinct names, and from the calls and strings."""
    names: set[str] = set()  # read as a name or passed as a keyword
    attributes: set[str] = set()
    parameters: set[str] = set()
    defined: set[str] = set()
    calls: list[ast.Call] = []
    keywords: list[ast.keyword] = []
    strings: list[tuple[ast.expr, ast.AST]] = []  # string constants and f-strings, with their parents
    imports: list[ast.Import | ast.ImportFrom] = []
    other_accelerator = False
    add_name = names.add
    stack: list[ast.AST] = [tree]
    push = stack.append
    while stack:
        node = stack.pop()
        kind = node.__class__
        fields = _INDEXED_FIELDS.get(kind)
        for field_name in fields if fields is not None else _indexed_fields(kind):
            value = getattr(node, field_name)
            if value.__class__ is not list:
                if value is None:
                    continue
                value = (value,)
            for child in value:
                child_kind = child.__class__
                if child_kind is ast.Name:
                    add_name(child.id)
                elif child_kind is ast.Constant:
                    if child.value.__class__ is str:
                        strings.append((child, node))
                elif child is not None:
                    if child_kind is ast.JoinedStr:
                        strings.append((child, node))
                    push(child)
        if kind is ast.Attribute:
            attr = node.attr
            attributes.add(attr)
            if attr in _OTHER_ACCELERATOR_ATTRIBUTES and node.value.__class__ is ast.Name and node.value.id == "torch":
                other_accelerator = True
        elif kind is ast.Call:
            calls.append(node)
        elif kind is ast.keyword:
            keywords.append(node)
        elif kind is ast.arg:
            parameters.add(node.arg)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            defined.add(node.name)
        elif kind is ast.Import or kind is ast.ImportFrom:
            imports.append(node)
    names.update(keyword.arg for keyword in keywords if keyword.arg is not None)
    gpu = any(placement_by_attribute_name(attr) is Placement.GPU for attr in attributes) or any(
        keyword.arg == "device" and _ordinal(keyword.value) for keyword in keywords)
    streams = gloo = async_copy = False
    collective_calls, type_calls = [], []
    for call in calls:
        func = call.func
        called = func.attr if func.__class__ is ast.Attribute else func.id if func.__class__ is ast.Name else None
        if called is None:
            continue
        if called == "cuda" and func.__class__ is ast.Attribute or called == "current_device" \
                or called in ("to", "device") and call.args and _ordinal(call.args[0]) \
                or called.endswith("Tensor") and terminal_name(getattr(func, "value", None)) == "cuda":
            gpu = True  # (`torch.cuda.FloatTensor(...)`: a legacy constructor makes a CUDA tensor)
        elif called == "type" and func.__class__ is ast.Attribute:
            type_calls.append(call)  # `x.type(torch.cuda.FloatTensor)` converts to one (judged once imports are known)
        elif called == "to" and async_copy_target(call) is not None:
            async_copy = True
        elif called in _STREAM_CALLS or called == "stream" and terminal_name(getattr(func, "value", None)) == "cuda":
            streams = True
        elif called in DEVICE_COLLECTIVES:
            collective_calls.append(call)
    for node, parent in strings:
        if node.__class__ is ast.Constant:
            value = node.value
            if value.startswith("cuda"):
                gpu = gpu or CUDA_DEVICE_STRING.fullmatch(value) is not None and _may_be_read_as_device(node, parent)
            elif "gloo" in value.lower():
                gloo = True
        elif not gpu and node.values and isinstance(node.values[0], ast.Constant) \
                and str(node.values[0].value).startswith("cuda"):
            gpu = _may_be_read_as_device(node, parent)
    identifiers = names | attributes | parameters
    imported = _imported_names(imports)
    gpu = gpu or any(tensor_type_name(named, imported) in CUDA_TENSOR_TYPES for call in type_calls
                     for named in (*call.args[:1], *(kw.value for kw in call.keywords if kw.arg == "dtype")))
    other_accelerator = other_accelerator or any(module.split(".")[0] in _OTHER_ACCELERATOR_MODULES
                                                 for module in imported.values())
    gloo = gloo or any("gloo" in identifier.lower() for identifier in identifiers)
    device_collectives = not gloo and any(
        (qualified_name(dotted_name(call.func), imported) or "").startswith("torch.distributed.")
        for call in collective_calls)
    mirrored = frozenset() if other_accelerator else frozenset(
        stem for identifier in identifiers for suffix in MIRROR_SUFFIXES if identifier.endswith(suffix)
        for stem in (identifier[:-len(suffix)],) if stem in identifiers and names_a_tensor(stem))
    # A mirrored name is a CUDA tensor to classify_placement where it is read as an attribute (`batch.seq_lens`) or
    # is a parameter beside its mirror.
    # An asynchronous copy to a device says an accelerator, which in a file for another one is that one.
    gpu = gpu or device_collectives or not mirrored.isdisjoint(attributes | parameters) \
        or async_copy and not other_accelerator
    mentions_torch = "torch" in identifiers or any("torch" in name for name in (*imported, *imported.values()))
    return TreeEvidence(gpu=gpu, mirrored=mirrored, several_streams=streams, device_collectives=device_collectives,
                        mentions_torch=mentions_torch, defined=frozenset(defined), other_accelerator=other_accelerator)


def _may_be_read_as_device(node: ast.expr, parent: ast.AST) -> bool:
    """Whether a constant (or f-string) sits where classify_device may read it as a device (see
    _DEVICE_READING_PARENTS)."""
    if isinstance(parent, ast.Call):
        return bool(parent.args) and parent.args[0] is node
    return isinstance(parent, _DEVICE_READING_PARENTS)


def _ordinal(expr: ast.expr) -> bool:
    """An int written as a device (`device=0`, `.to(1)`, `torch.device(0 if a else 1)`): a CUDA ordinal."""
    if isinstance(expr, ast.IfExp):
        return _ordinal(expr.body) or _ordinal(expr.orelse)
    return isinstance(expr, ast.Constant) and type(expr.value) is int


def tensor_type_name(expr: ast.expr, imported: dict[str, str]) -> str:
    """The qualified name `expr` gives a tensor type (`torch.cuda.FloatTensor`, as written or imported: `from
    torch.cuda import FloatTensor as F`), or the string `.type()` also takes; "" for anything else. `imported`: the
    file's local names -> qualified names (`FileFacts.aliases`)."""
    if isinstance(expr, ast.Constant):
        return expr.value if isinstance(expr.value, str) else ""
    return qualified_name(dotted_name(expr), imported) or ""


def _imported_names(imports: list[ast.Import | ast.ImportFrom]) -> dict[str, str]:
    """What each imported name stands for (`dist` -> `torch.distributed`; `torch` -> `torch`)."""
    imported = {}
    for node in imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                imported[local] = alias.name if alias.asname else local
        elif node.module and node.level == 0:
            for alias in node.names:
                imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return imported


def qualified_name(dotted: str | None, imported: dict[str, str]) -> str | None:
    """`th.tensor` -> `torch.tensor` by `imported` (local name -> qualified name); None when its head is not one."""
    head, _, rest = (dotted or "").partition(".")
    target = imported.get(head)
    return None if target is None else f"{target}.{rest}" if rest else target


def names_host(node: ast.AST, words: tuple[str, ...], host_strings: bool = False) -> bool:
    """Whether a name, attribute, parameter, keyword or string in `node` holds one of `words` (lower-case, in any
    case: `cpu_group`, `gloo`), or, with `host_strings`, a string starts by naming the CPU (`"cpu"`, `"cpu:0"`)."""
    for child in ast.walk(node):
        kind = child.__class__
        if kind is ast.Name:
            word = child.id
        elif kind is ast.Attribute:
            word = child.attr
        elif kind is ast.arg or kind is ast.keyword:
            word = child.arg or ""
        elif kind is ast.Constant and child.value.__class__ is str:
            word = child.value
            if host_strings and _HOST_DEVICE_STRING.match(word):
                return True
        else:
            continue
        lower = word.lower()
        if any(host in lower for host in words):
            return True
    return False


# A definition of a function hot by its name, for the word gate (see word_gate); any name with `train` in it stands
# for the training steps `hotness.named_training_step` finds by their words.
_HOT_NAMES = "|".join(sorted(HOT_FUNCTION_NAMES))
_DEFINES_A_HOT_NAME = re.compile(
    rf"def[\s\\]+(?:(?:{_HOT_NAMES})\b|init_forward_metadata|\w*_replay_cuda_graph\b|(?i:\w*train))")


# Words of a folder or module name written for another accelerator: `experimental/torch_tpu/`,
# `tpu_model_runner.py`, `hardware_backend/npu/`, Apple's `metal/v1/`, `mlx_backend.py`. (Not `mps`: in tensor
# network libraries `models/mps.py` holds matrix product states, which run on CUDA.)
_OTHER_ACCELERATOR_PATH_WORDS = frozenset({"tpu", "xla", "npu", "xpu", "hpu", "mlu", "musa", "gaudi", "habana",
                                            "ascend", "metal", "mlx"})
# And of a module written for another framework's tensors, which no torch code runs: dgl's `nn/mxnet/`,
# `backend/tensorflow/` (not where the path names torch too: `convert_tensorflow_checkpoint_to_pytorch.py`).
_OTHER_FRAMEWORK_PATH_WORDS = frozenset({"mxnet", "tensorflow"})
_TORCH_PATH_WORDS = frozenset({"torch", "pytorch"})


def is_other_accelerator_path(path: str) -> bool:
    """A module for another accelerator, by its path from the project root: a folder or file name has one of
    their words (see `_OTHER_ACCELERATOR_PATH_WORDS`), and none names CUDA too (`cuda_xpu_utils.py`,
    `tpu_vs_gpu/` serve both); or one for another framework (`_OTHER_FRAMEWORK_PATH_WORDS`) naming no torch."""
    words = {word for part in PurePath(path).parts for word in name_words(PurePath(part).stem)}
    return not _OTHER_ACCELERATOR_PATH_WORDS.isdisjoint(words) and _CUDA_PATH_WORDS.isdisjoint(words) \
        or not _OTHER_FRAMEWORK_PATH_WORDS.isdisjoint(words) and _TORCH_PATH_WORDS.isdisjoint(words)


_CUDA_PATH_WORDS = frozenset({"cuda", "gpu", "gpus", "nvidia"})


class FileFacts:
    def __init__(self, tree: ast.Module, line_index) -> None:
        # No text: every fact comes from the tree (the line index only maps its positions to columns).
        self.line_index = line_index
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.parents: dict[ast.AST, ast.AST] = {}
        self.loops: list[tuple[int, int]] = []
        # The loops that may be what repeats a step: all but those over what an object holds (`loops_over_contents`),
        # which repeat once per item the program built.
        self.repeating_loops: list[tuple[int, int]] = []
        # The bodies of `if step % log_interval == 0:`, of `if key not in _cache: _cache[key] = ...`, and of
        # functions cached with `functools.cache` (see CodeContext.occasional).
        self.occasional: list[tuple[int, int]] = []
        self.if_arms: list[tuple[tuple[int, int], tuple[int, int]]] = []
        self.graph_captures: list[tuple[int, int]] = []
        self.functions: list[tuple[int, int, str]] = []
        self._function_nodes: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] = []
        self._calls_by_terminal: dict[str, list[ast.Call]] = {}
        self.assignments: list[ast.Assign] = []  # `=` statements in the walked code
        self.other_assignments: list[ast.AnnAssign | ast.AugAssign | ast.NamedExpr] = []  # `x: T = v`, `x += v`, `:=`
        # Subscripts, the nodes that hold conditions, and binary operations, in walk order (an ancestor before
        # its descendants): what the sync finder and HDL107 look through, without a pass over every node.
        self.scanned_nodes: list[ast.AST] = []
        self._scopes: dict[int, Scope] = {}  # built on first use, by id of the function node (0: the module)
        # Answers kept by line (and name): the same lines are asked about again and again while classifying.
        self._functions_by_line: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, ...]] | None = None
        self._blocks_by_line: tuple[list[tuple[tuple[int, int], ...]], list[tuple[tuple[int, int], ...]]] | None = None
        self._binding_scopes: dict[tuple[str, int], Scope | None] = {}
        # The lines of the `:=` and comprehensions, for _may_bind_in_expressions; listed on first use.
        self._binding_expression_lines: list[int] | None = None
        self._class_nodes: list[ast.ClassDef] = []
        self.for_loops: dict[int, ast.For | ast.AsyncFor] = {}  # by the line of the `for`, where its target is bound
        self._class_attributes: dict[int, dict[str, list[Binding]]] = {}  # by id of the class, on first use
        self.hot_functions: frozenset[str] = frozenset()  # the run's configured extra hot function names
        self.active_codes: frozenset[str] | None = None  # the rules that may report in this file; None: any
        self.gpu_device_names: tuple[str, ...] = ()  # the run's configured CUDA device expressions
        self.off_step_module = False  # a module of tests, benchmarks, ... (see is_off_the_step_path), set by the engine
        self.other_accelerator_path = False  # a module for another accelerator (is_other_accelerator_path), likewise
        self.sites: dict[tuple[int, int, int, int], Site] = {}  # by (line, column, end line, end column)
        # What the project model says about this file (h2dlint.project.FileView), when a model was built.
        self.project: FileView | None = None
        # How the placements classified since the log was last cleared were inferred through the project model.
        self.inferences: list[str] = []
        # How many placements the model gave for values it does not know to be tensors (AttributePlacement.typed).
        self.untyped_inferences = 0
        self._index(tree)

    @functools.cached_property
    def evidence(self) -> TreeEvidence:
        """What the tree shows about devices, streams and collectives (see TreeEvidence): from the project model's
        summary of the file, which holds it, else from the nodes indexed."""
        known = self.project.evidence() if self.project is not None else None
        return known if known is not None else evidence_of(self.tree)

    @property
    def for_other_accelerator(self) -> bool:
        """Written for another accelerator only, so that a device of unknown kind is that accelerator's: its path
        names one (`is_other_accelerator_path`: the module's place says more than its words, as NPU code calls
        `.cuda()` through `torch_npu`'s patches, and its device collectives and mirrored buffers are the NPU's),
        or it names one's API (`torch.npu`, `torch_npu`) and its tree shows no CUDA device."""
        return self.other_accelerator_path or self.evidence.other_accelerator and not self.evidence.gpu

    @functools.cached_property
    def list_checks(self) -> list[tuple[int, int, str]]:
        """The bodies of `if isinstance(name, list):` (or `tuple`, or both): (first line, last line, name)."""
        found = []
        for node in statements(self.tree.body):
            if node.__class__ is not ast.If or not node.body:
                continue
            test = node.test
            if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" \
                    and len(test.args) == 2 and isinstance(test.args[0], ast.Name):
                kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
                if kinds and all(isinstance(kind, ast.Name) and kind.id in ("list", "tuple") for kind in kinds):
                    found.append((node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno,
                                  test.args[0].id))
        return found

    @functools.cached_property
    def _page_locked(self) -> list[tuple[str, int]]:
        """(name, line) for each tensor the file page-locks where it lies: `cudaHostRegister(x.data_ptr(), size,
        flags)` (`torch.cuda.cudart()`'s) registers `x` on its line or, when `x` is the target of a `for` over a
        list or tuple of names around it (`for x in [obs, actions]:`), each of those names on the loop's line."""
        found = []
        for call in self.calls_named(frozenset({"cudaHostRegister"})):
            pointer = call.args[0] if call.args else None
            if not (isinstance(pointer, ast.Call) and isinstance(pointer.func, ast.Attribute)
                    and pointer.func.attr == "data_ptr" and isinstance(pointer.func.value, ast.Name)):
                continue
            name = pointer.func.value.id
            loop = self.parents.get(call)
            while loop is not None and not isinstance(loop, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.target, ast.Name) \
                        and loop.target.id == name and isinstance(loop.iter, (ast.List, ast.Tuple)):
                    found.extend((element.id, loop.lineno) for element in loop.iter.elts
                                 if isinstance(element, ast.Name))
                    break
                loop = self.parents.get(loop)
            else:
                found.append((name, call.lineno))
        return found

    def pinned_in_place(self, name: str, line: int) -> bool:
        """Whether `name`, read at `line`, holds a tensor the file page-locked where it lies (see `_page_locked`):
        the same bindings reach `line` as reached the registration. A `non_blocking=True` copy from it is
        asynchronous, though its factory asked for no pinned memory."""
        reaching = self.reaching_bindings(name, line)
        return bool(reaching) and any(
            registered == name and self.reaching_bindings(name, at) == reaching for registered, at in self._page_locked)

    @functools.cached_property
    def empty_input_arms(self) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """The arms of `if` statements and conditional expressions taken only when a count is zero (see
        `hotness.empty_input_arm`), each as its (line, column) start and end, columns in code points as `Site`s
        and rules' positions count them. Only in a function's own straight code: in a loop or a comprehension
        a count is often each element's, zero for some elements as a matter of course (`t[-1:] if len(t) > 0
        else ...` over the requests' cached prefixes); a lambda's parameters are its own."""
        found = []
        counts: dict[int, frozenset[str]] = {}  # by id of the function: the names bound only to counts there
        # The names some `=` of the file binds to a count: any other name is none, without walking its function.
        assigned_counts = {node.targets[0].id for node in self.assignments if len(node.targets) == 1
                           and isinstance(node.targets[0], ast.Name) and is_count(node.value, _no_counts)}

        def bound_only_to_counts(node: ast.AST, name: str) -> bool:
            function = self._function_outside_loops(node) if name in assigned_counts else None
            if function is None:
                return False
            if id(function) not in counts:
                counts[id(function)] = _names_bound_only_to_counts(function)
            return name in counts[id(function)]

        for node in self.scanned_nodes:
            if node.__class__ is not ast.If and node.__class__ is not ast.IfExp:
                continue
            arm = empty_input_arm(node, functools.partial(bound_only_to_counts, node))
            if arm and self._function_outside_loops(node) is not None:
                found.append((self.span(arm[0])[0], self.span(arm[-1])[1]))
        return found

    def _function_outside_loops(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function whose own code holds `node` outside any loop, comprehension or lambda; None elsewhere."""
        parent = self.parents.get(node)
        while parent is not None:
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return parent
            if isinstance(parent, (ast.For, ast.AsyncFor, ast.While, ast.Lambda, ast.ClassDef, *_COMPREHENSIONS)):
                return None
            parent = self.parents.get(parent)
        return None

    @functools.cached_property
    def unpackings(self) -> dict[int, list[ast.Assign]]:
        """The statements that unpack into one tuple of targets, `a, b = x, y` or `a, b = f(...)`, by line."""
        found: dict[int, list[ast.Assign]] = {}
        for node in statements(self.tree.body):
            if node.__class__ is ast.Assign and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
                found.setdefault(node.lineno, []).append(node)
        return found

    @functools.cached_property
    def gpu_evidence(self) -> bool:
        """Whether anything in the file may be proven on the GPU: the tree's evidence, a name of the run's
        `gpu-device-names`, or a GPU placement the project model knows of that the file reads."""
        if self.evidence.gpu or self.project is not None and "placement" in self.project.opened_for():
            return True
        names = self.gpu_device_names
        return bool(names) and any(dotted_name(node) in names for node in self.parents
                                   if node.__class__ is ast.Name or node.__class__ is ast.Attribute)

    @property
    def mentions_torch(self) -> bool:
        """Whether the file names torch at all: without it, a value h2dlint cannot place is no tensor to believe in."""
        return self.evidence.mentions_torch

    @property
    def uses_several_streams(self) -> bool:
        return self.evidence.several_streams

    @property
    def may_use_device_collectives(self) -> bool:
        return self.evidence.device_collectives

    def _index(self, tree: ast.Module) -> None:
        """One walk over the tree: parents, imports, calls by name, and the blocks that shape control flow."""
        imports: list[ast.Import | ast.ImportFrom] = []
        with_blocks: list[ast.With | ast.AsyncWith] = []
        flags = functools.cache(functools.partial(flag_uses, tree))  # asked only by `if self.flag:` tests
        parents = self.parents
        stack: list[ast.AST] = [tree]
        while stack:  # the hottest loop of a run: the children are listed inline, not by _children()
            node = stack.pop()
            kind = type(node)
            fields = _INDEXED_FIELDS.get(kind)
            for name in fields if fields is not None else _indexed_fields(kind):
                value = getattr(node, name)
                if value.__class__ is list:
                    for child in value:
                        if child is not None:
                            parents[child] = node
                            if child.__class__ not in _LEAF_TYPES:
                                stack.append(child)
                elif value is not None:
                    parents[value] = node
                    if value.__class__ not in _LEAF_TYPES:
                        stack.append(value)
            if kind is ast.Call:
                name = terminal_name(node.func)
                if name is not None:
                    self._calls_by_terminal.setdefault(name, []).append(node)
                continue
            role = _INDEXED_TYPES.get(kind)
            if role is None:
                continue
            if role is _SCANNED:
                self.scanned_nodes.append(node)
                if kind is not ast.If and kind is not ast.While:
                    continue
            if kind is ast.Assign:
                self.assignments.append(node)
            elif kind in _OTHER_ASSIGNMENT_TYPES:
                self.other_assignments.append(node)
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
                self._function_nodes.append(node)
                if kind is not ast.Lambda:
                    self.functions.append((node.lineno, node.end_lineno or node.lineno, node.name))
                    if any(caches_results(decorator) for decorator in node.decorator_list):
                        self.occasional.extend(_body_lines(node))
                    self.occasional.extend((statement.lineno, statement.end_lineno or statement.lineno)
                                           for statement in statements_run_once_in_a_while(node, flags))
            elif kind is ast.While:
                self.loops.append((node.lineno, node.end_lineno or node.lineno))
                self.repeating_loops.append(self.loops[-1])
            elif kind in (ast.For, ast.AsyncFor):
                # A `for` evaluates its iterable once, before the first pass: its header is not in the loop.
                first = node.body[0].lineno if node.body[0].lineno > node.lineno else node.lineno
                self.loops.append((first, node.end_lineno or node.lineno))
                self.for_loops[node.lineno] = node
                # (An `async for` steps through a stream, never a list or a mapping.)
                if kind is ast.AsyncFor or not loops_over_contents(node.iter):
                    self.repeating_loops.append(self.loops[-1])
            elif kind is ast.If:
                if block := occasional_block(node, flags):
                    self.occasional.append((block[0].lineno, block[-1].end_lineno or block[-1].lineno))
                if node.orelse:
                    self.if_arms.append(((node.body[0].lineno, node.body[-1].end_lineno or node.lineno),
                                         (node.orelse[0].lineno, node.orelse[-1].end_lineno or node.lineno)))
            elif kind in (ast.Import, ast.ImportFrom):
                imports.append(node)
            elif kind in (ast.With, ast.AsyncWith):
                with_blocks.append(node)
            elif kind is ast.ClassDef:
                self._class_nodes.append(node)
                cached = methods_cached_on_objects(node)  # as a cached method's body, run once per arguments
                self.occasional.extend(span for method in node.body if isinstance(method, ast.FunctionDef)
                                       and method.name in cached for span in _body_lines(method))
        self.functions.sort()
        self._function_nodes.sort(key=lambda node: (node.lineno, node.col_offset))
        self._collect_imports(sorted(imports, key=lambda node: (node.lineno, node.col_offset)), tree)
        for block in with_blocks:
            for item in block.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and self.qualify(dotted_name(call.func)) in GRAPH_CAPTURE_CALLS:
                    self.graph_captures.append((block.lineno, block.end_lineno or block.lineno))

    # ----- names -----------------------------------------------------------

    def _collect_imports(self, imports: list[ast.Import | ast.ImportFrom], tree: ast.Module) -> None:
        conflicting: set[str] = set()

        def bind(local: str, qualified: str) -> None:
            if self.aliases.get(local, qualified) != qualified:
                conflicting.add(local)
            self.aliases[local] = qualified

        for node in imports:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        bind(alias.asname, alias.name)
                    else:
                        top = alias.name.split(".")[0]
                        bind(top, top)
            elif node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        bind(alias.asname or alias.name, f"{node.module}.{alias.name}")
        for local in conflicting:
            del self.aliases[local]
        self.torch_from_import_line = next(
            (node.lineno for node in tree.body
             if isinstance(node, ast.ImportFrom) and node.col_offset == 0 and node.level == 0
             and (node.module == "torch" or (node.module or "").startswith("torch."))), None)

    def qualify(self, dotted: str | None) -> str | None:
        """`th.tensor` -> `torch.tensor` when `import torch as th`; None when not imported."""
        if not dotted:
            return None
        head, _, rest = dotted.partition(".")
        qualified_head = self.aliases.get(head)
        if qualified_head is None:
            return None
        return f"{qualified_head}.{rest}" if rest else qualified_head

    def local_name_for(self, qualified: str) -> str | None:
        """The name this file uses for module or object `qualified`, if any."""
        best = None
        for local, target in self.aliases.items():
            if target == qualified and (best is None or local == qualified.split(".")[-1]):
                best = local
        return best

    # ----- scopes and bindings ---------------------------------------------

    def scope_for(self, node: ast.AST | None) -> Scope:
        """The bindings of a function (or, for None, the module), collected on first use."""
        key = id(node) if node is not None else 0
        scope = self._scopes.get(key)
        if scope is not None:
            return scope
        if node is None:
            scope = Scope(1, 1 << 30)
            self._bind_statements(self.tree.body, scope)
        else:
            scope = Scope(node.lineno, node.end_lineno or node.lineno, node)
            for arg in parameters(node.args):
                scope.bindings.setdefault(arg.arg, []).append(Binding(0, _annotated_value(arg.annotation)))
            self._bind_statements(node.body if isinstance(node.body, list) else [ast.Expr(node.body)], scope)
        self._scopes[key] = scope
        return scope

    def _bind_statements(self, body: list[ast.stmt], scope: Scope) -> None:
        """Record bindings made by `body`, not descending into nested functions or classes."""
        if body and not isinstance(scope.node, ast.Lambda):  # (a lambda's body is an expression)
            _note_definite_stores(body, scope)
        stack: list[ast.AST] = list(body)
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind in _BINDING_TYPES:
                _bind(node, scope)
                if kind in _SCOPE_TYPES:
                    continue
            if kind in (ast.Expr, ast.Assign) and node.value.__class__ is ast.Call:
                if self.may_use_device_collectives:
                    self._note_collective(node.value, node, scope)
                if kind is ast.Expr:
                    _note_list_addition(node.value, scope)
            if kind in _SIMPLE_STATEMENT_TYPES and not self._may_bind_in_expressions(node):
                continue
            stack.extend(_children(node))

    def _note_collective(self, call: ast.Call, statement: ast.stmt, scope: Scope) -> None:
        """Record the names `call` passes as tensors, when it is a torch.distributed collective."""
        arguments = DEVICE_COLLECTIVES.get(terminal_name(call.func))
        if arguments is None or not (self.qualify(dotted_name(call.func)) or "").startswith("torch.distributed."):
            return
        for position, keyword in arguments:
            tensor = next((kw.value for kw in call.keywords if kw.arg == keyword),
                          call.args[position] if position < len(call.args) else None)
            if isinstance(tensor, ast.Name):
                scope.collective_arguments.setdefault(tensor.id, []).append((call, statement))

    def _may_bind_in_expressions(self, statement: ast.stmt) -> bool:
        """Whether a statement's expressions may bind names (`:=`, a comprehension's `for`): only then are
        they walked. Most statements have neither, and their expressions are most of a file's nodes."""
        if getattr(statement, "lineno", None) is None:  # the `Expr` standing for a lambda's body
            return True
        lines = self._binding_expression_lines
        if lines is None:
            lines = self._binding_expression_lines = sorted(
                [node.lineno for node in self.other_assignments if isinstance(node, ast.NamedExpr)]
                + [node.target.lineno for node in self.scanned_nodes if isinstance(node, ast.comprehension)])
        first = bisect_left(lines, statement.lineno)
        return first < len(lines) and lines[first] <= (statement.end_lineno or statement.lineno)

    def _attributes_of(self, node: ast.ClassDef) -> dict[str, list[Binding]]:
        """`self.x = value` in a class's methods: what `self.x` may hold anywhere in that class. A property
        (`@property`, `@cached_property`) `x` holds what its method returns. A name registered as a buffer or
        parameter (`self.register_buffer("x", ...)`) is bound to None: it moves with the module."""
        attributes = self._class_attributes.get(id(node))
        if attributes is not None:
            return attributes
        attributes = {}
        for method in node.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
                continue
            receiver = method.args.args[0].arg
            if any((dotted_name(decorator) or "").rsplit(".", 1)[-1] in ("property", "cached_property")
                   for decorator in method.decorator_list):
                returns = [statement for statement in _nested_statements(method.body, enter_definitions=False)
                           if isinstance(statement, ast.Return)]
                attributes.setdefault(method.name, []).extend(Binding(ret.lineno, ret.value) for ret in returns)
            for statement in _nested_statements(method.body):
                if isinstance(statement, ast.Expr):
                    registered = _registered_module_tensor(statement.value, receiver)
                    if registered is not None:
                        attributes.setdefault(registered, []).append(Binding(statement.lineno, None))
                    continue
                if isinstance(statement, ast.Assign):
                    targets, value = statement.targets, statement.value
                elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
                    targets = [statement.target]
                    value = statement.value if isinstance(statement, ast.AnnAssign) else None
                else:
                    continue
                for target in targets:
                    for element in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]):
                        if isinstance(element, ast.Attribute) and isinstance(element.value, ast.Name) \
                                and element.value.id == receiver:
                            bound = value if element is target else None
                            attributes.setdefault(element.attr, []).append(Binding(statement.lineno, bound))
        self._class_attributes[id(node)] = attributes
        return attributes

    def self_attribute_bindings(self, attribute: str, line: int) -> list[Binding] | None:
        """What `self.<attribute>` may hold at `line`: the assignments to it in the innermost enclosing class."""
        enclosing = self.class_node_at(line)
        return None if enclosing is None else self._attributes_of(enclosing).get(attribute)

    def class_node_at(self, line: int) -> ast.ClassDef | None:
        """The innermost class whose lines hold `line`."""
        enclosing = [node for node in self._class_nodes if node.lineno <= line <= (node.end_lineno or node.lineno)]
        return max(enclosing, key=lambda node: node.lineno) if enclosing else None

    def bindings_at(self, name: str, line: int) -> list[ast.expr | None] | None:
        """What `name` may hold when read at `line`, or None when it is not bound in this file.

        The bindings are those of the innermost function that binds the name
        (else the module's) that can reach `line`: those made on earlier lines,
        and, inside a loop, those made anywhere in that loop.
        """
        scope = self.binding_scope(name, line)
        return None if scope is None else [binding.value
                                           for binding in self.reaching(scope.bindings[name], line, scope, name)]

    def reaching_bindings(self, name: str, line: int) -> list[Binding] | None:
        scope = self.binding_scope(name, line)
        return None if scope is None else self.reaching(scope.bindings[name], line, scope, name)

    def reaching(self, bindings: list[Binding], line: int, scope: Scope | None = None,
                 name: str | None = None) -> list[Binding]:
        """The bindings that can reach `line`: those made on earlier lines, and, inside a loop, those made
        anywhere in that loop; not those in the other arm of an `if`, nor, given the scope and the name, those
        hidden by a statement that binds the name on every path between them and `line` (`x = x.cuda()` hides the
        parameter `x`; so does `if c: x = a` / `else: x = b` before `line` in its block)."""
        loops, other_arms = self._blocks_at(line)
        # A binding whose value holds `line` (`x = torch.cat([x,\n y])`) is made after the value is read.
        reaching = [binding for binding in bindings
                    if (binding.line < line and (binding.value is None or getattr(binding.value, "end_lineno", 0) < line)
                        or any(first <= binding.line <= last for first, last in loops))
                    and not any(first <= binding.line <= last for first, last in other_arms)]
        if scope is not None and name is not None and len(reaching) > 1:
            # The last such statement before `line` in a block that holds `line`: every path to `line` runs it. Not
            # for a read in a function or lambda nested in a loop's block: called later, it may see the bindings
            # the next pass makes before the statement runs again; in the function's own body it cannot.
            around = self.functions_around(line)
            nested = bool(around) and around[-1] is not scope.node
            hidden_before = max((first for first, last, block_first, block_last, own in scope.definite.get(name, ())
                                 if last < line and block_first <= line <= block_last and (own or not nested)),
                                default=None)
            if hidden_before is not None:
                reaching = [binding for binding in reaching if binding.line >= hidden_before]
        return reaching

    def _blocks_at(self, line: int) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
        """The loops around `line`, and the arms of `if`s whose other arm holds `line` (code there never runs
        before `line` in the same pass)."""
        if self._blocks_by_line is None:
            loops = _held_per_line([(first, last, (first, last)) for first, last in self.loops])
            other_arms = _held_per_line([(arm[0], arm[1], other) for body, orelse in self.if_arms
                                         for arm, other in ((body, orelse), (orelse, body))])
            self._blocks_by_line = (loops, other_arms)
        loops, other_arms = self._blocks_by_line
        return (loops[line] if 0 < line < len(loops) else (),
                other_arms[line] if 0 < line < len(other_arms) else ())

    def binding_scope(self, name: str, line: int) -> Scope | None:
        """The innermost function around `line` that binds `name`, else the module, if it binds `name`."""
        key = (name, line)
        if key in self._binding_scopes:
            return self._binding_scopes[key]
        scope = next((scope for scope in map(self.scope_for, reversed(self.functions_around(line)))
                      if name in scope.bindings), None)
        if scope is None:
            scope = self.scope_for(None)
        scope = self._binding_scopes[key] = scope if name in scope.bindings else None
        return scope

    def functions_around(self, line: int) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, ...]:
        """The functions whose lines hold `line`, outermost first."""
        if self._functions_by_line is None:
            self._functions_by_line = self._functions_per_line()
        return self._functions_by_line[line] if 0 < line < len(self._functions_by_line) else ()

    def function_at(self, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The innermost `def` whose lines hold `line` (a lambda's body is its enclosing function's)."""
        return next((node for node in reversed(self.functions_around(line))
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))), None)

    def _functions_per_line(self) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, ...]]:
        return _held_per_line([(node.lineno, node.end_lineno or node.lineno, node) for node in self._function_nodes])

    def parameter_annotation(self, name: str, line: int) -> ast.expr | None:
        """The annotation of `name` read at `line`, when `name` is a parameter of the function whose binding of
        it is seen there (what `bindings_at` follows); None for any other name, or a parameter without one."""
        arguments = self._arguments_binding(name, line)
        return None if arguments is None else next(
            (arg.annotation for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
             if arg.arg == name), None)

    def parameter_default(self, name: str, line: int) -> ast.expr | None:
        """The default of `name` read at `line`, when `name` is a parameter of the function whose binding of it is
        seen there; None for any other name, or a parameter without one."""
        arguments = self._arguments_binding(name, line)
        if arguments is None:
            return None
        return next((default for arg, default in parameter_defaults(arguments) if arg.arg == name), None)

    def in_other_arm(self, line: int, other: int) -> bool:
        """Whether `other` is in the other arm of an `if` whose one arm holds `line`: never run with it."""
        return any(first <= other <= last for first, last in self._blocks_at(line)[1])

    def _arguments_binding(self, name: str, line: int) -> ast.arguments | None:
        """The parameters of the function whose binding of `name` is seen at `line`, if one binds it."""
        scope = self.binding_scope(name, line)
        if scope is None:
            return None
        return next((node.args for node in reversed(self.functions_around(line)) if self.scope_for(node) is scope),
                    None)

    # ----- call sites --------------------------------------------------------

    def decorators_around(self, line: int) -> list[str]:
        """The qualified names of the decorators (`@torch.jit.script`, `@triton.jit(...)`) of the functions
        around `line`; "" for a decorator this file does not import."""
        return [self.qualify(dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator)) or ""
                for node in self.functions_around(line) if not isinstance(node, ast.Lambda)
                for decorator in node.decorator_list]

    def in_torchscript(self, line: int) -> bool:
        """True inside a function compiled by TorchScript (`@torch.jit.script`, `@torch.jit.export`, ...)."""
        return any(qualified.startswith("torch.jit.") and qualified not in ("torch.jit.ignore", "torch.jit.unused")
                   for qualified in self.decorators_around(line))

    def calls_named(self, names: frozenset[str]) -> list[ast.Call]:
        """Calls whose function's last name part (after resolving `from x import y as z`) is in `names`."""
        found = []
        for terminal, calls in self._calls_by_terminal.items():
            qualified = self.aliases.get(terminal)
            if qualified is None:
                if terminal in names:
                    found.extend(calls)
                continue
            # An imported name: `name(...)` calls what it imports; `x.name(...)` (`import pycuda.driver as cuda`
            # beside `t.cuda()`) calls a method of that name.
            imported = qualified.rsplit(".", 1)[-1]
            found.extend(call for call in calls if (imported if isinstance(call.func, ast.Name) else terminal) in names)
        return found

    def span(self, node: ast.expr | ast.stmt) -> tuple[tuple[int, int], tuple[int, int]]:
        """Where `node` starts and ends, as (line, column), columns in code points."""
        line, end_line = node.lineno, node.end_lineno or node.lineno
        return ((line, self.line_index.column_from_utf8(line, node.col_offset)),
                (end_line, self.line_index.column_from_utf8(end_line, node.end_col_offset or 0)))

    def add_site(self, node: ast.expr, code: str) -> Site:
        """Register `node` as a candidate of rule `code`; several rules may name the same node."""
        (line, column), (end_line, end_column) = self.span(node)
        key = (line, column, end_line, end_column)
        site = self.sites.get(key)
        if site is None:
            site = Site(node=node, line=line, column=column, end_line=end_line, end_column=end_column,
                        parent=self.parents.get(node),
                        synced_by=_sync_reading(node, self.parents) if isinstance(node, ast.Call) else None)
            self.sites[key] = site
        site.rules.add(code)
        return site

    def qualname_at(self, line: int) -> str | None:
        """The name the project model knows the function around `line` by (`Class.method`, `function`): the
        outermost function there, with the classes around it; None at module level or in a class made in a
        function."""
        functions = [node for node in self.functions_around(line) if not isinstance(node, ast.Lambda)]
        if not functions:
            return None
        return self.qualname_of(functions[0])

    def qualname_of(self, node: ast.AST) -> str | None:
        names = [node.name]
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, ast.Module):
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return None
            if isinstance(parent, ast.ClassDef):
                names.append(parent.name)
            parent = self.parents.get(parent)
        return ".".join(reversed(names))

    def class_at(self, line: int) -> str | None:
        """The qualified name (in the project model) of the class whose method holds `line`, if any."""
        qualname = self.qualname_at(line)
        if self.project is None or qualname is None or "." not in qualname:
            return None
        return self.project.class_of(qualname.rpartition(".")[0])

    def site_at(self, start, end) -> Site | None:
        """The candidate spanning exactly `start` to `end` (Positions), if one was registered."""
        return self.sites.get((start.line, start.column, end.line, end.column))


SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool"})
_SCALAR_STAND_INS = {"int": 0, "float": 0.0, "bool": False}
_SEQUENCE_ANNOTATIONS = frozenset({"list", "tuple", "List", "Tuple", "Sequence", "typing.List", "typing.Tuple",
                                   "typing.Sequence", "collections.abc.Sequence"})


def _annotated_value(annotation: ast.expr | None) -> ast.expr | None:
    """A parameter annotated `int` or `list[int]` holds host data: stand in a literal of that kind for it."""
    if annotation is None:
        return None
    base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    name = dotted_name(base)
    if name in SCALAR_ANNOTATIONS and base is annotation:
        return ast.copy_location(ast.Constant(_SCALAR_STAND_INS[name]), annotation)
    if name in _SEQUENCE_ANNOTATIONS:
        return ast.copy_location(ast.List(elts=[], ctx=ast.Load()), annotation)
    return None


def _registered_module_tensor(call: ast.expr, receiver: str) -> str | None:
    """The name in `self.register_buffer("name", ...)` / `self.register_parameter("name", ...)`, if `call` is
    one."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("register_buffer", "register_parameter")
            and isinstance(call.func.value, ast.Name) and call.func.value.id == receiver):
        return None
    name = call.args[0] if call.args else next((kw.value for kw in call.keywords if kw.arg == "name"), None)
    return name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None


def _nested_statements(body: list[ast.stmt], enter_definitions: bool = True):
    """Every statement in `body` and in the blocks nested in it, nested functions and classes included
    unless `enter_definitions` is False."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not enter_definitions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                stack.extend(block)


def _no_counts(name: str) -> bool:
    return False  # a count bound to another count's name is not followed


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, *_COMPREHENSIONS)


def _names_bound_only_to_counts(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The names every binding of which in the function's own scope (not its nested functions', classes' or
    comprehensions') assigns a count (`n = mask.sum()`, see `hotness.is_count`): not a parameter, nor a name
    bound any other way (`for`, `with`, `except ... as`, `import`, `global`, a walrus, an augmented
    assignment)."""
    values: dict[str, list[ast.expr | None]] = {}
    for arg in parameters(function.args):
        values.setdefault(arg.arg, []).append(None)
    assigned: set[int] = set()
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values.setdefault(node.targets[0].id, []).append(node.value)
            assigned.add(id(node.targets[0]))
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in assigned:
            values.setdefault(node.id, []).append(None)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                values.setdefault(name, []).append(None)
        elif isinstance(node, ast.alias):
            values.setdefault((node.asname or node.name).partition(".")[0], []).append(None)
        else:
            bound = getattr(node, "name", None) if isinstance(
                node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar, *_SCOPES)) else None
            bound = bound or (node.rest if isinstance(node, ast.MatchMapping) else None)
            if isinstance(bound, str):
                values.setdefault(bound, []).append(None)
        if isinstance(node, _SCOPES):
            continue  # its own scope: only its name (and a comprehension's first iterable, left out) is ours
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(name for name, bound in values.items()
                     if all(value is not None and is_count(value, _no_counts) for value in bound))


def _body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[int, int]]:
    """The lines of a function's body below its `def` line, as one span (none where the body shares that line):
    what runs once per distinct arguments when the function caches its results."""
    first = function.body[0].lineno
    return [(first, function.end_lineno or function.lineno)] if first > function.lineno else []


def _note_definite_stores(body: list[ast.stmt], scope: Scope) -> None:
    """Note in `scope.definite` the statements of `body`, and of the blocks inside it (not in nested functions or
    classes), that bind a name on every path through them. Inner blocks first, without recursion: a generated
    `elif` chain nests as deep as it is long."""
    order: list[tuple[list[ast.stmt], bool]] = []
    pending = [(body, True)]
    while pending:
        block, own = pending.pop()
        order.append((block, own))
        pending.extend((inner, False) for statement in block
                       if statement.__class__ in COMPOUND_STATEMENTS and statement.__class__ not in _SCOPE_TYPES
                       for inner in blocks(statement))
    bound: dict[int, frozenset[str] | None] = {}  # by statement: see `_always_bound`
    for block, own in reversed(order):
        first, last = block[0].lineno, block[-1].end_lineno or block[-1].lineno
        for statement in block:
            names = bound[id(statement)] = _always_bound(statement, bound)
            for name in names or ():
                scope.definite.setdefault(name, []).append(
                    (statement.lineno, statement.end_lineno or statement.lineno, first, last, own))


def _always_bound(statement: ast.stmt, bound: dict[int, frozenset[str] | None]) -> frozenset[str] | None:
    """The names `statement` binds on every path that goes on past it; None when no path does (`return`,
    `raise`, `break`, `continue`, an `if` whose arms all end so). `bound` holds the answer for the statements of
    its blocks. Not `x += y`: an update keeps what it updates (see _updated_cuda_tensor); not loops, whose body may
    not run; not the body of a `with` whose manager may swallow an exception (`contextlib.suppress`)."""
    kind = statement.__class__
    if kind is ast.Assign:
        return frozenset(name for target in statement.targets for name in _target_names(target))
    if kind is ast.AnnAssign:
        return frozenset(_target_names(statement.target)) if statement.value is not None else frozenset()
    if kind in (ast.Return, ast.Raise, ast.Break, ast.Continue):
        return None
    if kind is ast.If:
        return _either_bound(_block_bound(statement.body, bound), _block_bound(statement.orelse, bound))
    if kind in (ast.With, ast.AsyncWith):
        held = frozenset(name for item in statement.items if item.optional_vars is not None
                         for name in _target_names(item.optional_vars))
        if any(terminal_name(item.context_expr.func if isinstance(item.context_expr, ast.Call) else item.context_expr)
               in _MAY_SWALLOW for item in statement.items):
            return held
        inner = _block_bound(statement.body, bound)
        return None if inner is None else inner | held
    if kind in TRY_STATEMENTS:
        # Without an exception: the body, then the `else`; with one, one handler's block, after part of the body.
        body, orelse = _block_bound(statement.body, bound), _block_bound(statement.orelse, bound)
        done = None if body is None or orelse is None else body | orelse
        for handler in statement.handlers:
            done = _either_bound(done, _block_bound(handler.body, bound))
        final = _block_bound(statement.finalbody, bound)
        if done is None or final is None:
            return None  # every path leaves, through the body and the handlers or through the `finally`
        return done | final
    return frozenset()


# Context managers that may swallow an exception raised in their body, so that the body's bindings may not be made.
_MAY_SWALLOW = frozenset({"suppress", "raises", "assertRaises", "assertRaisesRegex", "ExitStack", "AsyncExitStack"})


def _block_bound(block: list[ast.stmt], bound: dict[int, frozenset[str] | None]) -> frozenset[str] | None:
    """The names every path through `block` that goes on past it binds (None: none goes on; an empty block binds
    nothing)."""
    names: frozenset[str] = frozenset()
    for statement in block:
        found = bound[id(statement)]
        if found is None:
            return None
        names |= found
    return names


def _either_bound(one: frozenset[str] | None, other: frozenset[str] | None) -> frozenset[str] | None:
    """What two alternative paths both bind (a path that never goes on binds everything)."""
    if one is None:
        return other
    return one if other is None else one & other


def _target_names(target: ast.expr) -> list[str]:
    """The names an assignment target binds: `x`, each of `x, (y, *z)`; not `a.b` nor `a[i]`."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _held_per_line(spans: list[tuple[int, int, _T]]) -> list[tuple[_T, ...]]:
    """For each line up to the last span's end, the items of the (first line, last line, item) spans holding it,
    in the order given, found in one pass over the lines: testing every span for each line asked about grows
    with the square of the file's length. Lines where no span opens or closes share one tuple."""
    last = max((span[1] for span in spans), default=0)
    table: list[tuple[_T, ...]] = [()] * (last + 1)
    by_start = sorted(range(len(spans)), key=lambda index: spans[index][0])
    open_spans: list[int] = []
    current: tuple[_T, ...] = ()
    next_span = 0
    first_end = last + 1  # the line the first of the open spans to close ends on
    for line in range(1, last + 1):
        changed = False
        while next_span < len(by_start) and spans[by_start[next_span]][0] <= line:
            open_spans.append(by_start[next_span])
            first_end = min(first_end, spans[by_start[next_span]][1])
            next_span += 1
            changed = True
        if first_end < line:
            open_spans = [index for index in open_spans if spans[index][1] >= line]
            first_end = min((spans[index][1] for index in open_spans), default=last + 1)
            changed = True
        if changed:
            open_spans.sort()
            current = tuple(spans[index][2] for index in open_spans)
        table[line] = current
    return table


_LEAF_FIELDS = frozenset({"ctx", "op", "ops"})  # expression contexts and operators: shared singletons
_SCALAR_FIELDS = frozenset({"id", "attr", "name", "arg", "asname", "module", "level", "kind", "type_comment",
                            "conversion", "is_async", "simple", "kwd_attrs", "rest"})  # never nodes
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}  # by node type: the fields that hold nodes or lists of nodes
# Type annotations hold types, never tensor code: the index walk leaves them out. Typed code holds many of them,
# and many of its subscripts are annotations (`Optional[torch.Tensor]`), each of which the sync finder and HDL107
# would otherwise examine as a possible mask or list index.
_ANNOTATION_FIELDS = {ast.arg: {"annotation"}, ast.AnnAssign: {"annotation"}, ast.FunctionDef: {"returns"},
                      ast.AsyncFunctionDef: {"returns"}}
_INDEXED_FIELDS: dict[type, tuple[str, ...]] = {}  # by node type: the child fields the index walk visits
_BINDING_TYPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Assign, ast.AnnAssign,
                            ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension, ast.withitem,
                            ast.Import, ast.ImportFrom, ast.ExceptHandler})
_SCOPE_TYPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda})
_SIMPLE_STATEMENT_TYPES = frozenset({ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise,
                                     ast.Assert, ast.Delete, ast.Pass, ast.Break, ast.Continue, ast.Global,
                                     ast.Nonlocal, ast.Import, ast.ImportFrom})
# Expressions without child nodes: the index walk records their parents without visiting them.
_LEAF_TYPES = frozenset({ast.Name, ast.Constant})
# The nodes the index walk records besides calls: those it lists in `scanned_nodes` (If and While are also
# statements it records), and the other statements it records. One dict lookup a node decides both.
_SCANNED, _STATEMENT = "scanned", "statement"
_INDEXED_TYPES = {
    **dict.fromkeys((ast.Subscript, ast.If, ast.While, ast.IfExp, ast.Assert, ast.comprehension, ast.BinOp), _SCANNED),
    **dict.fromkeys((ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.For, ast.AsyncFor, ast.Import,
                     ast.ImportFrom, ast.With, ast.AsyncWith, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.AugAssign,
                     ast.NamedExpr), _STATEMENT),
}
_OTHER_ASSIGNMENT_TYPES = (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)


def _child_fields(kind: type) -> tuple[str, ...]:
    skipped = _LEAF_FIELDS | _SCALAR_FIELDS | {ast.Constant: {"value"}, ast.MatchSingleton: {"value"},
                                               ast.Global: {"names"}, ast.Nonlocal: {"names"}}.get(kind, set())
    fields = _CHILD_FIELDS[kind] = tuple(name for name in kind._fields if name not in skipped)
    return fields


def _indexed_fields(kind: type) -> tuple[str, ...]:
    skipped = _ANNOTATION_FIELDS.get(kind, set())
    fields = _INDEXED_FIELDS[kind] = tuple(name for name in _child_fields(kind) if name not in skipped)
    return fields


def _children(node: ast.AST) -> list[ast.AST]:
    """The node's child nodes, as ast.iter_child_nodes gives them, less contexts and operators."""
    children = []
    fields = _CHILD_FIELDS.get(type(node))
    for name in fields if fields is not None else _child_fields(type(node)):
        value = getattr(node, name)
        if value.__class__ is list:  # of nodes, or None for a dict's `**` entry
            children.extend([item for item in value if item is not None])
        elif value is not None:
            children.append(value)
    return children


@functools.lru_cache(maxsize=8192)
def placement_by_attribute_name(name: str) -> Placement:
    """An attribute named `*_cpu` (`*_list`, `*_host`, ...) holds a host tensor, one named `*_gpu` / `*_cuda`
    (`batch.seq_lens_gpu`) a CUDA tensor unless it reads as a flag or a count; other names say nothing.
    (For local names only the host suffixes count: a local `utilization_gpu` is as often a string.)"""
    if name.endswith(HOST_NAME_SUFFIXES):
        return Placement.HOST
    if name.endswith(GPU_NAME_SUFFIXES) and names_a_tensor(name.rsplit("_", 1)[0]):
        return Placement.GPU
    return Placement.UNKNOWN


@functools.lru_cache(maxsize=8192)
def names_a_tensor(stem: str) -> bool:
    """Whether `stem`, the name before a `_gpu` / `_cpu` suffix, may name a tensor: not a flag, a count or an
    action (the stems of `is_cuda`, `use_gpu`, `num_gpu`, `inputs_on_cuda`, `move_to_cpu`)."""
    words = stem.lower().strip("_").split("_")
    return words != [""] and words[0] not in _NOT_TENSOR_FIRST_WORDS and words[-1] not in _NOT_TENSOR_LAST_WORDS


def host_transfer(value: ast.expr | None) -> bool:
    """A call chain with a step that copies to the host: `.cpu()`, `.tolist()`, `.numpy()`, `.to("cpu")`
    (also as a branch of `a if c else None`)."""
    if isinstance(value, ast.IfExp):
        branches = [branch for branch in (value.body, value.orelse)
                    if not (isinstance(branch, ast.Constant) and branch.value is None)]
        return bool(branches) and all(host_transfer(branch) for branch in branches)
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        method = value.func.attr
        if method in ("cpu", "tolist", "numpy") or method == "to" and any(
                isinstance(arg, ast.Constant) and arg.value == "cpu"
                for arg in [*value.args, *(keyword.value for keyword in value.keywords)]):
            return True
        value = value.func.value
    return False


def _note_list_addition(call: ast.Call, scope: Scope) -> None:
    """Record `xs.append(v)` as a binding of v, and `xs.extend(...)` / `xs.insert(...)` as one of None."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("append", "extend", "insert") \
            and isinstance(func.value, ast.Name):
        value = call.args[0] if func.attr == "append" and len(call.args) == 1 else None
        scope.list_additions.setdefault(func.value.id, []).append(Binding(call.lineno, value))


def _bind(node: ast.AST, scope: Scope) -> None:
    """Record the names `node` itself binds (not those bound inside it)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        scope.bindings.setdefault(node.name, []).append(Binding(node.lineno, None))
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            _bind_target(scope, target, node.value, node.lineno)
    elif isinstance(node, ast.AnnAssign):
        # `n: int = config.rank` holds a Python number, which the value read alone does not show: bind the
        # annotation's stand-in. Not for a computed value, which shows itself and may contradict the annotation
        # (`has_nan: bool = torch.isnan(x).any()` is a tensor).
        stand_in = _annotated_value(node.annotation) if isinstance(node.value, (ast.Name, ast.Attribute,
                                                                                ast.Subscript)) else None
        scalar = isinstance(stand_in, ast.Constant)
        _bind_target(scope, node.target, ast.copy_location(stand_in, node.value) if scalar else node.value,
                     node.lineno)
    elif isinstance(node, ast.AugAssign):
        # `x += y` binds x to `x + y`: classifiers see an operation on x, as they would for `x = x + y`
        update = node.target
        if isinstance(update, ast.Name):
            update = ast.copy_location(ast.BinOp(left=ast.Name(update.id, ast.Load()), op=node.op,
                                                 right=node.value), node.value)
            ast.fix_missing_locations(update)
            _bind_target(scope, node.target, update, node.lineno)
        else:
            _bind_target(scope, node.target, None, node.lineno)
    elif isinstance(node, ast.NamedExpr):
        _bind_target(scope, node.target, node.value, node.lineno)
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        _bind_target(scope, node.target, None, node.lineno)
    elif isinstance(node, ast.comprehension):
        _bind_target(scope, node.target, None, node.target.lineno)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        _bind_target(scope, node.optional_vars, None, node.optional_vars.lineno)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            scope.bindings.setdefault((alias.asname or alias.name).split(".")[0], []).append(
                Binding(node.lineno, None))
    elif isinstance(node, ast.ExceptHandler) and node.name:
        scope.bindings.setdefault(node.name, []).append(Binding(node.lineno, None))


def _bind_target(scope: Scope, target: ast.expr, value: ast.expr | None, line: int) -> None:
    """Bind the names of an assignment target: a name to the value, each name unpacked (`a, *b = ...`) to None."""
    bound = value if isinstance(target, ast.Name) else None
    for name in _target_names(target):
        scope.bindings.setdefault(name, []).append(Binding(line, bound))


def _sync_reading(call: ast.Call, parents: dict[ast.AST, ast.AST]) -> str | None:
    """How the call's result is read back to the host right away, if it is."""
    node, chain = call, ""
    while True:  # climb a method chain such as `torch.tensor(...).sum().item()`
        parent = parents.get(node)
        method_call = parents.get(parent) if isinstance(parent, ast.Attribute) else None
        if isinstance(method_call, ast.Call) and method_call.func is parent:
            chain += f".{parent.attr}()"
            if parent.attr in SYNC_METHODS:
                return chain
            node = method_call
            continue
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in SYNC_BUILTINS \
                and parent.args == [node]:
            return f"{parent.func.id}(<tensor>{chain})"
        break
    statement = parents.get(call)
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is call:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            # The next statement or the one after it: a read two statements on waits on the copy all the same.
            following = _next_statement(statement, parents)
            for where in ("on the next line", "two statements later"):
                if following is None:
                    break
                read = _reads_back(following, targets[0].id)
                if read is not None:
                    return f"{read} {where}"
                following = _next_statement(following, parents)
    return None


def _next_statement(statement: ast.stmt, parents: dict[ast.AST, ast.AST]) -> ast.stmt | None:
    block_owner = parents.get(statement)
    for field_name in ("body", "orelse", "finalbody"):
        block = getattr(block_owner, field_name, None)
        if isinstance(block, list) and statement in block:
            index = block.index(statement)
            return block[index + 1] if index + 1 < len(block) else None
    return None


def _reads_back(statement: ast.stmt, name: str) -> str | None:
    for node in ast.walk(statement):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in SYNC_METHODS \
                    and isinstance(func.value, ast.Name) and func.value.id == name:
                return f"{name}.{func.attr}()"
            if isinstance(func, ast.Name) and func.id in SYNC_BUILTINS and len(node.args) == 1 \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == name:
                return f"{func.id}({name})"
    return None

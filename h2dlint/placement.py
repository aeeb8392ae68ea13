"""Where a value lives: whether a device is CUDA, whether data is host data, whether a tensor is on the GPU.

The one place that answers these for the rules and the sync finder, from the file's index (`FileFacts`: its
bindings, scopes, imports) and, for what other files decide, the project model (`FileView`): an attribute
placed by its class, a parameter by what every call passes, a call's result by what its callees return.
"""

from __future__ import annotations

import ast
import threading
import weakref
from collections.abc import Callable
from typing import TypeVar

from .facts import (
    CUDA_DEVICE_STRING,
    CUDA_TENSOR_TYPES,
    HOST_NAME_SUFFIXES,
    HOST_TENSOR_FUNCTIONS,
    HOST_TENSOR_TYPES,
    JOINING_FUNCTIONS,
    MIRROR_SUFFIXES,
    NEW_TENSOR_METHODS,
    NON_TENSOR_METHODS,
    NON_TENSOR_PREFIXES,
    NON_TENSOR_TENSOR_METHODS,
    NON_TENSOR_TORCH_FUNCTIONS,
    NON_TENSOR_TORCH_NAMES,
    NUMPY_ARRAY_METHODS,
    OTHER_ACCELERATOR_APIS,
    SAME_DEVICE_ATTRIBUTES,
    SCALAR_ANNOTATIONS,
    TENSOR_OP_NAMESPACES,
    TORCH_DTYPES,
    TORCH_FACTORIES,
    Binding,
    Data,
    Device,
    FileFacts,
    Placement,
    Scope,
    host_transfer,
    names_host,
    placement_by_attribute_name,
    tensor_type_name,
)
from .syntax import annotated_name, async_copy_target, certainly_no_tensor, dotted_name

_T = TypeVar("_T")

_HOST_GROUP_WORDS = ("cpu", "gloo")  # `cpu_group`, `backend="gloo"`: a collective on the host
_SEQUENCE_DISPLAYS = (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)


def classify_device(facts: FileFacts, expr: ast.expr, line: int, depth: int = 0) -> Device:
    if isinstance(expr, ast.Constant):
        value = expr.value
        if isinstance(value, str):
            # PyTorch takes no blanks around the type either.
            return Device.CUDA if CUDA_DEVICE_STRING.fullmatch(value) else Device.NOT_CUDA
        if isinstance(value, int) and not isinstance(value, bool):
            return Device.CUDA
        return Device.NOT_CUDA if value is None else Device.UNKNOWN
    if isinstance(expr, ast.JoinedStr) and expr.values and isinstance(expr.values[0], ast.Constant):
        prefix = str(expr.values[0].value)
        if prefix.startswith("cuda"):
            return Device.CUDA
        if prefix.startswith(("cpu", "meta")):
            return Device.NOT_CUDA
        return Device.UNKNOWN
    if isinstance(expr, ast.Call):
        qualified = facts.qualify(dotted_name(expr.func))
        if qualified == "torch.cuda.current_device":
            return Device.CUDA
        if qualified and qualified.startswith(OTHER_ACCELERATOR_APIS):
            return Device.NOT_CUDA  # `torch.npu.current_device()`: another accelerator's device
        if qualified == "torch.device":
            if expr.args:
                return classify_device(facts, expr.args[0], line, depth + 1)
            # `type=` names the kind of device, a string: an int there is no ordinal.
            kind = next((kw.value for kw in expr.keywords if kw.arg == "type"), None)
            return _classify_bound_device(facts, kind, line, depth) if kind is not None else Device.UNKNOWN
        return Device.UNKNOWN
    if isinstance(expr, ast.IfExp):
        both = {classify_device(facts, expr.body, line, depth + 1), classify_device(facts, expr.orelse, line, depth + 1)}
        return both.pop() if len(both) == 1 else Device.UNKNOWN
    device = Device.UNKNOWN
    if isinstance(expr, ast.Name) and depth < 4:
        device = _classify_name(facts, expr.id, line, lambda value, at: _classify_bound_device(facts, value, at, depth),
                                     Device.UNKNOWN)
    if device is Device.UNKNOWN and isinstance(expr, (ast.Name, ast.Attribute)) \
            and dotted_name(expr) in facts.gpu_device_names:
        return Device.CUDA
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self" \
            and depth < 4 and facts.project is not None:
        assigned = _own_device_attribute(facts, expr.attr, line, depth)
        if assigned is not Device.UNKNOWN:
            return assigned
    if isinstance(expr, ast.Attribute) and expr.attr == "device":
        if _data_read_as_numpy(facts, expr):
            return Device.NOT_CUDA
        # A tensor's device is where the tensor lives: `torch.tensor(v, device=ends.device)` after
        # `ends = mask.cpu().nonzero()` makes a host tensor, and copies nothing.
        tensor = _placement_of_device_owner(facts, expr, line, depth)
        if tensor is Placement.HOST:
            return Device.NOT_CUDA
        if tensor is Placement.GPU and not facts.for_other_accelerator:
            return Device.CUDA
    if device is Device.UNKNOWN and facts.project is not None and depth < 4:
        # A device the project model places (`self.device` assigned a CUDA device, or a parameter every
        # caller passes one): where a tensor made on it lives.
        if isinstance(expr, ast.Attribute):
            placed = _model_attribute(facts, expr, line, device=True)
        elif isinstance(expr, ast.Name):
            placed = _model_parameter(facts, expr.id, line, device=True)
        else:
            placed = Placement.UNKNOWN
        if placed is not Placement.UNKNOWN:
            return Device.CUDA if placed is Placement.GPU else Device.NOT_CUDA
    if device is Device.UNKNOWN and facts.for_other_accelerator:
        return Device.NOT_CUDA  # a file for another accelerator only: its devices are that accelerator's
    return device


def _placement_on(facts: FileFacts, device: ast.expr, line: int) -> Placement:
    """Where a tensor made on or moved to `device` lives: where the device certainly is, else on the GPU where the
    code copies to the device with `non_blocking=True` (`_copied_to_asynchronously`, or a class's `self.device` the
    model places so): a device known by what the code means to do with it, not certainly CUDA, so that no fix
    takes it for one (`pin_memory=True` raises on a build without CUDA)."""
    placement = _placement_of(classify_device(facts, device, line))
    if placement is not Placement.UNKNOWN or facts.for_other_accelerator:
        return placement
    if isinstance(device, ast.Name):
        if _copied_to_asynchronously(facts, device.id, line, 0):
            return Placement.GPU
        # `device = self.device`: a local bound only to such attributes
        bindings = facts.reaching_bindings(device.id, line)
        if bindings and all(isinstance(binding.value, ast.Attribute)
                            and _placement_on(facts, binding.value, binding.line) is Placement.GPU
                            for binding in bindings):
            return Placement.GPU
    if isinstance(device, ast.Attribute) and facts.project is not None:
        return _model_attribute(facts, device, line, device=True, intended=True)
    return Placement.UNKNOWN


def _copied_to_asynchronously(facts: FileFacts, name: str, line: int, depth: int) -> bool:
    """Whether the code copies to the device `name` holds at `line` with `non_blocking=True` (`x.to(device,
    non_blocking=True)`, the same bindings reaching both, not in the other arm of an `if`), and no binding of it may
    be the host's (`"cpu"`, an arm of `"cuda" if gpu else "cpu"`, a parameter defaulting to it, a loop over devices):
    a GPU device, as a class's `self.device` is (ProjectModel._async_copy_target)."""
    copies = _async_copies(facts).get(name)
    reaching = facts.reaching_bindings(name, line) if copies else None
    if not reaching or not any(facts.reaching_bindings(name, at) == reaching and not facts.in_other_arm(line, at)
                               for at in copies):  # type: ignore[union-attr]
        return False
    return not any(_may_be_host_binding(facts, name, binding, line, depth) for binding in reaching)


_ASYNC_COPIES: weakref.WeakKeyDictionary[FileFacts, dict[str, list[int]]] = weakref.WeakKeyDictionary()


def _async_copies(facts: FileFacts) -> dict[str, list[int]]:
    """The lines of the file's `x.to(name, non_blocking=True)` copies, by the device's name (see
    syntax.async_copy_target)."""
    found = _ASYNC_COPIES.get(facts)
    if found is None:
        found = {}
        for call in facts.calls_named(frozenset({"to"})):
            target = async_copy_target(call)
            if isinstance(target, ast.Name):
                found.setdefault(target.id, []).append(call.lineno)
        _ASYNC_COPIES[facts] = found
    return found


def _may_be_host_binding(facts: FileFacts, name: str, binding: Binding, line: int, depth: int) -> bool:
    """Whether the device a binding of `name` (read at `line`) gives may be the host's: its value, the items of the
    loop binding it, or the default of the parameter."""
    if binding.value is not None:
        return _may_be_host_device(facts, binding.value, binding.line, depth)
    loop = facts.for_loops.get(binding.line)
    if loop is not None:  # `for device in ["cpu", "cuda"]:`, or devices of unknown kinds
        elements = loop.iter.elts if isinstance(loop.iter, (ast.List, ast.Tuple)) else None
        return elements is None or any(_may_be_host_device(facts, element, binding.line, depth)
                                       for element in elements)
    return _may_be_host_device(facts, facts.parameter_default(name, line), line, depth)


def _may_be_host_device(facts: FileFacts, value: ast.expr | None, line: int, depth: int) -> bool:
    """Whether a device value may be the host's: one classify_device reads so, or an arm of a conditional
    expression that is one, also inside `torch.device(...)` (`torch.device("cuda" if ok else "cpu")`,
    `torch.device(type=...)`)."""
    if value is None or depth > 4:
        return False
    if isinstance(value, ast.IfExp):
        return _may_be_host_device(facts, value.body, line, depth + 1) \
            or _may_be_host_device(facts, value.orelse, line, depth + 1)
    if isinstance(value, ast.Call) and facts.qualify(dotted_name(value.func)) == "torch.device":
        kind = value.args[0] if value.args else next((kw.value for kw in value.keywords if kw.arg == "type"), None)
        return _may_be_host_device(facts, kind, line, depth + 1)
    return classify_device(facts, value, line, depth + 1) is Device.NOT_CUDA


def _own_device_attribute(facts: FileFacts, attr: str, line: int, depth: int) -> Device:
    """What the enclosing class assigns to `self.attr` or, for a property, returns (`def device(self): return
    "cpu"`), when the values agree and none is a `None` placeholder, and the project model finds no other code
    that sets it: no subclass defining or assigning it, no store into it on another object."""
    bindings = facts.self_attribute_bindings(attr, line)
    if not bindings or any(binding.value is None or isinstance(binding.value, ast.Constant)
                           and binding.value.value is None for binding in bindings):
        return Device.UNKNOWN
    kinds = {_classify_bound_device(facts, binding.value, binding.line, depth) for binding in bindings}
    if len(kinds) != 1 or Device.UNKNOWN in kinds:
        return Device.UNKNOWN
    class_name = facts.class_at(line)
    return kinds.pop() if class_name and facts.project.sets_attribute_alone(class_name, attr) else Device.UNKNOWN


class _OpenQuestions:
    """The expressions a question is being answered for, per thread, for a question whose answer may start a
    classification afresh (depth 0) and so meet the same expression again: the depth bound cannot end that
    cycle, so an expression met again while it is open, or under `most` others, gets the `closed` answer."""

    def __init__(self, most: int) -> None:
        self._local = threading.local()
        self._most = most

    def answer(self, expr: ast.expr, line: int, compute: Callable[[], _T], closed: _T) -> _T:
        open_keys = getattr(self._local, "keys", None)
        if open_keys is None:
            open_keys = self._local.keys = set()
        key = (id(expr), line)
        if key in open_keys or len(open_keys) >= self._most:
            return closed
        open_keys.add(key)
        try:
            return compute()
        finally:
            open_keys.discard(key)


_DEVICE_OWNERS = _OpenQuestions(most=3)  # the `x.device` expressions being classified


def _placement_of_device_owner(facts: FileFacts, expr: ast.Attribute, line: int, depth: int) -> Placement:
    """Where the tensor whose `.device` `expr` reads lives. A name may be bound to a tensor made on its own device
    (`x = torch.cat([x, torch.zeros(1, device=x.device)])` in a loop): an expression met again while it is being
    classified is unknown, which ends the cycle; so is one met under three others. (A device is classified afresh
    wherever a tensor is made on it, so a chain of tensors made on each other's devices is bounded here.)"""
    return _DEVICE_OWNERS.answer(expr, line, lambda: classify_placement(facts, expr.value, line, depth + 1),
                                 Placement.UNKNOWN)


def _classify_bound_device(facts: FileFacts, value: ast.expr, line: int, depth: int) -> Device:
    """A name bound to an int (or to a choice of ints, `0 if c else 1`) is a count or an index as often as a
    device ordinal: unknown. (Only an int written as the device is an ordinal, as TreeEvidence counts it.)"""
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return Device.UNKNOWN
    if isinstance(value, ast.IfExp):
        both = {_classify_bound_device(facts, value.body, line, depth), _classify_bound_device(facts, value.orelse,
                                                                                                 line, depth)}
        return both.pop() if len(both) == 1 else Device.UNKNOWN
    return classify_device(facts, value, line, depth + 1)


def classify_data(facts: FileFacts, expr: ast.expr, line: int, depth: int = 0) -> Data:
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set, ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return Data.HOST
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float, complex, bool)):
        return Data.HOST
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.operand, ast.Constant):
        return Data.HOST
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.Add)) \
            and isinstance(expr.left, (ast.List, ast.Tuple)):  # `[x] * n`, `[a] + rest`
        return Data.HOST
    if isinstance(expr, ast.IfExp):
        both = {classify_data(facts, expr.body, line, depth + 1), classify_data(facts, expr.orelse, line, depth + 1)}
        return both.pop() if len(both) == 1 else Data.UNKNOWN
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr == "tolist":
            return Data.HOST
        if isinstance(func, ast.Attribute) and func.attr == "numpy" and not expr.args:
            return Data.LIKELY_HOST
        if isinstance(func, ast.Attribute) and func.attr in NUMPY_ARRAY_METHODS and depth < 4 \
                and classify_data(facts, func.value, line, depth + 1) is Data.LIKELY_HOST:
            return Data.LIKELY_HOST
        if isinstance(func, ast.Attribute) and (func.attr in ("cuda", "to") or func.attr in NEW_TENSOR_METHODS):
            return Data.TENSOR  # (`x.new_tensor(d)` is a tensor on `x`'s device, whatever `d` was)
        if isinstance(func, ast.Name) and func.id in ("list", "tuple", "range", "sorted") \
                and func.id not in facts.aliases:
            return Data.HOST
        qualified = facts.qualify(dotted_name(func)) or ""
        if qualified.startswith("numpy."):
            return Data.LIKELY_HOST
        # Not host data (a tensor of some device) is all HDL101 needs to know here: whatever torch makes, but for
        # models, streams, devices, compiled or loaded objects (`torch.cuda.Stream()`, `torch.load(path)`). Whether
        # a call certainly returns a tensor is a narrower question (`torch_call_makes_tensor`).
        if qualified.startswith("torch.") and (qualified.endswith("Tensor") or not (
                qualified.startswith(_NO_TENSOR_NAMESPACES) or qualified in _NO_TENSOR_CALLS
                or qualified.rpartition(".")[2] in NON_TENSOR_TORCH_FUNCTIONS)):
            return Data.TENSOR
        return Data.UNKNOWN
    if isinstance(expr, ast.Name):
        if depth < 4:
            bound = _classify_name(facts, expr.id, line, lambda value, at: classify_data(facts, value, at, depth + 1),
                                        Data.UNKNOWN)
            if bound is not Data.UNKNOWN:
                return bound
            if _item_of_host_data(facts, expr.id, line, depth):
                return Data.LIKELY_HOST
        return Data.LIKELY_HOST if expr.id.endswith(HOST_NAME_SUFFIXES) else Data.UNKNOWN
    if isinstance(expr, ast.Attribute):
        return Data.LIKELY_HOST if expr.attr.endswith(HOST_NAME_SUFFIXES) else Data.UNKNOWN
    if isinstance(expr, ast.Subscript) and depth < 4:
        return _classify_item(facts, expr, line, depth)
    if isinstance(expr, ast.BinOp) and depth < 4:
        # Arithmetic on a numpy array (or a host mirror) with host values stays on the host: `rect @ trv2c`.
        sides = {classify_data(facts, expr.left, line, depth + 1), classify_data(facts, expr.right, line, depth + 1)}
        if Data.LIKELY_HOST in sides and sides <= {Data.LIKELY_HOST, Data.HOST}:
            return Data.LIKELY_HOST
    return Data.UNKNOWN


# What these make is no tensor: models, streams, devices, compiled or loaded objects (`torch.cuda.Stream()`,
# `torch._inductor.aoti_load_package(path)`); legacy constructors (`torch.cuda.FloatTensor`) make tensors.
_NO_TENSOR_NAMESPACES = ("torch._", "torch.cuda.", "torch.backends.", "torch.jit.", "torch.export.", "torch.compiler.",
                         "torch.distributed.", "torch.utils.data.", "torch.profiler.", "torch.onnx.", "torch.hub.")
_NO_TENSOR_CALLS = frozenset({"torch.compile", "torch.load", "torch.device", "torch.finfo", "torch.iinfo",
                              "torch.Generator", "torch.Size", "torch.no_grad", "torch.inference_mode",
                              "torch.enable_grad", "torch.get_default_device"})


def _item_of_host_data(facts: FileFacts, name: str, line: int, depth: int) -> bool:
    """Whether every binding of `name` that reaches `line` is the target of a loop over a numpy array or a host
    mirror (`for pred in predictions:` of `predictions = logits.cpu().numpy()`): its items are host data too."""
    bindings = facts.reaching_bindings(name, line)
    if not bindings or any(binding.value is not None for binding in bindings):
        return False
    loops = facts.for_loops
    for binding in bindings:
        container = _iterated(loops[binding.line], name) if binding.line in loops else None
        if container is None or _items_of(facts, container, binding.line, depth) is not Data.LIKELY_HOST:
            return False
    return True


def _iterated(loop: ast.For | ast.AsyncFor, name: str) -> ast.expr | None:
    """What the loop takes `name` from, an item at a time: `xs` in `for name in xs:`, `for i, name in
    enumerate(xs):` and `for a, name in zip(ys, xs):`."""
    target, iterable = loop.target, loop.iter
    if isinstance(target, ast.Name):
        return iterable if target.id == name else None
    if not (isinstance(target, ast.Tuple) and isinstance(iterable, ast.Call) and not iterable.keywords
            and all(isinstance(arg, ast.expr) and not isinstance(arg, ast.Starred) for arg in iterable.args)):
        return None
    names = [element.id if isinstance(element, ast.Name) else None for element in target.elts]
    if name not in names:
        return None
    function = dotted_name(iterable.func)
    if function == "zip" and len(iterable.args) == len(names):
        return iterable.args[names.index(name)]
    if function == "enumerate" and len(iterable.args) == 1 and names == [names[0], name]:
        return iterable.args[0]
    return None


def _classify_item(facts: FileFacts, expr: ast.Subscript, line: int, depth: int) -> Data:
    """A slice is what it slices (`idxs[-3:]` of a numpy array is one, of a list a list, of a tensor a tensor). An
    item of a numpy array or a host mirror is host data too; an item of a list may be anything, a CUDA tensor
    among others (`param_list[0]`, `rows[i]`)."""
    if isinstance(expr.slice, ast.Slice):
        return classify_data(facts, expr.value, line, depth + 1)
    return _items_of(facts, expr.value, line, depth)


def _items_of(facts: FileFacts, container: ast.expr, line: int, depth: int) -> Data:
    if classify_data(facts, container, line, depth + 1) is Data.LIKELY_HOST \
            and not _may_be_a_list(facts, container, line, depth):
        return Data.LIKELY_HOST
    return Data.UNKNOWN


def _named_a_list(expr: ast.expr) -> bool:
    """`masks_list`, `self.param_list`: a name the `*_list` host spelling marks, which holds a Python list whose
    items may be tensors of any device."""
    return (dotted_name(expr) or "").endswith("_list")


def _may_be_a_list(facts: FileFacts, expr: ast.expr, line: int, depth: int) -> bool:
    """Whether `expr` is or comes from a name that only its `*_list` spelling calls host data (`losses_list[1:]`,
    `rest` of `rest = self.loss_list`): a Python list, whose items may be tensors of any device."""
    for node in ast.walk(expr):
        if _named_a_list(node):
            return True
        if isinstance(node, ast.Name) and depth < 4 and any(
                binding.value is not None and _may_be_a_list(facts, binding.value, binding.line, depth + 1)
                for binding in facts.reaching_bindings(node.id, line) or ()):
            return True
    return False


def classify_placement(facts: FileFacts, expr: ast.expr, line: int, depth: int = 0) -> Placement:
    """Whether `expr` (a tensor) is on a CUDA device, on the host, or unknown.

    GPU: `.cuda()`, `.to(<cuda device>)`, a torch factory with a CUDA `device=`, `.type(torch.cuda.LongTensor)`.
    HOST: `.cpu()`, `.pin_memory()`, `.type(torch.BoolTensor)`, `torch.from_numpy`, a factory without a device
    or with a host device (`torch.tensor(t)` of a tensor: where `t` is), a `*_cpu` name,
    `torch.cat` / `torch.stack` of host tensors only, a comparison with a host tensor of
    one or more dimensions. Names follow their local bindings, and `self.x` the
    assignments to it in the enclosing class (or, for a property, what it returns). A
    name of unknown placement that its function makes and passes to a torch.distributed
    collective (not on a CPU or gloo group) is a CUDA tensor, as NCCL needs one. Tensor
    computations (torch functions, tensor methods, operators, indexing, `.to(dtype)`)
    keep the placement of their known tensor operands. In code that prepares samples for
    a data loader (`ProjectModel.runs_in_data_loading`), a tensor of unknown placement is
    on the host: what is on the GPU there was put there in the code itself.
    """
    placement = _classify_placement(facts, expr, line, depth)
    if placement is Placement.UNKNOWN and facts.project is not None and _prepares_samples(facts, line):
        return Placement.HOST
    return placement


def _prepares_samples(facts: FileFacts, line: int) -> bool:
    """Whether the function around `line` runs in a data loader, preparing samples on the host."""
    qualname = facts.qualname_at(line)
    if qualname is None:
        return False
    known = _PREPARES_SAMPLES.setdefault(facts, {})
    if qualname not in known:
        known[qualname] = facts.project.runs_in_data_loading(qualname) is not None
    return known[qualname]


_PREPARES_SAMPLES: weakref.WeakKeyDictionary[FileFacts, dict[str, bool]] = weakref.WeakKeyDictionary()


def _classify_placement(facts: FileFacts, expr: ast.expr, line: int, depth: int) -> Placement:
    if depth > 6:
        return Placement.UNKNOWN
    if isinstance(expr, ast.Call):
        func = expr.func
        if _next_batch(facts, expr, line, depth):
            return Placement.HOST  # a batch a data loader hands out
        if isinstance(func, ast.Attribute):
            if func.attr in ("cuda", "to") and _is_module(facts, func.value):
                return Placement.UNKNOWN  # `nn.Linear(...).cuda()` is a module, not a tensor
            if func.attr == "cuda":
                return Placement.GPU
            if func.attr in ("cpu", "pin_memory", "numpy"):
                return Placement.HOST
            if func.attr == "type" and len(expr.args) == 1:
                # `x.type(torch.BoolTensor)` converts to a CPU tensor type (copying a CUDA tensor to the host),
                # `x.type(torch.cuda.LongTensor)` to a CUDA one; a dtype keeps the placement.
                named = expr.args[0]
                kind = tensor_type_name(named, facts.aliases)
                if kind in HOST_TENSOR_TYPES:
                    return Placement.HOST
                if kind in CUDA_TENSOR_TYPES:
                    return Placement.GPU
                if _is_dtype(facts, named):
                    return classify_placement(facts, func.value, line, depth)
            device = next((kw.value for kw in expr.keywords if kw.arg == "device"), None)
            if func.attr in NEW_TENSOR_METHODS and device is not None:
                return _placement_on(facts, device, line)
            if func.attr == "to":
                target = expr.args[0] if expr.args else next(
                    (kw.value for kw in expr.keywords if kw.arg == "device"), None)
                if target is None or _is_dtype(facts, target):
                    return classify_placement(facts, func.value, line, depth)
                return _placement_on(facts, target, line)
        qualified = facts.qualify(dotted_name(func)) or ""
        if qualified == "torch.from_numpy" or qualified in HOST_TENSOR_FUNCTIONS or qualified in HOST_TENSOR_TYPES:
            return Placement.HOST
        if qualified in CUDA_TENSOR_TYPES:
            return Placement.GPU
        if qualified in JOINING_FUNCTIONS:
            tensors = expr.args[0] if expr.args else next(
                (kw.value for kw in expr.keywords if kw.arg == "tensors"), None)
            if tensors is not None and _host_tensors(facts, tensors, line, depth + 1):
                return Placement.HOST
        if qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in TORCH_FACTORIES:
            device = next((kw.value for kw in expr.keywords if kw.arg == "device"), None)
            if device is None and qualified in ("torch.tensor", "torch.as_tensor") and expr.args \
                    and not any(kw.arg == "pin_memory" for kw in expr.keywords) \
                    and classify_data(facts, expr.args[0], line) not in (Data.HOST, Data.LIKELY_HOST) \
                    and _certainly_tensor(facts, expr.args[0], line):
                # Made from a tensor, it stays on that tensor's device (`torch.tensor(mask.sum())`); pinned, it is
                # host memory whatever it was made from.
                return classify_placement(facts, expr.args[0], line, depth + 1)
            if device is None:
                return Placement.UNKNOWN if qualified.endswith("_like") else Placement.HOST
            return _placement_on(facts, device, line)
        if qualified.startswith("torch."):
            if qualified.rsplit(".", 1)[0] + "." in TENSOR_OP_NAMESPACES \
                    and qualified.rsplit(".", 1)[-1] not in NON_TENSOR_TORCH_FUNCTIONS:
                device = next((kw.value for kw in expr.keywords if kw.arg == "device"), None)
                if device is not None:  # `torch.asarray(x, device=...)`: made there, whatever `x` is
                    return _placement_on(facts, device, line)
                operands = [*expr.args, *(kw.value for kw in expr.keywords if kw.arg not in _NO_TENSOR_KEYWORDS)]
                return _placement_of_operands(facts, operands, line, depth)
            return Placement.UNKNOWN
        if facts.project is not None:
            by_model = _model_call(facts, expr, line)
            if by_model is not Placement.UNKNOWN:
                return by_model
        if qualified:
            return Placement.UNKNOWN
        if isinstance(func, ast.Attribute) and tensor_method_returns_tensor(func.attr):
            return classify_placement(facts, func.value, line, depth)
        return Placement.UNKNOWN
    if isinstance(expr, ast.Name):
        if depth < 4:
            bound = _classify_name(facts, expr.id, line,
                                        lambda value, at: classify_placement(facts, value, at, depth + 1),
                                        Placement.UNKNOWN, parts=True)
            if bound is Placement.UNKNOWN and (_updated_cuda_tensor(facts, expr.id, line, depth)
                                               or _passed_to_device_collective(facts, expr.id, line)):
                return Placement.GPU
            if bound is not Placement.UNKNOWN:
                return bound
            if _batch_of_a_loader_loop(facts, expr.id, line, depth):
                return Placement.HOST
            if facts.project is not None:
                by_model = _model_parameter(facts, expr.id, line)
                if by_model is not Placement.UNKNOWN:
                    return by_model
        if expr.id.endswith(HOST_NAME_SUFFIXES):
            return Placement.HOST
        return Placement.GPU if _mirrored_parameter(facts, expr.id, line) else Placement.UNKNOWN
    if isinstance(expr, ast.Attribute):
        by_name = placement_by_attribute_name(expr.attr)
        if by_name is not Placement.UNKNOWN and not (by_name is Placement.GPU and _holds_no_tensor(facts, expr, line)):
            return by_name
        if expr.attr in SAME_DEVICE_ATTRIBUTES:
            return classify_placement(facts, expr.value, line, depth)
        if isinstance(expr.value, ast.Name) and expr.value.id == "self" and depth < 4:
            by_bindings = _classify_self_attribute(facts, expr.attr, line, depth)
            if by_bindings is not Placement.UNKNOWN:
                return by_bindings
        if facts.project is not None:
            by_model = _model_attribute(facts, expr, line)
            if by_model is not Placement.UNKNOWN:
                return by_model
        return Placement.GPU if expr.attr in facts.evidence.mirrored and not _holds_no_tensor(facts, expr, line) \
            else Placement.UNKNOWN
    if isinstance(expr, ast.Subscript):
        if isinstance(expr.value, ast.Call) and isinstance(expr.slice, ast.Constant) \
                and type(expr.slice.value) is int and facts.project is not None:
            by_model = _model_call(facts, expr.value, line, expr.slice.value)  # `f(x)[0]`: an element it returns
            if by_model is not Placement.UNKNOWN:
                return by_model
        container = classify_placement(facts, expr.value, line, depth)
        if container is Placement.HOST and _named_a_list(expr.value):
            return Placement.UNKNOWN  # an element of a Python list (`param_list[0]`) may be any tensor
        return container
    if isinstance(expr, ast.BinOp):
        return _placement_of_operands(facts, [expr.left, expr.right], line, depth)
    if isinstance(expr, ast.Compare):
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in expr.ops):
            return Placement.UNKNOWN  # `x is None`, `k in d`: a Python bool, however placed `x` is
        operands = [expr.left, *expr.comparators]
        placement = _placement_of_operands(facts, operands, line, depth)
        # Comparing a host tensor of one or more dimensions with a CUDA tensor raises (only 0-d host
        # tensors may join CUDA ones), so a mask built from one (`torch.arange(n) < lens`) is on the host.
        # Arithmetic raises alike, but calling it host found mostly init-time set-up (RoPE inverse
        # frequencies moved with `.to(device)` where `device` is None): it stays unknown.
        if placement is Placement.UNKNOWN and any(_host_with_dimensions(facts, operand, line, depth + 1)
                                                  for operand in operands):
            return Placement.HOST
        return placement
    if isinstance(expr, ast.UnaryOp) and not isinstance(expr.op, ast.Not):
        return classify_placement(facts, expr.operand, line, depth)
    return Placement.UNKNOWN


_TENSOR_DATA = _OpenQuestions(most=3)  # the data of `torch.tensor(t)` being tested


def _certainly_tensor(facts: FileFacts, expr: ast.expr, line: int) -> bool:
    """Whether the data of `torch.tensor(expr)` is certainly a tensor. `is_certainly_tensor` may classify a
    placement afresh (depth 0), which may meet this data again (`h = torch.tensor(h.mean(0))` in a loop): data
    met again while it is tested, or under three others, is no certain tensor, which ends the cycle."""
    from .values import is_certainly_tensor  # imported here: values asks placement in turn

    return _TENSOR_DATA.answer(expr, line, lambda: is_certainly_tensor(facts, expr, line), False)


def drawn_from_a_data_loader(facts: FileFacts, expr: ast.expr, line: int, depth: int = 0) -> bool:
    """Whether `expr` is (part of) a batch a data loader handed out: the batch of a loop over one, `next()` of an
    iterator over one, an item or slice of such a batch, or a name bound only to those. Pinned when the loader
    was made with `pin_memory=True`, pageable otherwise: the fix is the loader's to make."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    if depth > 4:
        return False
    if isinstance(expr, ast.Call):
        return _next_batch(facts, expr, line, depth)
    if not isinstance(expr, ast.Name):
        return False
    if _batch_of_a_loader_loop(facts, expr.id, line, depth):
        return True
    bindings = facts.reaching_bindings(expr.id, line)
    return bool(bindings) and all(binding.value is not None
                                  and drawn_from_a_data_loader(facts, binding.value, binding.line, depth + 1)
                                  for binding in bindings)


def _next_batch(facts: FileFacts, call: ast.Call, line: int, depth: int) -> bool:
    """Whether `call` is `next()` of an iterator over a data loader (`next(iter(loader))`, `next(self.batches)`)."""
    return isinstance(call.func, ast.Name) and call.func.id == "next" and bool(call.args) \
        and _is_data_loader(facts, call.args[0], line, depth + 1)


def _batch_of_a_loader_loop(facts: FileFacts, name: str, line: int, depth: int) -> bool:
    """Whether every binding of `name` that reaches `line` is the batch of a loop over a data loader: `for batch in
    loader:`, `for step, batch in enumerate(tqdm(loader)):`. A data loader hands out host tensors (pinned, with
    `pin_memory=True`): what is on the GPU there was copied by the loop itself."""
    bindings = facts.reaching_bindings(name, line)
    if not bindings or any(binding.value is not None for binding in bindings):
        return False
    loops = facts.for_loops
    return all(binding.line in loops and _batch_target(facts, loops[binding.line], name, line, depth)
               for binding in bindings)


def _batch_target(facts: FileFacts, loop: ast.For | ast.AsyncFor, name: str, line: int, depth: int) -> bool:
    target, iterable = loop.target, loop.iter
    while isinstance(iterable, ast.Call) and iterable.args and _is_wrapper(iterable.func):
        if dotted_name(iterable.func) == "enumerate":  # (index, batch)
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                return False
            target = target.elts[1]
        iterable = iterable.args[0]
    return _binds(target, name) and _is_data_loader(facts, iterable, line, depth + 1)


def _binds(target: ast.expr, name: str) -> bool:
    """Whether a loop's target binds `name`, alone or unpacked (`for inputs, labels in loader:`)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds(element, name) for element in target.elts)
    return isinstance(target, ast.Name) and target.id == name


def _is_wrapper(func: ast.expr) -> bool:
    """`enumerate`, `iter` or a progress bar (`tqdm`, `tqdm.auto.tqdm`): what it yields are its argument's items."""
    name = dotted_name(func) or ""
    return name in ("enumerate", "iter") or name.rpartition(".")[2] == "tqdm"


def _is_data_loader(facts: FileFacts, expr: ast.expr, line: int, depth: int) -> bool:
    """Whether `expr` is a data loader (a `DataLoader` or a class so named: `StatefulDataLoader`), or an iterator
    over one: made here, a name or `self.x` only ever bound to one, or a parameter or field annotated with one."""
    if depth > 6:
        return False
    if isinstance(expr, ast.Call):
        if _is_wrapper(expr.func) and dotted_name(expr.func) != "enumerate":
            return bool(expr.args) and _is_data_loader(facts, expr.args[0], line, depth + 1)
        return _names_a_data_loader(facts.qualify(dotted_name(expr.func)))
    if isinstance(expr, ast.Name):
        bindings = facts.reaching_bindings(expr.id, line)
        if bindings and all(binding.value is not None for binding in bindings):
            return all(_is_data_loader(facts, binding.value, binding.line, depth + 1) for binding in bindings)
        return _names_a_data_loader(dotted_name(facts.parameter_annotation(expr.id, line)))
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        bindings = facts.self_attribute_bindings(expr.attr, line) or []
        made = [binding for binding in bindings if binding.value is not None]
        declared = _field_annotations(facts, line).get(expr.attr, [])
        if any(_names_a_data_loader(dotted_name(annotation)) for annotation in declared):
            return all(_is_data_loader(facts, binding.value, binding.line, depth + 1) for binding in made)
        return bool(bindings) and len(made) == len(bindings) and all(
            _is_data_loader(facts, binding.value, binding.line, depth + 1) for binding in made)
    return False


def _names_a_data_loader(name: str | None) -> bool:
    return bool(name) and name.rpartition(".")[2].endswith("DataLoader")


def _field_annotations(facts: FileFacts, line: int) -> dict[str, list[ast.expr]]:
    """The annotated fields declared in the body of the class around `line` (`train_loader: DataLoader`)."""
    enclosing = facts.class_node_at(line)
    if enclosing is None:
        return {}
    declared: dict[str, list[ast.expr]] = {}
    for statement in enclosing.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            declared.setdefault(statement.target.id, []).append(statement.annotation)
    return declared


def _host_tensors(facts: FileFacts, tensors: ast.expr, line: int, depth: int) -> bool:
    """Whether `tensors`, a sequence given to `torch.cat` or `torch.stack`, holds host tensors only, and
    at least one: a list or tuple of them, a comprehension making them (`[torch.arange(n) for n in lens]`),
    or a name bound only to such sequences and grown only by `.append(<host tensor>)`."""
    if depth > 6:
        return False
    if isinstance(tensors, (ast.ListComp, ast.GeneratorExp)):
        return classify_placement(facts, tensors.elt, line, depth + 1) is Placement.HOST
    if isinstance(tensors, (ast.List, ast.Tuple)):
        return bool(tensors.elts) and _all_host(facts, [(element, line) for element in tensors.elts], depth)
    if not isinstance(tensors, ast.Name):
        return False
    scope = facts.binding_scope(tensors.id, line)
    if scope is None:
        return False
    bound = facts.reaching(scope.bindings[tensors.id], line)
    added = facts.reaching(scope.list_additions.get(tensors.id, []), line)
    if not bound or not all(isinstance(binding.value, _SEQUENCE_DISPLAYS) for binding in bound):
        return False
    elements = [(element, binding.line) for binding in bound if isinstance(binding.value, (ast.List, ast.Tuple))
                for element in binding.value.elts] + [(binding.value, binding.line) for binding in added]
    comprehensions = [binding for binding in bound if isinstance(binding.value, (ast.ListComp, ast.GeneratorExp))]
    return bool(elements or comprehensions) and _all_host(facts, elements, depth) and all(
        _host_tensors(facts, binding.value, binding.line, depth + 1) for binding in comprehensions)


def _all_host(facts: FileFacts, elements: list[tuple[ast.expr | None, int]], depth: int) -> bool:
    """Whether every (element, line where it is classified) is a host tensor."""
    return all(element is not None and not isinstance(element, ast.Starred)
               and classify_placement(facts, element, line, depth + 1) is Placement.HOST
               for element, line in elements)


def _host_with_dimensions(facts: FileFacts, expr: ast.expr, line: int, depth: int) -> bool:
    """Whether `expr` is a host tensor that certainly has one or more dimensions: a host factory whose
    size says so (`torch.arange(n)`, `torch.ones((n, 1))`, `torch.tensor([...])`), a join of host tensors,
    an operator on such a tensor, or a name bound only to those."""
    if depth > 6:
        return False
    if isinstance(expr, ast.Name):
        values = facts.bindings_at(expr.id, line)
        return bool(values) and all(value is not None and _host_with_dimensions(facts, value, line, depth + 1)
                                    for value in values)
    if isinstance(expr, (ast.BinOp, ast.Compare)):
        operands = [expr.left, expr.right] if isinstance(expr, ast.BinOp) else [expr.left, *expr.comparators]
        return any(_host_with_dimensions(facts, operand, line, depth + 1) for operand in operands)
    if not isinstance(expr, ast.Call) or classify_placement(facts, expr, line, depth + 1) is not Placement.HOST:
        return False
    qualified = facts.qualify(dotted_name(expr.func)) or ""
    name = qualified[len("torch."):] if qualified.startswith("torch.") else None
    sizes = [arg for arg in expr.args if not isinstance(arg, ast.Starred)]
    if name in ("arange", "linspace", "logspace", "randperm", "eye") or qualified in JOINING_FUNCTIONS:
        return True
    if name == "tensor":
        return bool(sizes) and isinstance(sizes[0], (ast.List, ast.Tuple)) and bool(sizes[0].elts)
    if name in ("zeros", "ones", "empty", "rand", "randn") and len(sizes) == len(expr.args):
        return len(sizes) > 1 or len(sizes) == 1 and (
            isinstance(sizes[0], (ast.List, ast.Tuple)) and bool(sizes[0].elts)
            or isinstance(sizes[0], ast.Constant) and type(sizes[0].value) is int)
    return False


def torch_call_makes_tensor(qualified: str) -> bool:
    """Whether a call of the torch function `qualified` certainly returns a tensor: a legacy constructor
    (`torch.FloatTensor`, `torch.cuda.LongTensor`), or a lower-case function of torch's tensor namespaces
    (TENSOR_OP_NAMESPACES: `torch.cat`, `torch.nn.functional.pad`) that no name marks as returning something else
    (`torch.is_tensor`, `torch.load`, `torch.get_default_dtype`)."""
    if qualified in HOST_TENSOR_TYPES or qualified in CUDA_TENSOR_TYPES:
        return True
    namespace, _, name = qualified.rpartition(".")
    return namespace + "." in TENSOR_OP_NAMESPACES and name[:1].islower() and not name.startswith(NON_TENSOR_PREFIXES) \
        and name not in NON_TENSOR_TORCH_NAMES and name not in NON_TENSOR_TORCH_FUNCTIONS


def tensor_method_returns_tensor(method: str) -> bool:
    """Whether a tensor's method of this name returns a tensor (on the tensor's device, unless told otherwise): not
    `size()`, `item()`, `numpy()`, nor a name that asks or gets something (`is_contiguous`, `get_device`), which on
    another object that lives on the GPU (a model, a pipeline moved with `.to("cuda")`) returns no tensor either."""
    return not method.startswith(NON_TENSOR_PREFIXES) and method not in NON_TENSOR_METHODS \
        and method not in NON_TENSOR_TENSOR_METHODS


def _placement_of_operands(facts: FileFacts, operands: list[ast.expr], line: int, depth: int) -> Placement:
    """GPU when some operand (or an element of a list/tuple operand) is a CUDA tensor; HOST when every operand is a
    host tensor or a Python number (`(cutoffs > 0).all()` of `cutoffs = torch.as_tensor(values)`); else unknown.

    Mixing a CUDA tensor with host values (scalars, 0-d CPU tensors) gives a CUDA
    tensor; an operand of unknown placement might still be on the GPU.
    """
    placements = set()
    for operand in operands:
        elements = operand.elts if isinstance(operand, (ast.List, ast.Tuple)) else [operand]
        for element in elements:
            if isinstance(element, ast.Constant) and isinstance(element.value, (int, float, bool)) \
                    or isinstance(element, ast.UnaryOp) and isinstance(element.operand, ast.Constant):
                continue
            placement = classify_placement(facts, element, line, depth + 1)
            if placement is Placement.GPU:
                return Placement.GPU
            if _named_a_list(element):
                placement = Placement.UNKNOWN  # a Python list (`masks_list`) may hold tensors of any device
            placements.add(placement)
    return Placement.HOST if placements == {Placement.HOST} else Placement.UNKNOWN


def _updated_cuda_tensor(facts: FileFacts, name: str, line: int, depth: int) -> bool:
    """True when `name` is bound to CUDA tensors, and otherwise only updated by arithmetic on itself
    (`err = err / 2`, `total += loss`): such an update keeps it on the GPU."""
    values = facts.bindings_at(name, line) or []
    updates = [value for value in values if isinstance(value, ast.BinOp)
               and any(isinstance(side, ast.Name) and side.id == name for side in (value.left, value.right))]
    others = [value for value in values if not any(value is update for update in updates)]
    return bool(updates) and bool(others) and all(
        value is not None and classify_placement(facts, value, line, depth + 1) is Placement.GPU
        for value in others)


def _mirrored_parameter(facts: FileFacts, name: str, line: int) -> bool:
    """True when `name` is a parameter its function never rebinds, and the function binds its host mirror
    too (`def f(seq_lens, seq_lens_cpu)`): `name` is the device copy. (A loop target such as `x` in
    `for x in x_cpu` is not a parameter.)"""
    if name not in facts.evidence.mirrored:
        return False
    scope = facts.binding_scope(name, line)
    if scope is None or not all(binding.line == 0 and binding.value is None for binding in scope.bindings[name]):
        return False
    mirrors = [binding for suffix in MIRROR_SUFFIXES for binding in scope.bindings.get(name + suffix, ())]
    # A mirror made from the name by a computation that is no host copy (`x_host = x.view(-1)`) says
    # nothing of where `x` lives.
    return bool(mirrors) and all(binding.line == 0 or host_transfer(binding.value) for binding in mirrors)


def _passed_to_device_collective(facts: FileFacts, name: str, line: int) -> bool:
    """True when `name` holds, at `line`, a tensor its function makes and passes to a torch.distributed
    collective (`dist.all_reduce(t, group=group)`) that is not on a host group: NCCL needs a CUDA tensor."""
    if not facts.may_use_device_collectives:
        return False
    scope = facts.binding_scope(name, line)
    if scope is None or name not in scope.collective_arguments:
        return False
    reaching = facts.reaching_bindings(name, line)
    # Only a tensor the function makes itself: a parameter may be the caller's host tensor, sent over a
    # CPU group chosen elsewhere.
    if not reaching or any(binding.value is None for binding in reaching) or _may_choose_host(facts, scope):
        return False
    return any(facts.reaching_bindings(name, call.lineno) == reaching and not _on_host_group(facts, call, statement)
               for call, statement in scope.collective_arguments[name])


def _may_choose_host(facts: FileFacts, scope: Scope) -> bool:
    """Whether the function names the CPU device, a CPU group or gloo (`torch.device("cuda" if ... else
    "cpu")`): then its collectives may run on host tensors."""
    choices = _HOST_CHOICES.setdefault(facts, {})
    chooses = choices.get(id(scope))
    if chooses is None:
        chooses = choices[id(scope)] = names_host(scope.node or facts.tree, ("cpu_group", "gloo"), host_strings=True)
    return chooses


# By file, then by id of the Scope: whether the function names the CPU (see _may_choose_host), once asked.
_HOST_CHOICES: weakref.WeakKeyDictionary[FileFacts, dict[int, bool]] = weakref.WeakKeyDictionary()


def _data_read_as_numpy(facts: FileFacts, device: ast.Attribute) -> bool:
    """Whether `device` (`x.device`) is the `device=` of a call whose positional arguments, evaluated before it,
    call `.numpy()` on `x` itself or after `.detach()`, outside the parts of them that may not run (a lambda, a
    conditional expression, `and` / `or`, a comprehension, a chained comparison): `torch.tensor(blur(x.numpy()),
    device=x.device)`. `.numpy()` raises for a CUDA tensor, so where the call runs `x` is on the host and the
    device is the CPU. Not `self` or `cls`, whose `.numpy()` may be a method that copies."""
    keyword = facts.parents.get(device)
    call = facts.parents.get(keyword) if isinstance(keyword, ast.keyword) and keyword.arg == "device" else None
    path = dotted_name(device.value)
    if not isinstance(call, ast.Call) or path is None or path.split(".")[0] in ("self", "cls"):
        return False
    reads = _NUMPY_READS.get(facts)
    if reads is None:
        reads = _NUMPY_READS[facts] = _calls_reading_numpy(facts)
    return path in reads.get(id(call), ())


def _calls_reading_numpy(facts: FileFacts) -> dict[int, set[str]]:
    """By id of a call: the paths its positional arguments surely call `.numpy()` on (see _data_read_as_numpy)."""
    found: dict[int, set[str]] = {}
    for read in facts.calls_named(frozenset({"numpy"})):
        if not isinstance(read.func, ast.Attribute) or read.args or read.keywords:
            continue
        owner = read.func.value
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Attribute) and owner.func.attr == "detach" \
                and not owner.args:
            owner = owner.func.value
        path = dotted_name(owner)
        child: ast.AST = read
        node = facts.parents.get(read)
        while path is not None and node is not None and not isinstance(node, ast.stmt) \
                and not isinstance(node, _MAY_NOT_RUN) \
                and not (isinstance(node, ast.Compare) and len(node.ops) > 1 and child is not node.left):
            if isinstance(node, ast.Call) and child in node.args:
                found.setdefault(id(node), set()).add(path)
            child, node = node, facts.parents.get(node)
    return found


_MAY_NOT_RUN = (ast.Lambda, ast.IfExp, ast.BoolOp, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# By file: the calls whose positional arguments read paths as numpy arrays (see _data_read_as_numpy), once asked.
_NUMPY_READS: weakref.WeakKeyDictionary[FileFacts, dict[int, set[str]]] = weakref.WeakKeyDictionary()


def _on_host_group(facts: FileFacts, call: ast.Call, statement: ast.stmt) -> bool:
    """Whether the collective's statement, or what its `group=` name or `self.` attribute is bound to,
    names a CPU group or the gloo backend (`group=get_world_group().cpu_group`, `backend="gloo"`)."""
    if names_host(statement, _HOST_GROUP_WORDS):
        return True
    group = next((kw.value for kw in call.keywords if kw.arg == "group"), None)
    if isinstance(group, ast.Name):
        values = facts.bindings_at(group.id, call.lineno) or []
    elif isinstance(group, ast.Attribute) and isinstance(group.value, ast.Name) and group.value.id == "self":
        values = [binding.value for binding in facts.self_attribute_bindings(group.attr, call.lineno) or []]
    else:
        return False
    return any(value is not None and names_host(value, _HOST_GROUP_WORDS) for value in values)


def _classify_self_attribute(facts: FileFacts, attribute: str, line: int, depth: int) -> Placement:
    bindings = facts.self_attribute_bindings(attribute, line)
    if not bindings or any(binding.value is None for binding in bindings):
        return Placement.UNKNOWN
    kinds = {classify_placement(facts, binding.value, binding.line, depth + 1) for binding in bindings}
    return kinds.pop() if len(kinds) == 1 else Placement.UNKNOWN


def _holds_no_tensor(facts: FileFacts, expr: ast.Attribute, line: int) -> bool:
    """What a guess by the attribute's name (`x_gpu`, or `x` beside a host mirror `x_cpu`) gives way to: `self.x`
    assigned only values that are no tensor, or a field the project annotates as a number (`number_field`). The
    class's own assignments and the model's placement are asked before any such guess."""
    return _assigned_no_tensor(facts, expr, line) or number_field(facts, expr, line) is not None


def _assigned_no_tensor(facts: FileFacts, expr: ast.Attribute, line: int) -> bool:
    """`self.x` where every value the class assigns `x` is certainly no tensor (`self.token_type_ids = {}`, a dict
    of tensors by request), or a parameter that holds a number (`self.parallel_gpu = parallel_gpu` of
    `parallel_gpu=1`): its name beside a host mirror (`token_type_ids_cpu`), or ending in `_gpu`, does not make it
    a tensor."""
    if not (isinstance(expr.value, ast.Name) and expr.value.id == "self"):
        return False
    bindings = facts.self_attribute_bindings(expr.attr, line)
    return bool(bindings) and all(binding.value is not None and (
        certainly_no_tensor(binding.value) or _number_parameter(facts, binding.value, binding.line))
        for binding in bindings)


def _number_parameter(facts: FileFacts, value: ast.expr, line: int) -> bool:
    """A parameter annotated `int`, `float` or `bool`, or with a number (or bool) as its default."""
    if not isinstance(value, ast.Name):
        return False
    annotation = facts.parameter_annotation(value.id, line)
    if annotation is not None:
        return dotted_name(annotation) in SCALAR_ANNOTATIONS
    default = facts.parameter_default(value.id, line)
    return isinstance(default, ast.Constant) and isinstance(default.value, (int, float))


def _is_module(facts: FileFacts, expr: ast.expr) -> bool:
    """A call that builds a `torch.nn` module (`nn.Linear(...)`, `torch.nn.ModuleDict(...)`)."""
    qualified = facts.qualify(dotted_name(expr.func)) if isinstance(expr, ast.Call) else None
    return bool(qualified) and qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1][:1].isupper()


def _is_dtype(facts: FileFacts, expr: ast.expr) -> bool:
    qualified = facts.qualify(dotted_name(expr)) or ""
    return qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in TORCH_DTYPES


def _classify_name(facts: FileFacts, name, line, classify_value, unknown, parts=False):
    """What `classify_value(value, at)` says of every value `name` may hold at `line`, when they agree. Each value is
    classified where it was bound: `orig = x.device` then `x = x.cpu()` leaves `orig` the device `x` had. With
    `parts`, a name unpacked from a tensor op that returns tensors on its input's device (`q, k, v =
    qkv.chunk(3)`, `values, ids = torch.topk(x, k)`) takes that input as its value."""
    bindings = facts.reaching_bindings(name, line)
    if not bindings:
        return unknown
    values = [binding.value if binding.value is not None or not parts else _unpacked_from(facts, name, binding.line)
              for binding in bindings]
    if any(value is None for value in values):
        return unknown
    # A slice of the name itself (`idxs = idxs[:-n]` in a loop) keeps what the name held.
    bound = [(value, binding.line) for value, binding in zip(values, bindings, strict=True)]
    made = [(value, at) for value, at in bound if not _slice_of(value, name)] or bound
    kinds = {classify_value(value, at) for value, at in made}
    return kinds.pop() if len(kinds) == 1 else unknown


# Tensor ops whose result is a tuple of tensors on the device of the tensor they split or reduce (a function of
# `torch`, or a method of the tensor).
_TUPLE_OPS = frozenset({"chunk", "split", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "sort", "topk",
                        "max", "min", "aminmax", "kthvalue", "median", "mode", "std_mean", "var_mean", "cummax",
                        "cummin", "unique", "unique_consecutive", "frexp", "lu", "qr", "svd", "slogdet"})


def _unpacked_from(facts: FileFacts, name: str, line: int) -> ast.expr | None:
    """The tensor `name` is a part of, where `line` unpacks it from a tuple op of it: `x` in `a, name =
    x.chunk(2)` or `name, ids = torch.sort(x)`."""
    for node in facts.unpackings.get(line, ()):
        if not isinstance(node.value, ast.Call) \
                or not any(isinstance(target, ast.Name) and target.id == name for target in node.targets[0].elts):
            continue
        call = node.value
        func = call.func
        qualified = facts.qualify(dotted_name(func)) or ""
        if qualified.startswith("torch.") and qualified.rpartition(".")[2] in _TUPLE_OPS \
                and qualified.rpartition(".")[0] in ("torch", "torch.linalg") and call.args:
            return call.args[0]
        if not qualified and isinstance(func, ast.Attribute) and func.attr in _TUPLE_OPS:
            return func.value
        targets = node.targets[0].elts
        if facts.project is not None and not qualified.startswith("torch.") \
                and not any(isinstance(target, ast.Starred) for target in targets):
            # `indices, meta = self._prepare(...)`: an element of what a project function returns (`_model_call`).
            index = next(index for index, target in enumerate(targets)
                         if isinstance(target, ast.Name) and target.id == name)
            return ast.copy_location(ast.Subscript(value=call, slice=ast.Constant(index), ctx=ast.Load()), call)
    return None


def _slice_of(value: ast.expr | None, name: str) -> bool:
    return isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice) \
        and isinstance(value.value, ast.Name) and value.value.id == name


def _model_attribute(facts: FileFacts, expr: ast.Attribute, line: int, device: bool = False,
                     intended: bool = False) -> Placement:
    """Where `<receiver>.attr` lives by the project model: the receiver's class is that of `self`, of an
    annotated parameter, of an attribute of either (`self.buffer.gpu`, `batch.sampling_info.top_ps`), or of a
    local bound only to such values; or unknown (then the attribute's name decides, see ProjectModel.attribute).
    Not where the function stores into `<local>.attr` itself: what it stores is the file's to tell. A device the
    model places by intent (`AttributePlacement.intended`) only where `intended` asks for one."""
    receiver = expr.value
    if isinstance(receiver, ast.Name) and receiver.id != "self" and _stores_into(facts, receiver.id, expr.attr, line):
        return Placement.UNKNOWN
    placed = facts.project.attribute(_receiver_class(facts, receiver, line), expr.attr)
    certain = placed is None or intended or not (placed.device and placed.intended)
    return _inferred(facts, placed if certain else None, device)


_RECEIVER_CLASSES: weakref.WeakKeyDictionary[FileFacts, dict[tuple[str, int, int], str | None]] = \
    weakref.WeakKeyDictionary()


def _receiver_class(facts: FileFacts, receiver: ast.expr, line: int, depth: int = 0) -> str | None:
    """The project class of `receiver` read at `line`, where the file and the model show it: `self`, a parameter
    annotated with a project class, an attribute of such an object whose type the model knows, or a local each
    binding of which that reaches `line` is one of these, all of one class (a copy of itself, `x =
    copy.deepcopy(x)`, keeps the class); else a local the model types (`meta = Meta(...)`, `meta =
    self._prepare(...)`: every assignment to it in the function makes an object of one class)."""
    if depth > 4:
        return None
    if isinstance(receiver, ast.Attribute):
        owner = _receiver_class(facts, receiver.value, line, depth + 1)
        return facts.project.attribute_type(owner, receiver.attr) if owner else None
    if not isinstance(receiver, ast.Name):
        return None
    if receiver.id == "self":
        return facts.class_at(line)
    if facts.parameter_annotation(receiver.id, line) is not None:
        return annotated_class(facts, receiver.id, line)
    # Kept per depth too, so that an answer cut short by the depth bound is never reused higher up, and the
    # bindings of a name rebound many times (`x = x.next` in a loop) are each worked out once per depth.
    known = _RECEIVER_CLASSES.setdefault(facts, {})
    key = (receiver.id, line, depth)
    if key in known:
        return known[key]
    found: str | None = None
    for binding in facts.reaching_bindings(receiver.id, line) or ():
        if _copy_of(binding.value, receiver.id):
            continue
        bound = _receiver_class(facts, binding.value, binding.line, depth + 1) if binding.value is not None else None
        if bound is None or found is not None and bound != found:
            found = None
            break
        found = bound
    if found is None and (qualname := facts.qualname_at(line)) is not None:
        found = facts.project.local_class(qualname, receiver.id)
    known[key] = found
    return found


def _copy_of(value: ast.expr | None, name: str) -> bool:
    """`copy.deepcopy(name)` or `copy.copy(name)` (or `deepcopy(name)`): an object of the class `name` holds."""
    return isinstance(value, ast.Call) and (dotted_name(value.func) or "") in ("copy.deepcopy", "copy.copy", "deepcopy") \
        and len(value.args) == 1 and isinstance(value.args[0], ast.Name) and value.args[0].id == name


def _stores_into(facts: FileFacts, name: str, attr: str, line: int) -> bool:
    """Whether the function around `line` (or the module) assigns `name.attr`."""
    function = facts.function_at(line)
    first, last = (function.lineno, function.end_lineno or function.lineno) if function is not None else (0, 1 << 30)
    return any(isinstance(target, ast.Attribute) and target.attr == attr and isinstance(target.value, ast.Name)
               and target.value.id == name
               for statement in facts.assignments if first <= statement.lineno <= last
               for target in statement.targets)


def annotated_class(facts: FileFacts, name: str, line: int) -> str | None:
    """The project class the parameter `name`, read at `line`, is annotated with (asked of the project model)."""
    dotted = annotated_name(facts.parameter_annotation(name, line))
    return facts.project.resolve_type(dotted) if dotted and facts.project is not None else None


def number_field(facts: FileFacts, expr: ast.expr, line: int) -> str | None:
    """`int`, `float` or `bool` for `<object>.attr` where the project annotates `attr` so in the class of the object
    and places no tensor in it (ProjectModel.number_field; `sampling_params.top_p` of a `top_p: float` field, the
    class found as `_receiver_class` finds it): a Python number, not a tensor."""
    if not (isinstance(expr, ast.Attribute) and facts.project is not None):
        return None
    owner = _receiver_class(facts, expr.value, line)
    return facts.project.scalar_attribute(owner, expr.attr) if owner else None


def _model_parameter(facts: FileFacts, name: str, line: int, device: bool = False) -> Placement:
    """Where parameter `name` of the outermost function around `line` lives by the project model, when what is
    read at `line` is still the parameter (no assignment in between)."""
    functions = [node for node in facts.functions_around(line) if not isinstance(node, ast.Lambda)]
    scope = facts.binding_scope(name, line)
    if not functions or scope is None or facts.scope_for(functions[0]) is not scope:
        return Placement.UNKNOWN
    reaching = facts.reaching(scope.bindings[name], line, scope, name)
    if not reaching or not all(binding.line == 0 and binding.value is None for binding in reaching):
        return Placement.UNKNOWN
    qualname = facts.qualname_of(functions[0])
    placed = facts.project.parameter(qualname, name) if qualname else None
    return _inferred(facts, placed, device)


def _model_call(facts: FileFacts, call: ast.Call, line: int, index: int | None = None) -> Placement:
    """Where the result of a call of a project function (or its element `index`), made in the outermost function
    around `line`, lives by the project model."""
    qualname = facts.qualname_at(line)
    if qualname is None:
        return Placement.UNKNOWN
    placed = facts.project.call_result(qualname, call) if index is None \
        else facts.project.call_element(qualname, call, index)
    return _inferred(facts, placed, device=False)


def _inferred(facts: FileFacts, placed, device: bool) -> Placement:
    """A placement from the model, for a device (`device`) or a tensor, as asked: the model follows both."""
    if placed is None or placed.device != device:
        return Placement.UNKNOWN
    facts.inferences.append(placed.describe())
    facts.untyped_inferences += not placed.typed
    return Placement.GPU if placed.placement == "gpu" else Placement.HOST


# Keywords of torch functions that take no tensor.
_NO_TENSOR_KEYWORDS = frozenset({"dtype", "layout", "memory_format", "requires_grad", "dim", "keepdim"})


def _placement_of(device: Device) -> Placement:
    return {Device.CUDA: Placement.GPU, Device.NOT_CUDA: Placement.HOST}.get(device, Placement.UNKNOWN)

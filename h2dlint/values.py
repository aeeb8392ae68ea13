"""What kind of value an expression certainly holds: a Python number or int, a tensor (and how many
dimensions it has, or whether it holds integers), a list of ints. Shared by the rules about element writes
and indexing."""

from __future__ import annotations

import ast
import enum
import weakref

from .dtypes import integer_tensor
from .facts import (
    NUMPY_ARRAY_METHODS,
    SAME_DEVICE_ATTRIBUTES,
    Data,
    Placement,
)
from .gaps import TokensApart
from .placement import (
    Device,
    classify_data,
    classify_device,
    classify_placement,
    number_field,
    tensor_method_returns_tensor,
    torch_call_makes_tensor,
)
from .syntax import dotted_name

# Factories whose result's number of dimensions can be read off their arguments.
SIZED_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn"})
# Tensor methods whose result has the dimensions (and the placement) of the tensor they are called on.
SAME_SHAPE_METHODS = frozenset({"cuda", "to", "clone", "contiguous", "detach", "float", "half", "double", "int",
                                "long", "bool", "bfloat16", "fill_", "zero_"})
SHAPE_NAME_ENDINGS = ("shape", "shapes", "sizes", "dims", "dimensions")
# Methods only tensors have (numpy arrays and Python numbers have none of them): `x.float().sum()` is a tensor.
TENSOR_ONLY_METHODS = frozenset({"float", "half", "bfloat16", "double", "long", "int", "short", "contiguous"})
NUMBER_BUILTINS = frozenset({"len", "int", "float", "bool", "round", "abs"})

# What the text of an element write `t[i] = v` holds: a `]`, then a lone `=`, with closing parentheses between
# them (`(t[i]) = v`) besides what may stand between tokens.
ELEMENT_WRITE = TokensApart(r"\]", "=(?!=)", gap=")")


def is_int_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def holds_no_elements(data: ast.expr) -> bool:
    """Python data that makes a tensor with no elements: `[]`, `[[], []]`, `[[]] * batch`. A copy of such a tensor
    returns before it reaches the device."""
    if isinstance(data, (ast.List, ast.Tuple)):
        return all(holds_no_elements(element) for element in data.elts)
    if isinstance(data, ast.BinOp) and isinstance(data.op, ast.Mult):
        return any(isinstance(side, (ast.List, ast.Tuple)) and holds_no_elements(side)
                   for side in (data.left, data.right))
    return False


def tensor_dimensions(facts, expr: ast.expr, line: int, depth: int = 0) -> int | None:
    """How many dimensions the tensor `expr` has, when where it is made says so; else None."""
    if depth > 4:
        return None
    if isinstance(expr, ast.Name):
        return _same_for_all(facts.bindings_at(expr.id, line),
                             lambda value: tensor_dimensions(facts, value, line, depth + 1))
    if isinstance(expr, ast.Attribute):
        if isinstance(expr.value, ast.Name) and expr.value.id == "self":
            bindings = facts.self_attribute_bindings(expr.attr, line)
            return _same_for_all(bindings and [binding.value for binding in bindings],
                                 lambda value: tensor_dimensions(facts, value, line, depth + 1))
        return tensor_dimensions(facts, expr.value, line, depth + 1) if expr.attr == "data" else None
    if not isinstance(expr, ast.Call):
        return None
    func = expr.func
    if isinstance(func, ast.Attribute) and func.attr in SAME_SHAPE_METHODS:
        return tensor_dimensions(facts, func.value, line, depth + 1)
    qualified = facts.qualify(dotted_name(func)) or ""
    if not qualified.startswith("torch.") or qualified.count(".") != 1 or any(
            isinstance(arg, ast.Starred) for arg in expr.args):
        return None
    name = qualified.split(".")[1]
    size = next((keyword.value for keyword in expr.keywords if keyword.arg == "size"), None)
    if name == "arange":
        return 1
    if name == "tensor":
        return _nesting(expr.args[0]) if expr.args else None
    if name == "full":
        return _sequence_length(expr.args[0] if expr.args else size)
    if name == "randint":  # `randint(high, size)`, `randint(low, high, size)`
        return _sequence_length(size if size is not None else expr.args[-1] if expr.args else None)
    if name.endswith("_like") and expr.args:  # `zeros_like(x)`: the dimensions of `x`
        return tensor_dimensions(facts, expr.args[0], line, depth + 1)
    if name in SIZED_FACTORIES:
        if size is not None:
            return _sequence_length(size)
        if len(expr.args) == 1 and isinstance(expr.args[0], (ast.Tuple, ast.List)):
            return len(expr.args[0].elts)
        if len(expr.args) > 1 or expr.args and _names_a_count(facts, expr.args[0], line):
            return len(expr.args)  # `torch.zeros(a, b)`: each argument is one dimension
    return None


def _names_a_count(facts, node: ast.expr, line: int) -> bool:
    """A lone size argument that is an int, or is named like one (`n`, `batch_size`, `self.max_len`),
    not like a shape (`shape`, `sizes`, `x.size()`)."""
    if is_python_int(facts, node, line):
        return True
    name = dotted_name(node)
    if name is None:
        return False
    last = name.rsplit(".", 1)[-1].lower()
    return last not in ("size", "shape") and not last.endswith(SHAPE_NAME_ENDINGS)


def _same_for_all(values, dimensions_of) -> int | None:
    if not values or any(value is None for value in values):
        return None
    found = {dimensions_of(value) for value in values}
    return found.pop() if len(found) == 1 else None


def _sequence_length(node: ast.expr | None) -> int | None:
    return len(node.elts) if isinstance(node, (ast.Tuple, ast.List)) else None


def _nesting(data: ast.expr) -> int | None:
    """Dimensions of `torch.tensor(data)` for literal data: a number is 0-d, a list of numbers 1-d, ..."""
    if isinstance(data, ast.Constant) and isinstance(data.value, (int, float, bool)):
        return 0
    if isinstance(data, (ast.List, ast.Tuple)) and data.elts:
        inner = {_nesting(element) for element in data.elts}
        return inner.pop() + 1 if len(inner) == 1 and None not in inner else None
    return None


def is_python_int(facts, node: ast.expr, line: int, depth: int = 0) -> bool:
    """An expression that certainly evaluates to a Python int (not a tensor, a slice or a mask)."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return is_python_int(facts, node.operand, line, depth)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
        return is_python_int(facts, node.left, line, depth) and is_python_int(facts, node.right, line, depth)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("len", "int") \
            and node.func.id not in facts.aliases:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            node.func.attr == "size" and len(node.args) == 1 or node.func.attr in ("numel", "dim") and not node.args):
        return True  # `x.size(0)`, `x.numel()`: on a tensor these are ints
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
            and is_int_literal(node.slice):
        return True
    if isinstance(node, ast.Name) and depth < 4:
        return _counter_or_bound_only_to(facts, node, line, lambda value: is_python_int(facts, value, line, depth + 1))
    if isinstance(node, ast.IfExp):
        return is_python_int(facts, node.body, line, depth) and is_python_int(facts, node.orelse, line, depth)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" and depth < 4:
        bindings = facts.self_attribute_bindings(node.attr, line)
        return bool(bindings) and all(binding.value is not None and
                                      is_python_int(facts, binding.value, binding.line, depth + 1)
                                      for binding in bindings)
    return _number_field(facts, node, line) == "int"


def _number_field(facts, node: ast.expr, line: int) -> str | None:
    """`placement.number_field`, where nothing places the attribute as a tensor: not the class's own bindings
    (`self.decay = torch.tensor(0.9, device=d)` under `decay: float`), nor the project model."""
    number = number_field(facts, node, line)
    return number if number and classify_placement(facts, node, line) is Placement.UNKNOWN else None


def _counter_or_bound_only_to(facts, name: ast.Name, line: int, accepts) -> bool:
    """`name` is a `range` loop counter, or every value bound to it where read is one `accepts`."""
    if _range_loop_target(facts, name):
        return True
    values = facts.bindings_at(name.id, line)
    return bool(values) and all(value is not None and accepts(value) for value in values)


def _range_loop_target(facts, name: ast.Name) -> bool:
    """`name` is the counter of an enclosing `for name in range(...)` (or `for name, _ in enumerate(...)`)
    and bound nowhere else in the function."""
    node = facts.parents.get(name)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name):
            loop_over = node.iter.func.id
            target = node.target
            if loop_over == "enumerate" and isinstance(target, ast.Tuple) and target.elts:
                target = target.elts[0]
            if loop_over in ("range", "enumerate") and isinstance(target, ast.Name) and target.id == name.id:
                return len(facts.bindings_at(name.id, name.lineno) or []) == 1
        node = facts.parents.get(node)
    return False


def is_python_number(facts, node: ast.expr, line: int, depth: int = 0) -> bool:
    """An expression that certainly evaluates to a Python int, float or bool (never a tensor)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, complex)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return is_python_number(facts, node.operand, line, depth)
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
        return is_python_number(facts, node.left, line, depth) and is_python_number(facts, node.right, line, depth)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in NUMBER_BUILTINS and func.id not in facts.aliases and \
                (func.id != "abs" or all(is_python_number(facts, arg, line, depth) for arg in node.args))
        return isinstance(func, ast.Attribute) and func.attr == "item" and not node.args or \
            (facts.qualify(dotted_name(func)) or "").startswith("math.")
    if isinstance(node, ast.IfExp):
        return is_python_number(facts, node.body, line, depth) and is_python_number(facts, node.orelse, line, depth)
    if isinstance(node, ast.Attribute):
        return (facts.qualify(dotted_name(node)) or "") in ("math.inf", "math.pi", "math.e", "math.nan") \
            or _number_field(facts, node, line) is not None
    if isinstance(node, ast.Name) and depth < 4:
        return _counter_or_bound_only_to(facts, node, line,
                                         lambda value: is_python_number(facts, value, line, depth + 1))
    return False


def is_integer_tensor(facts, expr: ast.expr, line: int) -> bool:
    """An expression that certainly evaluates to a tensor of integers (`dtypes.integer_tensor`), following the
    file's own bindings and, for a parameter still unbound, what every call of the project passes it
    (`ProjectModel.passes_integer_tensors`): an index by position, never a boolean mask."""
    return integer_tensor(expr, _FileReader(facts), line)


class _FileReader:
    """A file's bindings, read where each value is bound (`dtypes.Reader`)."""

    def __init__(self, facts) -> None:
        self.facts = facts
        self.qualify = facts.qualify

    def bindings(self, name: str, line: int) -> list | None:
        reaching = self.facts.reaching_bindings(name, line)
        if not reaching:
            return None
        if all(binding.line == 0 and binding.value is None for binding in reaching):
            return [(_parameter_of_integers(self.facts, name, line), line)]
        return [(binding.value, binding.line) for binding in reaching]

    def is_int(self, expr: ast.expr, line: int) -> bool:
        return is_python_int(self.facts, expr, line)

    def is_device(self, expr: ast.expr, line: int) -> bool:
        return classify_device(self.facts, expr, line) is not Device.UNKNOWN


def indexes_by_integers(facts, indices: list[ast.expr], line: int) -> bool:
    """Some of `indices` index by a tensor, and every such one is a tensor of integers, the others slices and
    Python ints: an indexed write through them is `index_put_`, not the boolean mask's `masked_fill_`."""
    by_tensor = [index for index in indices if not isinstance(index, ast.Slice) and not is_python_int(facts, index, line)
                 and not (isinstance(index, ast.Constant) and index.value in (None, Ellipsis))]
    return bool(by_tensor) and all(is_integer_tensor(facts, index, line) for index in by_tensor)


def indexed_view(facts, target: ast.Subscript) -> tuple[ast.expr, list[ast.expr]]:
    """The tensor `target` writes into and its indices: `t[0][idx]` writes into `t` at `(0, idx)`, since `t[0]`
    is a view of `t` (integer indices only make views; `t[idx][0]` writes into a copy)."""
    indices = _index_parts(target.slice)
    tensor = target.value
    while isinstance(tensor, ast.Subscript) and all(is_python_int(facts, index, target.lineno)
                                                      for index in _index_parts(tensor.slice)):
        indices = _index_parts(tensor.slice) + indices
        tensor = tensor.value
    return tensor, indices


def _index_parts(index: ast.expr) -> list[ast.expr]:
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]


def _parameter_of_integers(facts, name: str, line: int) -> bool:
    """Whether every call of the outermost function around `line` passes its parameter `name` integers."""
    functions = [node for node in facts.functions_around(line) if not isinstance(node, ast.Lambda)]
    if facts.project is None or not functions or facts.scope_for(functions[0]) is not facts.binding_scope(name, line):
        return False
    qualname = facts.qualname_of(functions[0])
    return qualname is not None and facts.project.passes_integer_tensors(qualname, name)


LIST_BUILTINS = frozenset({"list", "sorted"})
PROPERTY_DECORATORS = frozenset({"property", "cached_property", "functools.cached_property"})


def on_gpu_as_tensor(facts, expr: ast.expr, line: int) -> bool:
    """Placed on a CUDA device as a tensor: not through a value the project model places only in case it is one."""
    untyped = facts.untyped_inferences
    return classify_placement(facts, expr, line) is Placement.GPU and facts.untyped_inferences == untyped


def is_certainly_tensor(facts, expr: ast.expr, line: int, depth: int = 0, receiver: bool = False) -> bool:
    """An expression that certainly evaluates to a tensor: a torch op's result, a tensor method's, an index,
    arithmetic or a comparison on a tensor, `self.x` or a name bound only to such values, a parameter annotated
    `torch.Tensor`, or what is known to be on a CUDA device without a binding to follow; not `obj.x` (or an index
    of it) where the file declares `x` with another type. Bindings decide before placement: `n = case.seq_lens[i]`
    is an int when `seq_lens` is declared `tuple[int, ...]`, even if a `seq_lens_cpu` makes `seq_lens` look like a
    device copy."""
    if depth > 4:  # counts the bindings followed; the parts of one expression are finitely many
        return False
    if isinstance(expr, ast.Subscript):
        return is_certainly_tensor(facts, expr.value, line, depth, receiver=True)
    if isinstance(expr, ast.Name):
        bindings = facts.reaching_bindings(expr.id, line) or []
        if receiver:
            bindings = [binding for binding in bindings if binding.value is None or not _is_none(binding.value)]
        if any(binding.value is not None for binding in bindings):
            # The one binding h2dlint does not follow may be the parameter itself, if it is annotated as a tensor.
            unfollowed = 1 if any(binding.line == 0 for binding in bindings) and is_tensor_annotation(
                facts, facts.parameter_annotation(expr.id, line)) else 0
            # Each value is read where it is bound: in `labels = labels[1:]` the right side is the earlier `labels`.
            return [binding.value for binding in bindings].count(None) == unfollowed and all(
                binding.value is None or is_certainly_tensor(facts, binding.value, binding.line, depth + 1)
                for binding in bindings)
        return is_tensor_annotation(facts, facts.parameter_annotation(expr.id, line)) or on_gpu_as_tensor(facts, expr, line)
    if isinstance(expr, ast.Attribute):
        if _declared_no_tensor(facts, expr):
            return False
        if expr.attr in SAME_DEVICE_ATTRIBUTES:
            return is_certainly_tensor(facts, expr.value, line, depth)
        bindings = facts.self_attribute_bindings(expr.attr, line) \
            if isinstance(expr.value, ast.Name) and expr.value.id == "self" else None
        if bindings:
            return all(binding.value is not None and is_certainly_tensor(facts, binding.value, binding.line, depth + 1)
                       for binding in bindings)
        return on_gpu_as_tensor(facts, expr, line)
    if isinstance(expr, ast.Call):
        func = expr.func
        qualified = facts.qualify(dotted_name(func))
        if qualified:
            return torch_call_makes_tensor(qualified)
        return isinstance(func, ast.Attribute) and tensor_method_returns_tensor(func.attr) and (
            (func.attr in TENSOR_ONLY_METHODS or _reduces_over_a_dim(expr)) and facts.mentions_torch
            or is_certainly_tensor(facts, func.value, line, depth, receiver=True)
            or classify_placement(facts, expr, line) is Placement.GPU)  # `x.cuda()`, `x.to("cuda")`
    if isinstance(expr, ast.BinOp):
        if any(isinstance(side, (ast.List, ast.Tuple, ast.ListComp)) for side in (expr.left, expr.right)):
            return False  # `[x] * t` repeats the list
        return is_certainly_tensor(facts, expr.left, line, depth) or \
            is_certainly_tensor(facts, expr.right, line, depth)
    if isinstance(expr, ast.UnaryOp) and not isinstance(expr.op, ast.Not):
        return is_certainly_tensor(facts, expr.operand, line, depth)
    if isinstance(expr, ast.Compare):  # `t == 0` is a tensor; `t is None`, `x in t` and `t == None` are bools
        operands = [expr.left, *expr.comparators]
        return not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in expr.ops) \
            and not any(_is_none(operand) for operand in operands) \
            and any(is_certainly_tensor(facts, operand, line, depth) for operand in operands)
    if isinstance(expr, ast.IfExp):
        return is_certainly_tensor(facts, expr.body, line, depth) and \
            is_certainly_tensor(facts, expr.orelse, line, depth)
    return False


def _reduces_over_a_dim(call: ast.Call) -> bool:
    """`x.any(dim=-1)`, `x.sum(dim=(1, 2))`: a reduction (or `squeeze`/`unsqueeze`) given `dim=` as ints returns
    one tensor. NumPy and pandas name the argument `axis`; xarray's `dim` names a dimension by a string. Not
    `max`, `min`, `sort` or `topk`, which given a dimension return a tuple."""
    dim = next((keyword.value for keyword in call.keywords if keyword.arg == "dim"), None)
    if dim is None or call.func.attr not in _DIM_REDUCTIONS:  # type: ignore[attr-defined]
        return False
    return all(is_int_literal(element) for element in (dim.elts if isinstance(dim, ast.Tuple) else [dim]))


_DIM_REDUCTIONS = frozenset({"any", "all", "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "cumsum",
                             "cumprod", "logsumexp", "softmax", "log_softmax", "count_nonzero", "nansum", "nanmean",
                             "std", "var", "norm", "squeeze", "unsqueeze"})


def is_tensor_annotation(facts, annotation: ast.expr | None) -> bool:
    """`torch.Tensor`, `torch.LongTensor`, `Tensor` imported from torch, or `Optional[...]` / `... | None` of one
    (where the code runs with the value, it is a tensor)."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        if _is_none(annotation.right):
            annotation = annotation.left
        elif _is_none(annotation.left):
            annotation = annotation.right
    elif isinstance(annotation, ast.Subscript) and facts.qualify(dotted_name(annotation.value)) == "typing.Optional":
        annotation = annotation.slice
    qualified = facts.qualify(dotted_name(annotation)) or ""
    return qualified.startswith("torch.") and qualified.endswith("Tensor")


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _declared_no_tensor(facts, attribute: ast.Attribute) -> bool:
    """`obj.x` where each declaration of `x` in the file's classes is a type other than a tensor: a field
    `x: tuple[int, ...]`, or a property `def x(self) -> int`."""
    declared = _class_level_declarations(facts).get(attribute.attr)
    return bool(declared) and not any(is_tensor_annotation(facts, annotation) for annotation in declared)


def _class_level_declarations(facts) -> dict[str, list[ast.expr]]:
    """The annotated fields and properties of the file's module-level classes, by name (computed once per file)."""
    declarations = _DECLARATIONS.get(facts)
    if declarations is None:
        declarations = _DECLARATIONS[facts] = {}
        for statement in (node for cls in facts.tree.body if isinstance(cls, ast.ClassDef) for node in cls.body):
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                declarations.setdefault(statement.target.id, []).append(statement.annotation)
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.returns is not None \
                    and any(dotted_name(decorator) in PROPERTY_DECORATORS for decorator in statement.decorator_list):
                declarations.setdefault(statement.name, []).append(statement.returns)
    return declarations


_DECLARATIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def has_index_list(facts, subscript: ast.Subscript) -> bool:
    """Whether the index of `subscript` holds a Python list that PyTorch turns into an index tensor."""
    index, line = subscript.slice, subscript.lineno
    if isinstance(index, ast.Tuple):
        return any(is_index_list(facts, element, line, alone=False) for element in index.elts)
    return is_index_list(facts, index, line, alone=True)


def is_index_list(facts, index: ast.expr, line: int, alone: bool, depth: int = 0) -> bool:
    """Whether `index`, a part of a subscript's index, is certainly a Python list, which PyTorch turns into an
    index tensor: a list literal (not empty: an empty one copies nothing) or comprehension, a name or `self.x`
    bound only to lists, a parameter annotated `list[...]`, or what a function of this file annotated
    `-> list[...]` (or returning only lists) returns. `alone`: the list is the whole index (`t[ids]`), where a
    short list holding a tensor, a slice or another sequence is a tuple of indices instead (NumPy's rule), so its
    elements must be Python ints."""
    if depth > 4:
        return False
    if isinstance(index, ast.List):
        return bool(index.elts) and (not alone or all(is_python_int(facts, element, line) for element in index.elts))
    if isinstance(index, ast.ListComp):
        return not alone or _counts_over_range(index.elt, index.generators)
    if isinstance(index, ast.Call) and isinstance(index.func, ast.Name) and index.func.id in LIST_BUILTINS \
            and index.func.id not in facts.aliases and facts.bindings_at(index.func.id, line) is None:
        return not alone or bool(index.args) and _is_range_call(index.args[0])  # `list(range(n))`: ints
    if isinstance(index, ast.Call):
        function = _function_called(facts, index, line)
        return function is not None and _returns_index_list(facts, function, alone, depth)
    if isinstance(index, ast.Name):
        values = facts.bindings_at(index.id, line)
        annotation = facts.parameter_annotation(index.id, line)
        if annotation is not None:  # a parameter: annotated as a list, and not rebound
            return values is not None and len(values) == 1 and _is_list_annotation(facts, annotation, alone)
        return bool(values) and all(value is not None and is_index_list(facts, value, line, alone, depth + 1)
                                    for value in values)
    if isinstance(index, ast.Attribute) and isinstance(index.value, ast.Name) and index.value.id == "self":
        bindings = facts.self_attribute_bindings(index.attr, line)
        return bool(bindings) and all(binding.value is not None and
                                      is_index_list(facts, binding.value, binding.line, alone, depth + 1)
                                      for binding in bindings)
    return False


def _is_list_annotation(facts, annotation: ast.expr, ints_only: bool) -> bool:
    """`list[...]` (`typing.List[...]`); with `ints_only`, `list[int]`."""
    base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    if dotted_name(base) != "list" and facts.qualify(dotted_name(base)) != "typing.List":
        return False
    return not ints_only or isinstance(annotation, ast.Subscript) and dotted_name(annotation.slice) == "int"


def _is_range_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"


def _counts_over_range(element: ast.expr, generators: list[ast.comprehension]) -> bool:
    """`[i for i in range(n)]`: the elements are the counter of a `range`."""
    return len(generators) == 1 and isinstance(element, ast.Name) and isinstance(generators[0].target, ast.Name) \
        and generators[0].target.id == element.id and _is_range_call(generators[0].iter)


def _function_called(facts, call: ast.Call, line: int) -> ast.FunctionDef | None:
    """The one `def` of this file that `call` calls: `f(...)` of a module-level function, or `self.f(...)` of a
    method of the (module-level) class around `line`."""
    func = call.func
    if isinstance(func, ast.Name) and func.id not in facts.aliases \
            and facts.bindings_at(func.id, line) in ([], [None]):  # not rebound locally; a `def` may come later
        body, name = facts.tree.body, func.id
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        around = [node for node in facts.tree.body
                  if isinstance(node, ast.ClassDef) and node.lineno <= line <= (node.end_lineno or node.lineno)]
        if not around:
            return None
        body, name = around[0].body, func.attr
    else:
        return None
    defined = [node for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name]
    return defined[0] if len(defined) == 1 else None


def _returns_index_list(facts, function: ast.FunctionDef, alone: bool, depth: int) -> bool:
    if function.returns is not None:
        return _is_list_annotation(facts, function.returns, alone)
    returned = [node.value for node in _own_nodes(function) if isinstance(node, ast.Return)]
    return bool(returned) and all(value is not None and is_index_list(facts, value, value.lineno, alone, depth + 1)
                                  for value in returned)


def _own_nodes(function: ast.FunctionDef):
    """The nodes of `function`'s body, not those of the functions, lambdas and classes defined in it."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


# ----- what `torch.tensor(data, pin_memory=True)` accepts ------------------------------------------------------


class PinData(enum.Enum):
    """The kind of `data` in `torch.tensor(data, pin_memory=True)`: only Python data can be pinned there;
    torch refuses a numpy array ("Can't pin tensor constructed from numpy") and a tensor ("... from a
    variable") before it allocates, on CUDA too."""

    PYTHON = "Python data"
    NUMPY = "a numpy array"
    TENSOR = "a tensor"
    UNKNOWN = "a tensor or a numpy array"  # what it may be, for messages


def pin_data_kind(facts, data: ast.expr, line: int) -> PinData:
    """What `data` holds, as far as `torch.tensor(data, pin_memory=...)` is concerned. NUMPY when any way it
    may be bound leads to numpy, TENSOR when it certainly is a tensor, PYTHON when it certainly is Python data
    (literals, comprehensions, `.tolist()`, names bound only to those)."""
    if _may_be_numpy(facts, data, line):
        return PinData.NUMPY
    if _is_python_data(facts, data, line):
        return PinData.PYTHON
    if classify_data(facts, data, line) is Data.TENSOR or is_certainly_tensor(facts, data, line):
        return PinData.TENSOR
    return PinData.UNKNOWN


def _is_python_data(facts, node: ast.expr, line: int, depth: int = 0) -> bool:
    """Python data as `classify_data` finds it (literals, comprehensions, `.tolist()`, names bound only to
    those), a Python number, a slice of Python data, a sum of lists (`prev + next`), a name checked by
    `isinstance(name, list)`, or a name bound only to any of those, unpacking included (`out, n = [], 0`)."""
    if depth > 4:
        return False
    if classify_data(facts, node, line) is Data.HOST or is_python_number(facts, node, line) \
            or _checked_to_be_a_list(facts, node, line):
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        return _is_python_data(facts, node.value, line, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        return _is_python_data(facts, node.left, line, depth + 1) and (
            isinstance(node.op, ast.Mult) or _is_python_data(facts, node.right, line, depth + 1))
    if isinstance(node, ast.Name):
        bindings = facts.reaching_bindings(node.id, line)
        if not bindings or facts.parameter_annotation(node.id, line) is not None:
            return False
        values = [binding.value if binding.value is not None else _unpacked(facts, node.id, binding.line)
                  for binding in bindings]
        return all(value is not None and _is_python_data(facts, value, line, depth + 1) for value in values)
    return False


def _unpacked(facts, name: str, line: int) -> ast.expr | None:
    """What `name` is bound to by `a, name = x, y` on `line`: the matching element of a tuple display."""
    for node in facts.unpackings.get(line, ()):
        if not (isinstance(node.value, ast.Tuple) and len(node.targets[0].elts) == len(node.value.elts)):
            continue
        for target, value in zip(node.targets[0].elts, node.value.elts, strict=True):
            if isinstance(target, ast.Name) and target.id == name:
                return value
    return None


def _checked_to_be_a_list(facts, data: ast.expr, line: int) -> bool:
    """`data` is a name that an enclosing `if isinstance(name, list):` (or `tuple`, or both) has checked."""
    return isinstance(data, ast.Name) and any(
        first <= line <= last and name == data.id for first, last, name in facts.list_checks)


def _may_be_numpy(facts, node: ast.expr, line: int, depth: int = 0) -> bool:
    """A numpy array where it is made: `np.*(...)`, `t.numpy()`, an array method of one, an index, arithmetic
    or a comparison with one (`mask = lens > 0` of an array), a name or `self.x` bound to any of those, a
    parameter annotated `np.ndarray` / `NDArray`."""
    if depth > 4:
        return False
    if isinstance(node, ast.Call):
        func = node.func
        if (facts.qualify(dotted_name(func)) or "").startswith("numpy."):
            return True
        return isinstance(func, ast.Attribute) and (
            func.attr == "numpy" and not node.args
            or func.attr in NUMPY_ARRAY_METHODS and _may_be_numpy(facts, func.value, line, depth))
    if isinstance(node, ast.Attribute) and node.attr == "T" or isinstance(node, ast.Subscript):
        return _may_be_numpy(facts, node.value, line, depth)
    if isinstance(node, ast.BinOp):
        return _may_be_numpy(facts, node.left, line, depth) or _may_be_numpy(facts, node.right, line, depth)
    if isinstance(node, ast.UnaryOp):
        return _may_be_numpy(facts, node.operand, line, depth)
    if isinstance(node, ast.Compare):
        return any(_may_be_numpy(facts, operand, line, depth) for operand in [node.left, *node.comparators])
    if isinstance(node, ast.IfExp):
        return _may_be_numpy(facts, node.body, line, depth) or _may_be_numpy(facts, node.orelse, line, depth)
    if isinstance(node, ast.Name):
        annotation = facts.parameter_annotation(node.id, line)
        if annotation is not None and (facts.qualify(dotted_name(
                annotation.value if isinstance(annotation, ast.Subscript) else annotation)) or "").startswith(
                ("numpy.", "numpy.typing.")):
            return True
        return any(value is not None and _may_be_numpy(facts, value, line, depth + 1)
                   for value in facts.bindings_at(node.id, line) or [])
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return any(binding.value is not None and _may_be_numpy(facts, binding.value, binding.line, depth + 1)
                   for binding in facts.self_attribute_bindings(node.attr, line) or [])
    return False

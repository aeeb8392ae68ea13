"""What kind of value an expression certainly holds: a Python number or int, a tensor (and how many
dimensions it has), a list of ints. Shared by the rules about element writes and indexing."""

from __future__ import annotations

import ast

from .facts import dotted_name

# Factories whose result's number of dimensions can be read off their arguments.
SIZED_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn"})
# Tensor methods whose result has the dimensions (and the placement) of the tensor they are called on.
SAME_SHAPE_METHODS = frozenset({"cuda", "to", "clone", "contiguous", "detach", "float", "half", "double", "int",
                                "long", "bool", "bfloat16", "fill_", "zero_"})
SHAPE_NAME_ENDINGS = ("shape", "shapes", "sizes", "dims", "dimensions")
NUMBER_BUILTINS = frozenset({"len", "int", "float", "bool", "round", "abs"})


def is_int_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


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
    return False


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
    if isinstance(node, ast.Attribute):
        return (facts.qualify(dotted_name(node)) or "") in ("math.inf", "math.pi", "math.e", "math.nan")
    if isinstance(node, ast.Name) and depth < 4:
        return _counter_or_bound_only_to(facts, node, line,
                                         lambda value: is_python_number(facts, value, line, depth + 1))
    return False

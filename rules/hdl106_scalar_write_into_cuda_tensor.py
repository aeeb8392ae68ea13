from __future__ import annotations

import ast
import re

import libcst as cst

from h2dlint.facts import Placement, dotted_name, has_gpu_evidence
from h2dlint.model import Applicability, Edit, Fix, Position
from h2dlint.rule import Invalid, Rule, Valid

# Factories whose result's number of dimensions can be read off their arguments.
SIZED_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn"})
# Tensor methods whose result has the dimensions (and the placement) of the tensor they are called on.
SAME_SHAPE_METHODS = frozenset({"cuda", "to", "clone", "contiguous", "detach", "float", "half", "double", "int",
                                "long", "bool", "bfloat16", "fill_", "zero_"})
SHAPE_NAME_ENDINGS = ("shape", "shapes", "sizes", "dims", "dimensions")
NUMBER_BUILTINS = frozenset({"len", "int", "float", "bool", "round", "abs"})
_ELEMENT_WRITE = re.compile(r"\]\s*=[^=]")


class ScalarWriteIntoCudaTensor(Rule):
    """
    ## What it does
    Finds an assignment of a Python number (`0`, `-1.5`, `True`, a name bound only to
    numbers, `len(...)`, `x.item()`) to one element of a tensor known to be on a CUDA
    device (made there, or passed to a `torch.distributed` collective such as
    `dist.all_reduce`, which NCCL runs on CUDA tensors), `cuda_t[i] = v` or
    `cuda_t[i, j] = v`, where it runs often: in a loop, a `forward`, a step function.

    ## Why is this bad?
    For a CUDA tensor, PyTorch turns the Python number into a 0-d **CPU** tensor and
    writes it with `copy_to` (ATen's `TensorIndexing.h`): when the indexed part has the
    value's shape, a single element, that is `dst.copy_(src)`, a blocking host-to-device
    copy (`cudaMemcpyAsync` then `cudaStreamSynchronize`). The host waits until every
    kernel already queued on the stream has finished, to write 4 bytes.

    Only writes that select exactly one element are reported, because only they stall:
    - `t[:1] = v`, `t[i] = v` on a tensor of 2 or more dimensions, `t[..., 0] = v`: the
      indexed part has more dimensions than the 0-d value, so `copy_to` calls
      `dst.fill_(src)`, which reads the CPU value on the host and launches a fill kernel.
      No synchronization.
    - `t[i] += v`: Python reads `t[i]`, adds on the device, and writes back a CUDA
      tensor: a device-to-device copy. No synchronization.
    - `t[mask] = v` with a boolean mask becomes `masked_fill_`: no synchronization here
      (HDL302 reports boolean-mask indexing where it syncs).

    An index list or an integer-tensor index (`t[idx] = v`) goes through `index_put_`,
    which copies the 0-d CPU value with `.to(device)`: a blocking copy too, but a name
    used as an index may also be a slice or a boolean mask, so indices must be integer
    literals or names bound only to integers (`for i in range(...)`, `n = len(x)`).
    The number of dimensions must be known from where the tensor is made
    (`torch.zeros(n, device="cuda")`, `torch.empty((b, s), device=...)`,
    `torch.tensor([0, 0], device=...)`); a lone size argument counts as one dimension
    when it is an int or named like a count (`n`, `batch_size`), not like a shape
    (`shape`, `sizes`).

    Checked against torch 2.13.0's `ATen/TensorIndexing.h` (`copy_to` calls `copy_`
    first when the sizes match, `fill_` only otherwise) and pytorch/pytorch#186482,
    which measured `gpu_tensor[0] = 5` as synchronizing and `gpu_tensor[:1] = 5` as
    asynchronous and was closed unmerged.

    ## Example
    ```python
    for step in range(num_steps):
        positions[0] = step
    ```

    Use instead:
    ```python
    for step in range(num_steps):
        positions[0].fill_(step)
    ```

    ## Fix safety
    The fix rewrites `t[...] = v` into `t[...].fill_(v)` and is **safe** where every
    index is an integer literal: then `t[...]` is a view of the element, `fill_` with a
    Python number launches a kernel without a copy, and the value is converted to the
    tensor's dtype as the assignment converted it; an index out of range still raises
    `IndexError`. With a name as an index no fix is offered: if it were a tensor,
    `t[idx]` would be a copy and `fill_` would write to that copy. Assignments with
    several targets (`a[0] = b[0] = 0`) get no fix either.

    ## References
    - h2dlint reference "What makes PyTorch code stall the GPU stream": scalar write
      (`cuda_t[0] = 0` is a small blocking H2D; fix `cuda_t[:1] = 0`, `fill_`).
    - PyTorch `ATen/TensorIndexing.h`: `copy_to`, `set_item`.
    - pytorch/pytorch#186482: "Avoid `cudaStreamSync` in single-item GPU tensor assignment".
    """

    code = "HDL106"
    name = "scalar-write-into-cuda-tensor"
    summary = "`cuda_t[i] = <Python number>` on one element is a blocking host-to-device copy"
    prefilter = _ELEMENT_WRITE

    valid_examples = (
        Valid("import torch\ndef forward(n):\n    t = torch.zeros(n, device='cuda')\n    t[:1] = 0\n    return t\n"),
        Valid("import torch\ndef forward(n):\n    t = torch.zeros((n, 4), device='cuda')\n    t[0] = 0\n"
              "    return t\n"),
        Valid("import torch\ndef forward(n):\n    t = torch.zeros(n, device='cuda')\n    t[0] += 1\n    return t\n"),
        Valid("import torch\ndef forward(n, v):\n    t = torch.zeros(n, device='cuda')\n    t[0] = v\n    return t\n"),
        Valid("import torch\ndef forward(n, idx):\n    t = torch.zeros(n, device='cuda')\n    t[idx] = 0\n"
              "    return t\n"),
        Valid("import torch\ndef forward(n):\n    t = torch.zeros(n)\n    t[0] = 0\n    return t\n"),
        Valid("import torch\ndef forward(t):\n    t[0] = 0\n    return t\n"),
        Valid("import torch\nclass A:\n    def __init__(self, n):\n        self.t = torch.zeros(n, device='cuda')\n"
              "        self.t[0] = 1\n"),
        Valid("import torch\nt = torch.zeros(4, device='cuda')\nt[0] = 1\n"),
        Valid("import torch\ndef forward(n):\n    t = torch.zeros(n, device='cuda')\n    t[0, 1] = 0\n    return t\n"),
        Valid("import torch\nimport torch.distributed as dist\ndef count(n: int, slots, device):\n"
              "    counts = torch.zeros(slots, device=device)\n    for i in range(slots):\n        counts[i] = n\n"
              "    dist.all_reduce(counts, group=get_world_group().cpu_group)\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef forward(n):\n    t = torch.zeros(n, device='cuda')\n    t[0] = 0\n    return t\n",
                "import torch\ndef forward(n):\n    t = torch.zeros(n, device='cuda')\n    t[0].fill_(0)\n"
                "    return t\n", message_contains="in `forward`"),
        Invalid("import torch\ndef f(n, steps):\n    t = torch.empty((2, n), dtype=torch.int64).cuda()\n"
                "    for i in range(steps):\n        t[1, -1] = i\n",
                "import torch\ndef f(n, steps):\n    t = torch.empty((2, n), dtype=torch.int64).cuda()\n"
                "    for i in range(steps):\n        t[1, -1].fill_(i)\n", message_contains="in a loop"),
        Invalid("import torch\ndef f(n: int, steps):\n    t = torch.ones(n, device='cuda:0')\n"
                "    for i in range(steps):\n        t[i] = float('inf')\n", None),
        Invalid("import torch\nclass Sampler:\n    def __init__(self, n):\n        self.flags = torch.zeros(n, 2, "
                "dtype=torch.bool, device='cuda')\n    def step(self, x):\n        self.flags[0][1] = True\n",
                "import torch\nclass Sampler:\n    def __init__(self, n):\n        self.flags = torch.zeros(n, 2, "
                "dtype=torch.bool, device='cuda')\n    def step(self, x):\n        self.flags[0][1].fill_(True)\n"),
        Invalid("import torch\ndef forward(x, scale: float):\n    t = torch.tensor([1.0, 2.0], device='cuda')\n"
                "    n = len(x)\n    t[1] = n * scale\n", "import torch\ndef forward(x, scale: float):\n"
                "    t = torch.tensor([1.0, 2.0], device='cuda')\n    n = len(x)\n    t[1].fill_(n * scale)\n"),
        Invalid("import torch\nimport torch.distributed as dist\ndef count(n: int, slots, device, group):\n"
                "    counts = torch.zeros(slots, device=device)\n    for i in range(slots):\n        counts[i] = n\n"
                "    dist.all_reduce(counts, group=group)\n", None),
    )

    anchored = True

    @classmethod
    def may_apply(cls, text: str, settings) -> bool:
        return cls.prefilter_matches(text) and has_gpu_evidence(text, settings.gpu_device_names)

    @classmethod
    def anchor(cls):
        return _ELEMENT_WRITE  # the line of a target's closing bracket and its `=`

    @classmethod
    def candidates(cls, facts):
        found = []
        for node in facts.assignments:
            if any(isinstance(target, ast.Subscript) for target in node.targets) \
                    and facts.context_at(node.lineno).hot \
                    and _is_python_number(facts, node.value, node.lineno) and not facts.in_torchscript(node.lineno):
                found.extend(target for target in node.targets
                             if isinstance(target, ast.Subscript) and _writes_one_cuda_element(facts, target))
        return found

    def visit_Subscript(self, node: cst.Subscript) -> None:
        facts = self.context.facts
        start, end = self.position(node)
        site = facts.site_at(start, end)
        if site is None or self.code not in site.rules:
            return
        statement = facts.parents[site.node]
        where = facts.context_at(start.line).describe()
        self.report(node, f"writes a Python number into one element of a CUDA tensor {where}: PyTorch copies it "
                          "from a CPU tensor with a blocking copy, so the host waits until the GPU stream drains; "
                          "`.fill_(value)` on the element launches a kernel instead",
                    self._fix(site.node, statement))

    def _fix(self, target: ast.Subscript, statement: ast.Assign) -> Fix | None:
        if len(statement.targets) != 1 or not _literal_indices_only(target):
            return None
        start = self._file_position(statement.lineno, statement.col_offset)
        end = self._file_position(statement.end_lineno, statement.end_col_offset)
        target_code, value_code = self._source_of(target), self._source_of(statement.value)
        original = self._source_of(statement)
        # Parentheses or a comment around the value would be lost or left unbalanced: no fix there.
        if not (original.startswith(target_code) and original.endswith(value_code)
                and re.fullmatch(r"[ \t]*=[ \t]*", original[len(target_code):len(original) - len(value_code)])):
            return None
        return Fix(edits=(Edit(start, end, f"{target_code}.fill_({value_code})"),),
                   applicability=Applicability.SAFE, message="Fill the element on the device with `.fill_(value)`")

    def _file_position(self, line: int, utf8_column: int) -> Position:
        return Position(line, self.context.line_index.column_from_utf8(line, utf8_column))

    def _source_of(self, node: ast.AST) -> str:
        index = self.context.line_index
        start = self._file_position(node.lineno, node.col_offset)
        end = self._file_position(node.end_lineno, node.end_col_offset)
        return index.text[index.offset(start.line, start.column):index.offset(end.line, end.column)]


def _writes_one_cuda_element(facts, target: ast.Subscript) -> bool:
    """`target` indexes one element (as many integer indices as the tensor has dimensions) of a CUDA tensor."""
    line = target.lineno
    indices = 0
    tensor: ast.expr = target
    while isinstance(tensor, ast.Subscript):
        elements = tensor.slice.elts if isinstance(tensor.slice, ast.Tuple) else [tensor.slice]
        if not all(_is_python_int(facts, element, line) for element in elements):
            return False
        indices += len(elements)
        tensor = tensor.value
    return _dimensions(facts, tensor, line) == indices and \
        facts.classify_placement(tensor, line) is Placement.GPU


def _literal_indices_only(target: ast.expr) -> bool:
    while isinstance(target, ast.Subscript):
        elements = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        if not all(_int_literal(element) for element in elements):
            return False
        target = target.value
    return True


def _int_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _dimensions(facts, expr: ast.expr, line: int, depth: int = 0) -> int | None:
    """How many dimensions the tensor `expr` has, when where it is made says so; else None."""
    if depth > 4:
        return None
    if isinstance(expr, ast.Name):
        return _same_for_all(facts.bindings_at(expr.id, line), lambda value: _dimensions(facts, value, line, depth + 1))
    if isinstance(expr, ast.Attribute):
        if isinstance(expr.value, ast.Name) and expr.value.id == "self":
            bindings = facts.self_attribute_bindings(expr.attr, line)
            return _same_for_all(bindings and [binding.value for binding in bindings],
                                 lambda value: _dimensions(facts, value, line, depth + 1))
        return _dimensions(facts, expr.value, line, depth + 1) if expr.attr == "data" else None
    if not isinstance(expr, ast.Call):
        return None
    func = expr.func
    if isinstance(func, ast.Attribute) and func.attr in SAME_SHAPE_METHODS:
        return _dimensions(facts, func.value, line, depth + 1)
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
    if _is_python_int(facts, node, line):
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


def _is_python_int(facts, node: ast.expr, line: int, depth: int = 0) -> bool:
    """An expression that certainly evaluates to a Python int (not a tensor, a slice or a mask)."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_python_int(facts, node.operand, line, depth)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
        return _is_python_int(facts, node.left, line, depth) and _is_python_int(facts, node.right, line, depth)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("len", "int") \
            and node.func.id not in facts.aliases:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            node.func.attr == "size" and len(node.args) == 1 or node.func.attr in ("numel", "dim") and not node.args):
        return True  # `x.size(0)`, `x.numel()`: on a tensor these are ints
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
            and _int_literal(node.slice):
        return True
    if isinstance(node, ast.Name) and depth < 4:
        return _counter_or_bound_only_to(facts, node, line, lambda value: _is_python_int(facts, value, line, depth + 1))
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


def _is_python_number(facts, node: ast.expr, line: int, depth: int = 0) -> bool:
    """An expression that certainly evaluates to a Python int, float or bool (never a tensor)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, complex)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_python_number(facts, node.operand, line, depth)
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
        return _is_python_number(facts, node.left, line, depth) and _is_python_number(facts, node.right, line, depth)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in NUMBER_BUILTINS and func.id not in facts.aliases and \
                (func.id != "abs" or all(_is_python_number(facts, arg, line, depth) for arg in node.args))
        return isinstance(func, ast.Attribute) and func.attr == "item" and not node.args or \
            (facts.qualify(dotted_name(func)) or "").startswith("math.")
    if isinstance(node, ast.Attribute):
        return (facts.qualify(dotted_name(node)) or "") in ("math.inf", "math.pi", "math.e", "math.nan")
    if isinstance(node, ast.Name) and depth < 4:
        return _counter_or_bound_only_to(facts, node, line,
                                         lambda value: _is_python_number(facts, value, line, depth + 1))
    return False

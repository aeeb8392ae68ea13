from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from h2dlint.branches import untaken_branch
from h2dlint.copies import where_hot
from h2dlint.facts import OPEN_GATE, Placement
from h2dlint.hotness import hot_outside_tests
from h2dlint.model import Applicability, Edit, Fix, Position
from h2dlint.placement import classify_placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.values import (
    ELEMENT_WRITE,
    indexed_view,
    indexes_by_integers,
    is_int_literal,
    is_python_int,
    is_python_number,
    tensor_dimensions,
)

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst


class ScalarWriteIntoCudaTensor(Rule):
    """
    ## What it does
    Finds an assignment of a Python number (`0`, `-1.5`, `True`, a name bound only to
    numbers, `len(...)`, `x.item()`, `1 if flag else 0`) to one element of a tensor known to be on a CUDA
    device (made there, or passed to a `torch.distributed` collective such as
    `dist.all_reduce`, which NCCL runs on CUDA tensors), `cuda_t[i] = v` or
    `cuda_t[i, j] = v`, or through a tensor of integers, `cuda_t[ids] = v`, `cuda_t[:, ids] = v`,
    where it runs often: in a loop, a `forward`, a step function; not in a block no call of
    the project takes (see HDL101), nor in test code (a test module, a `test_*` function).

    ## Why is this bad?
    For a CUDA tensor, PyTorch turns the Python number into a 0-d **CPU** tensor and
    writes it with `copy_to` (ATen's `TensorIndexing.h`): when the indexed part has the
    value's shape, a single element, that is `dst.copy_(src)`, a blocking host-to-device
    copy (`cudaMemcpyAsync` then `cudaStreamSynchronize`). The host waits until every
    kernel already queued on the stream has finished, to write 4 bytes.

    Through integer indices, only writes that select exactly one element stall:
    - `t[:1] = v`, `t[i] = v` on a tensor of 2 or more dimensions, `t[..., 0] = v`: the
      indexed part has more dimensions than the 0-d value, so `copy_to` calls
      `dst.fill_(src)`, which reads the CPU value on the host and launches a fill kernel.
      No synchronization.
    - `t[i] += v`: Python reads `t[i]`, adds on the device, and writes back a CUDA
      tensor: a device-to-device copy. No synchronization.

    Through an index tensor of integers (`t[ids] = v`, `t[:, ids] = v`), of one dimension
    or more, the write is `index_put_`, which moves the 0-d CPU value to the device with
    `.to(device)` (ATen's `_index_put_impl_`): a blocking copy however many elements it
    writes. A boolean mask does not copy: `t[mask] = v` becomes `masked_fill_`, which
    reads the CPU value on the host (HDL302 reports boolean-mask indexing where it syncs).
    So a tensor index is reported only where it certainly holds integers: made with an
    integer `dtype=` (`torch.int64`, `torch.int32`), by `torch.arange`, `randperm`,
    `argsort`, `nonzero` and the like, by `.long()`, `.int()` or `.to(torch.long)`, a
    view, slice, move to a device or join of such tensors, arithmetic on it with ints, a
    name bound only to one, or a parameter every call the project model sees passes one
    (not a module's `forward`, which runs through `__call__`). Not a 0-d index
    (`x.argmax()`, `ids[0]`): PyTorch reads it back as an int first. A Python list index
    is HDL107's.

    Element indices must be integer
    literals or names (or `self.x`) bound only to integers (`for i in range(...)`,
    `n = len(x)`, `rank: int = ...`, a parameter annotated `int`), or the field of a
    project class annotated `int` read through a parameter annotated with that class
    (`config.rank`, `rank: int = 0` in a config dataclass; asked of the project model).
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

    and for `counts[ids] = 0`, `counts.index_fill_(0, ids, 0)`.

    ## Fix safety
    The fix rewrites `t[...] = v` into `t[...].fill_(v)` and is **safe** where every
    index is an integer literal: then `t[...]` is a view of the element, `fill_` with a
    Python number launches a kernel without a copy, and the value is converted to the
    tensor's dtype as the assignment converted it; an index out of range still raises
    `IndexError`. With a name as an index no fix is offered: if it were a tensor,
    `t[idx]` would be a copy and `fill_` would write to that copy. Nor through an index
    tensor: `index_fill_` takes one dimension and a 1-d index, which the code does not
    always show. Assignments with several targets (`a[0] = b[0] = 0`) get no fix either.

    ## References
    - h2dlint reference "What makes PyTorch code stall the GPU stream": scalar write
      (`cuda_t[0] = 0` is a small blocking H2D; fix `cuda_t[:1] = 0`, `fill_`).
    - PyTorch `ATen/TensorIndexing.h`: `copy_to`, `set_item`.
    - pytorch/pytorch#186482: "Avoid `cudaStreamSync` in single-item GPU tensor assignment".
    """

    code = "HDL106"
    name = "scalar-write-into-cuda-tensor"
    summary = "`cuda_t[i] = <Python number>` on one element, or `cuda_t[ids] = 0` through integers, is a blocking host-to-device copy"
    prefilter = ELEMENT_WRITE

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
        # a test's set-up, as the other copy rules leave it
        Valid("import torch\ndef test_kernel(n):\n    t = torch.zeros(n, device='cuda')\n    for i in range(n):\n"
              "        t[i] = 1\n"),
        Valid("import torch\ndef forward(n):\n    t = torch.zeros(n, device='cuda')\n    t[0, 1] = 0\n    return t\n"),
        Valid("import torch\ndef forward(x):\n    t = torch.zeros(8, device='cuda')\n    t[t > 0] = 0\n"
              "    keep = x > 0\n    t[keep] = 1\n    return t\n"),
        Valid("import torch\ndef forward(x):\n    t = torch.zeros(8, 4, device='cuda')\n"
              "    ids = torch.arange(2, device='cuda')\n    t[ids][0] = 1\n    return t\n"),
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
        Invalid("import torch\nclass Slots:\n    def __init__(self, n, slot: int):\n        self.slot = slot\n"
                "        self.used = torch.zeros(n, device='cuda')\n    def step(self):\n"
                "        self.used[self.slot] = 1\n", None),
        Invalid("import torch\nimport torch.distributed as dist\ndef count(n: int, slots, device, group):\n"
                "    counts = torch.zeros(slots, device=device)\n    for i in range(slots):\n        counts[i] = n\n"
                "    dist.all_reduce(counts, group=group)\n", None),
        Invalid("import torch\ndef forward(x, ids):\n    t = torch.zeros(8, 4, device='cuda')\n"
                "    rows = torch.tensor(ids, dtype=torch.int64).to('cuda', non_blocking=True)\n"
                "    t[rows] = 0\n    return t\n", None,
                message_contains="through an index tensor into a CUDA tensor in `forward`"),
        Invalid("import torch\ndef forward(x):\n    t = torch.zeros(8, 4, device='cuda')\n"
                "    t[:, x.argsort(descending=True)[:2]] = -1.0\n    return t\n", None),
        Invalid("import torch\ndef forward(ready: bool, config):\n    rank: int = config.rank\n"
                "    flags = torch.zeros(8, device='cuda')\n    flags[rank] = 1 if ready else 0\n",
                message_contains="in `forward`"),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=OPEN_GATE) -> bool:
        return gate.gpu and cls.prefilter_matches(text)

    @classmethod
    def candidates(cls, facts):
        found = []
        for node in facts.assignments:
            if any(isinstance(target, ast.Subscript) for target in node.targets) \
                    and hot_outside_tests(facts, node.lineno) \
                    and is_python_number(facts, node.value, node.lineno) and not facts.in_torchscript(node.lineno) \
                    and untaken_branch(facts, node.lineno) is None:
                found.extend(target for target in node.targets
                             if isinstance(target, ast.Subscript) and (_writes_one_cuda_element(facts, target)
                                                                       or _writes_through_integers(facts, target)))
        return found

    def visit_Subscript(self, node: cst.Subscript) -> None:
        facts = self.context.facts
        found = self.own_site(node)
        if found is None:
            return
        site, start = found
        statement = facts.parents[site.node]
        if not _writes_one_cuda_element(facts, site.node):
            self.report(node, f"writes a Python number through an index tensor into a CUDA tensor"
                              f"{where_hot(facts, start.line)}: `index_put_` copies the number from a CPU tensor "
                              "with a blocking copy, so the host waits until the GPU stream drains; "
                              "`index_fill_(dim, index, value)` launches a kernel instead")
            return
        self.report(node, f"writes a Python number into one element of a CUDA tensor{where_hot(facts, start.line)}: "
                          "PyTorch copies it from a CPU tensor with a blocking copy, so the host waits until the GPU "
                          "stream drains; `.fill_(value)` on the element launches a kernel instead",
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
        if not all(is_python_int(facts, element, line) for element in elements):
            return False
        indices += len(elements)
        tensor = tensor.value
    return tensor_dimensions(facts, tensor, line) == indices and \
        classify_placement(facts, tensor, line) is Placement.GPU


def _writes_through_integers(facts, target: ast.Subscript) -> bool:
    """`target` indexes a CUDA tensor through a tensor of integers (`t[ids]`, `t[:, ids]`, `conv[i][:, ids]`), with
    slices and Python ints as its other indices: `index_put_`, never the boolean mask `masked_fill_` takes."""
    tensor, indices = indexed_view(facts, target)
    return indexes_by_integers(facts, indices, target.lineno) \
        and classify_placement(facts, tensor, target.lineno) is Placement.GPU


def _literal_indices_only(target: ast.expr) -> bool:
    while isinstance(target, ast.Subscript):
        elements = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        if not all(is_int_literal(element) for element in elements):
            return False
        target = target.value
    return True

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from h2dlint.facts import OPEN_GATE, Placement
from h2dlint.hotness import RUN_ONCE_FUNCTIONS, context_at, hot_outside_tests, in_test_code
from h2dlint.placement import classify_placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import outside_per_step_code
from h2dlint.syntax import dotted_name
from h2dlint.values import (
    ELEMENT_WRITE,
    has_index_list,
    indexed_view,
    indexes_by_integers,
    is_certainly_tensor,
    is_index_list,
    is_python_int,
    is_python_number,
    is_tensor_annotation,
    tensor_dimensions,
)

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst

# Last words of names that read as an int (`last_token_id`, `req_idx`); parts anywhere in, and last words of, names
# that read as an integer index tensor (`expanded_idx_mapping`, `seq_indices`, `input_ids`).
INT_NAME_WORDS = frozenset({"id", "idx", "index"})
INDEX_TENSOR_NAME_PARTS = ("indices", "mapping")
INDEX_TENSOR_NAME_WORDS = frozenset({"ids", "idxs"})
ELEMENT, INDEX_TENSOR, LIST_INDEX = "element", "index tensor", "list index"


class PossibleScalarWrite(Rule):
    """
    ## What it does
    The opt-in companion of HDL106 and HDL107, as HDL202 and HDL204 are of HDL201: a
    Python number written into a tensor where h2dlint cannot prove the write stalls
    often, but it may. The write is in hot code (a loop, a `forward`, a step function)
    or in any other function that is not a constructor or weight loading (such as a
    request-state update or `compute_logits`, which may run every step; HDL106 and
    HDL107 report only hot code). The tensor is certainly one (a parameter annotated
    `torch.Tensor`, a torch op's result, a name or `self.x` bound only to such values)
    of unknown placement, or a CUDA tensor whose write HDL106 cannot prove to be one
    element, or one outside hot code:
    - `t[i] = 0`, `t[i, j] = -inf`: indices that are Python ints or read as ints
      (`last_token_id`, `req_idx`: a last word `id`, `idx`, `index`), as many as the
      tensor has dimensions where h2dlint can see them (with more dimensions the write
      fills a row: no copy, not reported);
    - `t[idx] = 0`, `t[:, idx] = 0` where `idx` is probably an integer tensor: a
      parameter annotated `torch.Tensor`, or a name like an index tensor's
      (`*indices*`, `*mapping*`, `*_ids`);
    - `t[i, ids] = -inf` where `ids` is a Python list (as HDL107 finds them; HDL107
      reports those on CUDA tensors).
    Indices named like a mask (`*mask*`) or bound only to comparisons are not reported:
    a boolean index becomes `masked_fill_`, which copies nothing.
    Off by default; select it with `--select HDL108` or `--extend-select HDL108`.

    ## Why is this bad?
    On a CUDA tensor, a Python number written to one element becomes a 0-d CPU tensor
    copied with a blocking `copy_` (see HDL106). Through an integer-tensor index the
    write is `index_put_`, which moves the 0-d CPU value to the device with a blocking
    `.to(device)` (ATen's `_index_put_impl_`); a Python list index is copied to the
    device first, blocking too (see HDL107). The host waits until every kernel queued
    on the stream has finished, at every write. On a host tensor all are free, a `t[i]`
    of a tensor with more dimensions is a row fill without a copy, and a boolean index
    becomes `masked_fill_` without one: that uncertainty is why this rule is off by
    default (precision in docs/precision/copies.md).

    ## Example
    ```python
    def bincount(expanded_idx_mapping: torch.Tensor, prompt_bin_mask: torch.Tensor):
        for _ in range(2):
            prompt_bin_mask[expanded_idx_mapping] = 0
    ```

    Use instead:
    ```python
    def bincount(expanded_idx_mapping: torch.Tensor, prompt_bin_mask: torch.Tensor):
        for _ in range(2):
            prompt_bin_mask.index_fill_(0, expanded_idx_mapping, 0)
    ```
    (`index_fill_` and `.fill_(value)` on an element take the number as a kernel
    argument: no copy.)

    ## Fix safety
    No fix is offered: whether `t` is a tensor at all rests on an annotation or a name,
    and `.fill_()` or `index_fill_` on something that is not a tensor would fail.

    ## References
    - h2dlint HDL106 and its references (`ATen/TensorIndexing.h`, pytorch/pytorch#186482).
    - vllm-project/vllm#41429: `logits[last_token_id] = -inf` became a slice assignment,
      `prompt_bin_mask[expanded_idx_mapping] = 0` became `index_fill_`.
    """

    code = "HDL108"
    name = "possible-scalar-write"
    summary = "`t[i] = 0` / `t[idx] = 0` on a tensor that may be on the GPU, where it may run often, may block"
    prefilter = ELEMENT_WRITE
    default_enabled = False

    valid_examples = (
        Valid("import torch\ndef forward(t: torch.Tensor):\n    t[:1] = 0\n"),
        Valid("import torch\ndef forward(n):\n    t = torch.zeros(n, device='cuda')\n"
              "    idx = torch.arange(2, device='cuda')\n    t[idx] = 0\n"),  # HDL106's

        Valid("import torch\nclass M:\n    def __init__(self, t: torch.Tensor):\n        t[0] = 0\n"),
        Valid("import torch\nfor _ in range(3):\n    x = torch.zeros(4)\n    x[1] = 0\n"),
        Valid("import torch\ndef forward(t, i):\n    t[i] = 0\n"),
        Valid("import torch\ndef forward(t: torch.Tensor, v):\n    t[0] = v\n"),
        Valid("import torch\ndef forward(t: torch.Tensor, mask_idx):\n    t[mask_idx] = 0\n"),
        Valid("import torch\ndef forward(n):\n    t = torch.zeros(n, 4)\n    t[0] = 0\n"),
        Valid("import torch\ndef forward(t: torch.Tensor):\n    t[0] += 1\n"),
        Valid("import torch\ndef forward(n):\n    t = torch.zeros(n, device='cuda')\n    t[0] = 0\n"),
        Valid("import torch\ndef forward(n: int):\n    t = torch.zeros((n, 4), device='cuda')\n    t[0] = 0\n"),
        Valid("import torch\nclass M:\n    def __init__(self, n):\n        self.t = torch.ones(n)\n"
              "        for i in range(n):\n            self.t[i] = 0\n"),
        Valid("def forward(counts: dict, token_idx):\n    counts[token_idx] = 0\n"),
        Valid("import torch\ndef forward(x):\n    t = torch.zeros(4, 8, device='cuda')\n    t[:, [1, 2]] = 0\n"),
        Valid("import torch\ndef forward(x, idx, batch):\n    mask = torch.zeros(batch, 1, 8, device=x.device)\n"
              "    mask[:, :, idx] = 1.0\n"),
        Valid("import torch\ndef forward(input_ids: torch.Tensor, audio_id):\n"
              "    is_audio_idx = input_ids == audio_id\n    ids = input_ids.clone()\n    ids[is_audio_idx] = 0\n"),
        Valid("import torch\nclass P:\n    def __init__(self, bos_token_id: int):\n"
              "        self.bos_token_id = bos_token_id\n"
              "    def __call__(self, scores: torch.Tensor):\n        scores[:, self.bos_token_id] = 0\n"),
    )
    invalid_examples = (
        Invalid("import torch\nclass States:\n    def __init__(self, n, device):\n"
                "        self.step = torch.zeros(n, dtype=torch.int32, device=device)\n"
                "    def add_request(self, slot_idx: int):\n        self.step[slot_idx] = 0\n", None,
                message_contains="in `add_request`, which h2dlint cannot tell to run often or not"),
        Invalid("import torch\ndef apply(logits: torch.Tensor, bad_words):\n    for bad_word_ids in bad_words:\n"
                "        last_token_id = bad_word_ids[-1]\n        logits[last_token_id] = float('-inf')\n",
                None, message_contains="into one element of a tensor that may be on the GPU in a loop"),
        Invalid("import torch\ndef forward(x, expanded_idx_mapping, counts: torch.Tensor):\n"
                "    counts[expanded_idx_mapping] = 0\n", None, message_contains="index that may be an integer tensor"),
        Invalid("import torch\ndef forward(x, rows: torch.Tensor):\n    out = torch.softmax(x, -1)\n"
                "    out[:, rows] = 0\n", None, message_contains="`index_put_`"),
        Invalid("import torch\ndef step(self, x):\n    flags = x.cuda()\n    flags[0, 1] = True\n", None,
                message_contains="into one element of a tensor that may be on the GPU in `step`"),
        Invalid("import torch\ndef __call__(self, logits: torch.Tensor, banned):\n    for row, tokens in banned:\n"
                "        indices = list(tokens)\n        logits[row, indices] = -float('inf')\n", None,
                message_contains="through a Python list index into a tensor that may be on the GPU in a loop"),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=OPEN_GATE) -> bool:
        # What is certainly a tensor takes torch to make, or shows a CUDA placement.
        return cls.prefilter_matches(text) and ("torch" in text or gate.gpu)

    @classmethod
    def candidates(cls, facts):
        found = []
        for node in facts.assignments:
            if any(isinstance(target, ast.Subscript) for target in node.targets) \
                    and _may_run_often(facts, node.lineno) and not facts.in_torchscript(node.lineno) \
                    and is_python_number(facts, node.value, node.lineno):
                found.extend(target for target in node.targets
                             if isinstance(target, ast.Subscript) and _possible_write(facts, target))
        return found

    def visit_Subscript(self, node: cst.Subscript) -> None:
        facts = self.context.facts
        found = self.own_site(node)
        if found is None:
            return
        site, start = found
        context = context_at(facts, start.line)
        where = context.describe() if context.hot else \
            f"in `{context.function}`, which h2dlint cannot tell to run often or not"
        kind = _possible_write(facts, site.node)
        if kind == ELEMENT:
            self.report(node, f"may write a Python number into one element of a tensor that may be on the GPU "
                              f"{where}: if it is a CUDA tensor and the index picks one element, PyTorch copies the "
                              "number from a CPU tensor with a blocking copy, so the host waits until the GPU stream "
                              "drains; `.fill_(value)` on the element launches a kernel instead")
        elif kind == INDEX_TENSOR:
            self.report(node, f"writes a Python number through an index that may be an integer tensor into a tensor "
                              f"that may be on the GPU {where}: if so, `index_put_` copies the number to the device "
                              "with a blocking copy (so does one element picked by an int), and the host waits until "
                              "the GPU stream drains; `t.index_fill_(dim, index, value)` launches a kernel instead")
        else:
            self.report(node, f"writes a Python number through a Python list index into a tensor that may be on the "
                              f"GPU {where}: if it is a CUDA tensor, PyTorch copies the list (and the number) to the "
                              "device with blocking copies, and the host waits until the GPU stream drains; build the "
                              "index tensor once on the device and use `t.index_fill_(dim, index, value)`")


def _may_run_often(facts, line: int) -> bool:
    """Hot code outside constructors and weight loading, or code of unknown hotness that may run every step."""
    context = context_at(facts, line)
    if context.hot:
        return context.function not in RUN_ONCE_FUNCTIONS and not in_test_code(facts, context)
    return not outside_per_step_code(context, facts)


def _possible_write(facts, target: ast.Subscript) -> str | None:
    """ELEMENT, INDEX_TENSOR or LIST_INDEX when `target`, assigned a Python number, may be a blocking write into a
    CUDA tensor that HDL106 and HDL107 do not report; else None."""
    line = target.lineno
    tensor, indices = indexed_view(facts, target)
    placement = classify_placement(facts, tensor, line)
    hot = hot_outside_tests(facts, line)  # where HDL106 and HDL107 report what they prove
    if hot and placement is Placement.GPU and indexes_by_integers(facts, indices, line):
        return None  # HDL106's finding: through a tensor of integers
    if all(_int_like(facts, index, line) for index in indices):
        dimensions = tensor_dimensions(facts, tensor, line)
        proven = all(is_python_int(facts, index, line) for index in indices)
        if dimensions is not None and (dimensions != len(indices) or hot and proven and placement is Placement.GPU):
            return None  # a row filled without a copy, or HDL106's finding
        kind = ELEMENT
    elif any(_index_tensor_like(facts, index, line) for index in indices) and all(
            isinstance(index, ast.Slice) or _int_like(facts, index, line) or _index_tensor_like(facts, index, line)
            for index in indices):
        kind = INDEX_TENSOR
    elif not (hot and placement is Placement.GPU) and has_index_list(facts, target):  # else HDL107's
        kind = LIST_INDEX
    else:
        return None
    return kind if placement is not Placement.HOST and is_certainly_tensor(facts, tensor, line) else None


def _int_like(facts, index: ast.expr, line: int) -> bool:
    """A Python int, or a name that reads as one (`last_token_id`, `req_idx`) and is no mask."""
    return is_python_int(facts, index, line) or _last_word(index) in INT_NAME_WORDS and not _mask(facts, index, line)


def _index_tensor_like(facts, index: ast.expr, line: int) -> bool:
    """Probably an integer tensor: a parameter annotated `torch.Tensor`, or a name like an index tensor's
    (`*indices*`, `*mapping*`, `*_ids`); not a mask, a proven int or a list."""
    name = dotted_name(index)
    if name is None or _mask(facts, index, line) or is_python_int(facts, index, line) \
            or is_index_list(facts, index, line, alone=False):
        return False
    last = name.rsplit(".", 1)[-1].lower()
    return isinstance(index, ast.Name) and is_tensor_annotation(facts, facts.parameter_annotation(index.id, line)) \
        or any(part in last for part in INDEX_TENSOR_NAME_PARTS) or _last_word(index) in INDEX_TENSOR_NAME_WORDS


def _last_word(index: ast.expr) -> str:
    name = dotted_name(index)
    return name.rsplit(".", 1)[-1].rsplit("_", 1)[-1].lower() if name else ""


def _mask(facts, index: ast.expr, line: int) -> bool:
    """Named like a mask, or a name bound only to comparisons (`is_audio_idx = input_ids == audio_id`)."""
    name = dotted_name(index) or ""
    if "mask" in name.rsplit(".", 1)[-1].lower():
        return True
    values = facts.bindings_at(index.id, line) if isinstance(index, ast.Name) else None
    return bool(values) and all(_comparison(value) for value in values)


def _comparison(value: ast.expr | None) -> bool:
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Invert):
        return _comparison(value.operand)
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return _comparison(value.left) and _comparison(value.right)
    return isinstance(value, ast.Compare)

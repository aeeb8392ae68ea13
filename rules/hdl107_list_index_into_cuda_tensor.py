from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from h2dlint.branches import untaken_branch
from h2dlint.copies import where_hot
from h2dlint.facts import OPEN_GATE, Placement
from h2dlint.hotness import hot_outside_tests
from h2dlint.placement import classify_placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.values import has_index_list

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst


class ListIndexIntoCudaTensor(Rule):
    """
    ## What it does
    Finds a CUDA tensor indexed with a Python list where it runs often (a loop, a
    `forward`, a step function): writes such as `t[:, [1, 2]] = v` or
    `scores[i, banned_tokens] = -inf`, and reads such as `t[ids]`. The list is a list
    literal or comprehension, a name or `self.x` bound only to lists, a parameter
    annotated `list[int]`, or what a function of the same file annotated
    `-> list[...]` (or returning only lists) returns. The tensor must be known to be on
    a CUDA device (see HDL201 for what counts). Not in a block no call of the project
    takes (see HDL101), nor in test code (a test module, a `test_*` function).

    ## Why is this bad?
    PyTorch turns a list index into an index tensor on the indexed tensor's device:
    `applySlicing` in `torch/csrc/autograd/python_variable_indexing.cpp` calls
    `sequenceToVariable(self.options(), list)`, and `internal_new_from_data`
    (`torch/csrc/utils/tensor_new.cpp`) fills a CPU tensor in ordinary (pageable) memory
    and moves it with `.to(device, non_blocking=False)`: a blocking host-to-device copy.
    The host waits until every kernel already queued on the stream has finished, once
    per indexing, every call. Reads pay the same copy as writes; a write of a Python
    number (`= -inf`) adds a second blocking copy for the 0-d value (`index_put_` moves
    it to the device, see HDL106).

    A whole index that is a short list holding tensors (`t[[i_t, j_t]]`) is a tuple of
    indices instead (NumPy's rule, `treatSequenceAsTuple`), so a list that is the whole
    index is reported only when its elements are Python ints; inside a tuple
    (`t[:, ids]`) every list is converted. Empty lists (a copy of nothing) are not
    reported.

    ## Example
    ```python
    def forward(self, logits):
        logits[:, self.banned_token_ids] = float("-inf")
    ```

    Use instead:
    ```python
    def __init__(self, banned_token_ids, device):
        self.banned = torch.tensor(banned_token_ids, device=device)  # once

    def forward(self, logits):
        logits.index_fill_(1, self.banned, float("-inf"))
    ```

    ## Fix safety
    No fix is offered. The index tensor must be built once and kept where the code can
    reuse it (an attribute, a cache keyed by device), which only the author can place.
    Rewriting a list of consecutive ints into a slice (`t[:, [1, 2]]` into `t[:, 1:3]`)
    would avoid the copy, but is not safe: a list out of range raises `IndexError` where
    a slice is silently cut short, and a read through a slice is a view, not a copy.

    ## References
    - PyTorch `torch/csrc/autograd/python_variable_indexing.cpp` (`applySlicing`,
      `sequenceToVariable`, `treatSequenceAsTuple`) and `torch/csrc/utils/tensor_new.cpp`
      (`indexing_tensor_from_data`, `internal_new_from_data`).
    - h2dlint reference "What makes PyTorch code stall the GPU stream": a blocking copy is
      `cudaMemcpyAsync` followed by `cudaStreamSynchronize`.
    - vllm-project/vllm#51458 (chameleon's `logits[:, image_tokens] = min` became a cached
      device index and `index_fill_`).
    """

    code = "HDL107"
    name = "list-index-into-cuda-tensor"
    summary = "`cuda_t[:, [1, 2]]` / `cuda_t[ids]` with a Python list copies the index to the device, blocking"
    prefilter = ("[",)

    valid_examples = (
        Valid("import torch\ndef forward(ids):\n    t = torch.zeros(8, device='cuda')\n"
              "    index = torch.tensor(ids, device='cuda')\n    return t[index]\n"),
        Valid("import torch\ndef forward(x):\n    t = torch.zeros(8, 8)\n    return t[:, [1, 2]]\n"),
        Valid("import torch\ndef helper(x):\n    t = torch.zeros(8, 8, device='cuda')\n    return t[:, [1, 2]]\n"),
        Valid("import torch\ndef forward(i, j):\n    t = torch.zeros(8, 8, device='cuda')\n"
              "    return t[[torch.tensor(i), torch.tensor(j)]]\n"),
        Valid("import torch\ndef forward(x, rows):\n    t = torch.zeros(8, 8, device='cuda')\n    return t[rows]\n"),
        Valid("import torch\ndef forward(x):\n    t = torch.zeros(8, 8, device='cuda')\n    t[:, []] = 0\n"),
        Valid("import torch\ndef forward(x):\n    t = torch.zeros(8, 8, device='cuda')\n"
              "    return t[:, 1:3], t[0, 1]\n"),
        # a test's set-up, as the other copy rules leave it
        Valid("import torch\ndef test_mask(n):\n    t = torch.zeros(8, 8, device='cuda')\n    for i in range(n):\n"
              "        t[i, [1, 2]] = 1\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef forward(x):\n    t = torch.zeros(8, 8, device='cuda')\n    t[:, [1, 2]] = x\n",
                None, message_contains="writes through a Python list index into a CUDA tensor in `forward`"),
        Invalid("import torch\ndef step(self, x):\n    ids = [i for i in range(4)]\n    return x.cuda()[ids]\n",
                None, message_contains="indexes a CUDA tensor with a Python list in `step`"),
        Invalid("import torch\nclass Processor:\n    def __init__(self, token_ids, n):\n"
                "        self.token_ids = list(token_ids)\n        self.mask = torch.zeros(n, device='cuda')\n"
                "    def __call__(self, rows):\n        for row in rows:\n"
                "            self.mask[row, self.token_ids] = float('-inf')\n", None),
        Invalid("import torch\ndef banned(row) -> list[int]:\n    return [0]\n"
                "def forward(n):\n    scores = torch.zeros(n, 8, device='cuda')\n"
                "    for i in range(n):\n        scores[i, banned(i)] = -1\n", None),
        Invalid("import torch\ndef forward(x, ids: list[int]):\n    return x.to('cuda')[ids]\n", None),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=OPEN_GATE) -> bool:
        return gate.gpu and cls.prefilter_matches(text)

    @classmethod
    def candidates(cls, facts):
        return [node for node in facts.scanned_nodes if isinstance(node, ast.Subscript)
                and hot_outside_tests(facts, node.lineno) and has_index_list(facts, node)
                and classify_placement(facts, node.value, node.lineno) is Placement.GPU
                and untaken_branch(facts, node.lineno) is None]

    def visit_Subscript(self, node: cst.Subscript) -> None:
        facts = self.context.facts
        found = self.own_site(node)
        if found is None:
            return
        site, start = found
        where = where_hot(facts, start.line)
        copy = ("PyTorch builds an index tensor from the list in pageable host memory and copies it to the device "
                "with a blocking copy, so the host waits until the GPU stream drains")
        if isinstance(site.node.ctx, ast.Store):
            self.report(node, f"writes through a Python list index into a CUDA tensor{where}: {copy}; build the "
                              "index tensor once on the device and reuse it (`index_fill_`, `index_copy_`)")
        else:
            self.report(node, f"indexes a CUDA tensor with a Python list{where}: {copy}; build the index "
                              "tensor once on the device and reuse it (`index_select`)")

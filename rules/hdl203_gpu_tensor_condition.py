from __future__ import annotations

from h2dlint.facts import Placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import CONDITION, HOT, SyncReporter, where


class GpuTensorCondition(SyncReporter, Rule):
    """
    ## What it does
    Finds a CUDA tensor used where Python needs a host value, in code that runs often
    (a loop, `forward`, a step function): as the condition of `if`, `while`, `assert`,
    a conditional expression or a comprehension filter (`if (x > 0).any():`,
    `while err > tol:`), or as an index into a Python list or tuple. The tensor must be
    known to be on a CUDA device (see HDL201 for what h2dlint knows); a value that is
    certainly a tensor of unknown placement is HDL202's, and a condition in a function
    h2dlint cannot tell to be hot or cold HDL204's (both off by default).

    ## Why is this bad?
    Python calls `bool(t)` (or `t.__index__()`) on the tensor, which copies its value to
    the host: the host waits until the GPU stream drains, in every iteration. The
    condition is computed on the GPU, but deciding on it is done on the CPU.

    ## Example
    ```python
    def forward(self, x):
        y = self.proj(x.cuda())
        if torch.isnan(y).any():
            y = torch.nan_to_num(y)
        return y
    ```

    Use instead:
    ```python
    def forward(self, x):
        y = self.proj(x.cuda())
        return torch.nan_to_num(y)  # branch-free; or torch.where(cond, a, b)
    ```

    ## Fix safety
    No fix is offered: a branch-free form (`torch.where`, unconditional work, a check
    moved out of the loop) changes what the code computes or when it fails.

    ## References
    - PyTorch: `torch.cuda.set_sync_debug_mode` (reports the copy made by `bool(t)`)
    """

    code = "HDL203"
    name = "gpu-tensor-condition"
    summary = "a CUDA tensor as an `if`/`while` condition or Python index in hot code waits for the GPU"
    kinds = frozenset({CONDITION})
    where = {Placement.GPU: HOT}
    MODEL_DEPENDENCIES = frozenset({"placement"})  # it reports no tensor of unknown placement in code hot only through calls
    prefilter = ("if", "while", "assert", "]")
    evidence = "gpu"

    valid_examples = (
        Valid("import torch\ndef forward(x):\n    y = x.cuda()\n    if y is None:\n        return 0\n"),
        Valid("import torch\ndef forward(x):\n    y = x.cuda()\n    if y.dim() > 1 and y.shape[0]:\n"
              "        return 0\n"),
        Valid("import torch\ndef forward(flag, x):\n    if flag:\n        return x\n"),
        Valid("import torch\nclass M:\n    def __init__(self):\n        x = torch.ones(2, device='cuda')\n"
              "        if x.any():\n            pass\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef forward(x):\n    y = x.cuda()\n    if torch.isnan(y).any():\n"
                "        y = y.nan_to_num()\n    return y\n",
                None, message_contains="used as a condition"),
        # an annotation does not make a tensor a Python bool
        Invalid("import torch\ndef forward(x):\n    y = x.cuda()\n    has_nan: bool = torch.isnan(y).any()\n"
                "    if has_nan:\n        y = y.nan_to_num()\n    return y\n", None),
        Invalid("import torch\ndef solve(x):\n    err = torch.ones((), device='cuda')\n"
                "    while err > 1e-3:\n        err = err / 2\n",
                None, message_contains="(in a loop)"),
        Invalid("import torch\ndef forward(x):\n    names = ['a', 'b']\n"
                "    i = torch.argmax(x.cuda())\n    return names[i]\n",
                None, message_contains="Python index"),
        Invalid("def prepare_attn_masks(forward_batch, begins):\n    for i in range(forward_batch.batch_size):\n"
                "        if begins[i] >= forward_batch.extend_prefix_lens[i]:\n            pass\n"
                "    return forward_batch.extend_prefix_lens_cpu\n",
                None, message_contains="a CUDA tensor used as a condition (in a loop)"),
    )

    def report_site(self, node, site, context) -> None:
        self.report(node, f"{site.what}{where(context)}: Python reads its value on the host, which waits until "
                          "the GPU stream drains; compute without branching (e.g. `torch.where`) or decide on "
                          "host data")

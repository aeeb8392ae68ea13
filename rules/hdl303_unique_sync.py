from __future__ import annotations

from h2dlint.facts import Placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import ANYWHERE, NAMED_HOT_FUNCTION, UNIQUE, SyncReporter, receiver_words, where


class UniqueSync(SyncReporter, Rule):
    """
    ## What it does
    Finds `torch.unique` / `t.unique()` and `torch.unique_consecutive` on tensors that
    are on the GPU (or, in `forward` or a step function, may be: a function hot by
    its own name, not one hot only because such a function calls it).

    ## Why is this bad?
    The number of distinct values is known only after the GPU has computed it; PyTorch
    copies it to the host to size the output, and the host waits until the GPU stream
    drains. `torch.cuda.set_sync_debug_mode("warn")` reports `unique` for this reason.

    ## Example
    ```python
    experts = torch.unique(topk_ids)
    ```

    Use instead:
    ```python
    # fixed-size: a count per possible value, no data-dependent shape
    counts = torch.bincount(topk_ids.flatten(), minlength=num_experts)
    ```

    ## Fix safety
    No fix is offered: the fixed-size alternatives return a different shape.

    ## References
    - PyTorch: `torch.cuda.set_sync_debug_mode`; `torch.bincount`
    """

    code = "HDL303"
    name = "unique-sync"
    summary = "`torch.unique` on a GPU tensor copies the result size to the host"
    kinds = frozenset({UNIQUE})
    where = {Placement.GPU: ANYWHERE, Placement.UNKNOWN: NAMED_HOT_FUNCTION}
    MODEL_DEPENDENCIES = frozenset({"placement"})  # it reports no tensor of unknown placement in code hot only through calls
    prefilter = ("unique(", "unique_consecutive(")
    evidence = "gpu-or-hot"  # on a tensor of unknown placement, owner() asks for a hot function
    text_test_spares_only_parsing = True

    valid_examples = (
        Valid("import numpy as np\ndef forward(x):\n    return np.unique(x)\n"),
        Valid("import torch\ndef load(x):\n    return torch.unique(x)\n"),
        Valid("import torch\ndef forward(ids_cpu):\n    return ids_cpu.unique()\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef forward(ids):\n    return torch.unique(ids)\n", None,
                message_contains="`torch.unique` on a tensor that may be on the GPU (in `forward`)"),
        Invalid("import torch\ndef route(ids):\n    g = ids.cuda()\n    return g.unique_consecutive()\n", None,
                message_contains="on a CUDA tensor"),
    )

    def report_site(self, node, site, context) -> None:
        self.report(node, f"{site.what} on {receiver_words(site)}{where(context)} copies the number of distinct "
                          "values to the host, which waits until the GPU stream drains; use a fixed-size form "
                          "(`torch.bincount(..., minlength=n)`) where one fits")

from __future__ import annotations

from h2dlint.facts import Placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import ANYWHERE, MASK, NAMED_HOT_FUNCTION, SyncReporter, receiver_words, where


class BooleanMaskIndex(SyncReporter, Rule):
    """
    ## What it does
    Finds reads `t[mask]` where `mask` is certainly a boolean tensor (a comparison of
    tensors, `.bool()`, `torch.isnan(...)`, `~m`, `m1 & m2`, or a name bound to one),
    and `torch.masked_select`, on tensors that are on the GPU (or, in `forward`
    or a step function, may be: a function hot by its own name, not one hot only
    because such a function calls it). Assignments `t[mask] = value` are not reported.

    ## Why is this bad?
    The size of `t[mask]` is the number of `True` elements, known only on the GPU:
    PyTorch runs `nonzero` on the mask and copies the count to the host, which waits
    until the GPU stream drains. `torch.cuda.set_sync_debug_mode("warn")` reports it.

    ## Example
    ```python
    total = logits[logits > threshold].sum()
    ```

    Use instead:
    ```python
    total = torch.where(logits > threshold, logits, 0).sum()
    ```

    ## Fix safety
    No fix is offered: the masked form has a different shape (the selected elements
    only), so a shape-preserving rewrite (`torch.where`, multiplying by the mask) is
    equivalent only for reductions that ignore the filler, which h2dlint cannot check.

    ## References
    - PyTorch: `torch.cuda.set_sync_debug_mode`; "Tensor Indexing API" (boolean masks are nonzero + gather)
    """

    code = "HDL302"
    name = "boolean-mask-index"
    summary = "`t[mask]` / `masked_select` on a GPU tensor copies the selected count to the host"
    kinds = frozenset({MASK})
    where = {Placement.GPU: ANYWHERE, Placement.UNKNOWN: NAMED_HOT_FUNCTION}
    MODEL_DEPENDENCIES = frozenset({"placement"})  # it reports no tensor of unknown placement in code hot only through calls
    prefilter = ("]", "masked_select")
    evidence = "gpu-or-hot"

    valid_examples = (
        Valid("import torch\ndef forward(x, m):\n    return x[m]\n"),
        Valid("import torch\ndef forward(x):\n    y = x.cuda()\n    y[y < 0] = 0\n    return y\n"),
        Valid("import torch\ndef forward(x_cpu):\n    return x_cpu[x_cpu > 0]\n"),
        Valid("import torch\ndef forward(items, i):\n    return items[i > 0]\n"),
        Valid("import torch\ndef forward(x):\n    return x[x.size(0) > 2]\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef forward(x):\n    y = x.cuda()\n    return y[y > 0].sum()\n",
                None, message_contains="boolean-mask indexing on a CUDA tensor (in `forward`)"),
        Invalid("import torch\ndef forward(h, mask):\n    for i in range(h.shape[0]):\n"
                "        row = h[i, mask[i].bool(), :]\n",
                None, message_contains="boolean-mask indexing"),
        Invalid("import torch\ndef forward(x, y):\n    keep = torch.isfinite(y) & (y > 0)\n    return x[keep]\n",
                None, message_contains="may be on the GPU"),
        Invalid("import torch\ndef step(x, m):\n    return torch.masked_select(x, m.bool())\n",
                None, message_contains="`torch.masked_select`"),
    )

    def report_site(self, node, site, context) -> None:
        self.report(node, f"{site.what} on {receiver_words(site)}{where(context)} copies the number of selected "
                          "elements to the host, which waits until the GPU stream drains; use `torch.where(mask, "
                          "x, 0)` or multiply by the mask where the shape may stay")

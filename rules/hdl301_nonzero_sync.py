from __future__ import annotations

from h2dlint.facts import Placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import ANYWHERE, NAMED_HOT_FUNCTION, NONZERO, SyncReporter, receiver_words, where


class NonzeroSync(SyncReporter, Rule):
    """
    ## What it does
    Finds `torch.nonzero(t)` / `t.nonzero()`, `torch.argwhere` and one-argument
    `torch.where(cond)` on a tensor that is on the GPU (or, in `forward` or a
    step function, may be: a function hot by its own name, not one hot only because
    such a function calls it). Not reported in constructors, at module level, or on
    host tensors.

    ## Why is this bad?
    The number of rows of the result depends on the data, and PyTorch must allocate the
    output before it launches the kernel that fills it: it counts the non-zero elements
    on the GPU and copies that count to the host, which waits until the GPU stream
    drains. `torch.cuda.set_sync_debug_mode("warn")` reports `nonzero` for this reason.
    One-argument `torch.where(c)` is `torch.nonzero(c, as_tuple=True)` and syncs too.

    ## Example
    ```python
    idx = torch.nonzero(mask).squeeze(1)
    ```

    Use instead:
    ```python
    # a static upper bound on the count; missing rows are filled with `fill_value`
    idx = torch.nonzero_static(mask, size=max_count, fill_value=-1).squeeze(1)
    ```
    or keep the mask and use it arithmetically (`torch.where(mask, a, b)`, `x * mask`).

    ## Fix safety
    No fix is offered: `nonzero_static` needs a bound the code must supply, and it pads
    the result, which changes what later code sees. Rewriting one-argument
    `torch.where(c)` as `torch.nonzero(c, as_tuple=True)` is equivalent but still syncs,
    so h2dlint does not offer it.

    ## References
    - PyTorch: `torch.nonzero_static`, `torch.cuda.set_sync_debug_mode`
    """

    code = "HDL301"
    name = "nonzero-sync"
    summary = "`nonzero()` / one-argument `torch.where` reads the result size back to the host"
    kinds = frozenset({NONZERO})
    where = {Placement.GPU: ANYWHERE, Placement.UNKNOWN: NAMED_HOT_FUNCTION}
    MODEL_DEPENDENCIES = frozenset({"placement"})  # it reports no tensor of unknown placement in code hot only through calls
    prefilter = ("nonzero(", "argwhere(", "where(")
    evidence = "gpu-or-hot"  # on a tensor of unknown placement, owner() asks for a hot function
    text_test_spares_only_parsing = True

    valid_examples = (
        Valid("import torch\ndef forward(x):\n    return torch.nonzero_static(x.cuda() > 0, size=4)\n"),
        Valid("import torch\ndef forward(x):\n    return torch.where(x > 0, x, 0)\n"),
        Valid("import torch\ndef forward(x_cpu):\n    return x_cpu.nonzero()\n"),
        Valid("import torch\ndef helper(x):\n    return x.nonzero()\n"),
        Valid("import torch\nmask = torch.ones(3, device='cuda') > 0\nidx = mask.nonzero()\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef forward(x):\n    return torch.nonzero(x)\n", None,
                message_contains="`torch.nonzero` on a tensor that may be on the GPU"),
        Invalid("import torch\ndef helper(x):\n    m = x.cuda() > 0\n    return m.nonzero()\n", None,
                message_contains="nonzero_static"),
        Invalid("import torch\ndef step(x):\n    return torch.where(x)\n", None,
                message_contains="one-argument `torch.where`"),
        Invalid("import torch\ndef forward(x):\n    return (\n        (x > 0)\n        .nonzero()\n    )\n", None,
                message_contains="`.nonzero()`"),
    )

    def report_site(self, node, site, context) -> None:
        self.report(node, f"{site.what} on {receiver_words(site)}{where(context)} copies the number of results "
                          "to the host, which waits until the GPU stream drains; use `torch.nonzero_static(..., "
                          "size=<bound>)` or keep working with the mask")

from __future__ import annotations


from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import READ, SyncReporter, where


class PossibleGpuValueRead(SyncReporter, Rule):
    """
    ## What it does
    The opt-in companion of HDL201: the same host reads (`.item()`, `.tolist()`,
    `.cpu()`, `.numpy()`, `.to("cpu")`, `int(t)` / `float(t)` / `bool(t)` on a tensor)
    in hot code (a loop, `forward`, a training or decoding step), on tensors whose
    placement h2dlint cannot tell: function parameters, attributes, results of calls
    into other modules. Off by default; select it with `--select HDL202` or
    `--extend-select HDL202`. HDL201's `any(t)` / `all(t)` / `max(t)` / `min(t)` have
    no counterpart here: on values of unknown placement these are mostly Python
    collections.

    ## Why is this bad?
    If the tensor is on a CUDA device, the host waits until every kernel queued on the
    stream has finished before it can read the value, in every iteration. If it is a
    host tensor the read is free, which is why this rule is off by default: on real
    code many of its findings are host tensors (see docs/precision/syncs.md).

    ## Example
    ```python
    def forward(self, x, lengths):
        for i in range(lengths.max().item()):
            ...
    ```

    Use instead:
    ```python
    def forward(self, x, lengths, max_length: int):  # the caller knows it on the host
        for i in range(max_length):
            ...
    ```

    ## Fix safety
    No fix is offered (see HDL201).

    ## References
    - PyTorch: `torch.cuda.set_sync_debug_mode`
    """

    code = "HDL202"
    name = "possible-gpu-value-read"
    summary = "`.item()` / `.tolist()` / `.cpu()` in hot code on a tensor that may be on the GPU"
    kinds = frozenset({READ})
    default_enabled = False
    prefilter = (".item(", ".tolist(", ".cpu(", ".numpy(", ".to(", "int(", "float(", "bool(")
    call_names = frozenset({"item", "tolist", "cpu", "numpy", "to", "int", "float", "bool"})  # anchors only: lines where these sites can be
    anchored = True

    valid_examples = (
        Valid("def forward(x):\n    return x.cuda().item()\n"),
        Valid("def helper(x):\n    return x.item()\n"),
        Valid("def forward(x_cpu):\n    return x_cpu.tolist()\n"),
        Valid("def forward(x):\n    return int(x)\n"),
        Valid("import torch\ndef forward(lens):\n    return any(torch.eq(lens, 0))\n"),
    )
    invalid_examples = (
        Invalid("def forward(self, lengths):\n    return lengths.max().item()\n",
                None, message_contains="may be on the GPU"),
        Invalid("import torch\ndef step(batch):\n    for x in batch:\n        n = int(torch.count_nonzero(x))\n",
                None, message_contains="in a loop"),
    )

    def report_site(self, node, site, context) -> None:
        self.report(node, f"{site.what} reads a tensor that may be on the GPU back to the host{where(context)}: "
                          "if it is a CUDA tensor, the host waits until the GPU stream drains")

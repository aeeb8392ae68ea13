from __future__ import annotations

from h2dlint.facts import Placement
from h2dlint.rule import Invalid, Rule, Valid, holds_one_of
from h2dlint.syncs import CONDITION, HOT, INT_ARGUMENT_TEXT, READ, SyncReporter, where


class PossibleGpuValueRead(SyncReporter, Rule):
    """
    ## What it does
    The opt-in companion of HDL201: the same host reads (`.item()`, `.tolist()`,
    `.cpu()`, `.numpy(force=True)`, `.to("cpu")`, `int(t)` / `float(t)` / `bool(t)` on a tensor)
    in hot code (a loop, `forward`, a training or decoding step), on tensors whose
    placement h2dlint cannot tell: function parameters, attributes, results of calls
    into other modules; and HDL201's implicit conversions (`torch.arange(t)`,
    `torch.zeros(t, n)`, `range(t)`, `[x] * t`, `.view(t)`, ...) where the argument is
    certainly a tensor (`lengths.max()` of a parameter annotated `torch.Tensor`,
    `grid[i][0]` of one, a torch op's result), never a plain name that may hold an int;
    and, as HDL203 does for CUDA tensors, a value that is certainly a tensor used as an
    `if`/`while`/`assert` condition (`if torch.all(top_ps == 1.0):`,
    `if n_valid == 0:` where `n_valid = mask.sum()` of a tensor `mask`), which Python
    reads with `bool(t)`.
    Off by default; select it with `--select HDL202` or
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
    summary = "`.item()` / `.tolist()` / `.cpu()` / `if t:` in hot code on a tensor that may be on the GPU"
    kinds = frozenset({READ, CONDITION})
    where = {Placement.UNKNOWN: HOT}
    default_enabled = False
    prefilter = (".item(", ".tolist(", ".cpu(", ".numpy(", ".to(", ".type(", "int(", "float(", "bool(", "alpha",
                 "value=", "if", "while", "assert")

    valid_examples = (
        Valid("def forward(x):\n    return x.cuda().item()\n"),
        Valid("def helper(x):\n    return x.item()\n"),
        Valid("def forward(x_cpu):\n    return x_cpu.tolist()\n"),
        Valid("def forward(x):\n    return int(x)\n"),
        Valid("import torch\ndef forward(lens):\n    return any(torch.eq(lens, 0))\n"),
        Valid("import torch\ndef forward(x, n):\n    return torch.arange(n), torch.zeros(x.size(0), 4), range(len(x))\n"),
        Valid("import torch\ndef forward(lengths):\n    return [0] * lengths.max()\n"),
        Valid("import torch\ndef forward(x: torch.Tensor):\n    return x.new_zeros(x.sparse_dim())\n"),
        Valid("import torch\ndef forward(x: torch.Tensor, n):\n    if x.shape[0] == 0 or x.numel() > n or n == 0:\n"
              "        return x\n"),
        Valid("import torch\ndef forward(x: torch.Tensor, y):\n    if x is None or y.any():\n        return x\n"),
        Valid("import numpy as np\ndef forward(xs):\n    if np.all(xs == 1.0):\n        return xs\n"),
        # numpy arrays, their slices and items, and host tensors computed with numbers: no GPU value read
        Valid("import numpy as np\ndef step(xs, n):\n    out = []\n    idxs = np.arange(len(xs))\n"
              "    for _ in range(n):\n        out.append(idxs[-2:].tolist())\n        idxs = idxs[:-2]\n"),
        Valid("import numpy as np\ndef step(scores, ids):\n    out = {}\n    preds = np.asarray(scores).astype(int)\n"
              "    for pred, i in zip(preds, ids):\n        out[i] = pred.item()\n"),
        Valid("import torch\ndef forward(cutoffs):\n    t = torch.as_tensor(cutoffs)\n    assert (t > 0).all()\n"),
        Valid("import torch\ndef step(device):\n    state = torch.cuda.get_rng_state(device)\n"
              "    return state[:8].view(torch.int64).item()\n"),
    )
    invalid_examples = (
        Invalid("def forward(self, lengths):\n    return lengths.max().item()\n",
                None, message_contains="may be on the GPU"),
        Invalid("import torch\ndef step(batch):\n    for x in batch:\n        n = int(torch.count_nonzero(x))\n",
                None, message_contains="in a loop"),
        Invalid("import torch\ndef forward(self, grid: torch.Tensor):\n    for i in range(grid.shape[0]):\n"
                "        t = torch.arange(grid[i][0])\n", None, message_contains="`torch.arange(<tensor>)`"),
        Invalid("import torch\ndef forward(self, x, lengths: torch.Tensor):\n"
                "    return x.split(lengths.max())\n", None, message_contains="`.split(<tensor>)`"),
        Invalid("import torch\ndef forward(self, top_ps):\n    if not torch.all(top_ps == 1.0):\n        return 1\n",
                None, message_contains="a tensor used as a condition"),
        Invalid("import torch\ndef step(mask: torch.Tensor):\n    n_valid = mask.sum()\n    if n_valid == 0:\n"
                "        return 0\n", None, message_contains="used as a condition (in `step`)"),
        Invalid("import torch\ndef forward(image_mask):\n    return image_mask.type(torch.BoolTensor)\n",
                None, message_contains="`.type(torch.BoolTensor)`"),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=None) -> bool:
        # An implicit conversion is reported on what is certainly a tensor, which takes torch to make.
        return cls.prefilter_matches(text) or "torch" in text and holds_one_of(text, INT_ARGUMENT_TEXT)

    def report_site(self, node, site, context) -> None:
        if site.kind == CONDITION:
            self.report(node, f"{site.what}{where(context)}: Python reads its value on the host with `bool()`; if "
                              "it is a CUDA tensor, the host waits until the GPU stream drains")
            return
        self.report(node, f"{site.what} reads a tensor that may be on the GPU back to the host{where(context)}: "
                          "if it is a CUDA tensor, the host waits until the GPU stream drains")

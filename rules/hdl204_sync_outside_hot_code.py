from __future__ import annotations

from h2dlint.facts import Placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import CONDITION, READ, UNKNOWN_HOTNESS, SyncReporter, receiver_words


class SyncOutsideHotCode(SyncReporter, Rule):
    """
    ## What it does
    The audit of the syncs the other rules leave out because h2dlint cannot tell how
    often they run: the reads of HDL201 (`.item()`, `.tolist()`, `.cpu()`,
    `.numpy(force=True)`, `.to("cpu")`, `int(t)`, a tensor passed where an int is
    needed) and the conditions of HDL203 (`if n_valid == 0:`) on tensors h2dlint places
    on the GPU (in the file or through the project model), in any function that is
    neither known to be hot (a loop, `forward`, a step function) nor known to run once
    (a constructor, weight loading, module level), and not only for logging or an
    error. Not in files that never name torch, nor in test modules (in a
    `test`/`tests`/`testing` folder, `test_*.py`, `*_test.py`, `conftest.py`), nor in
    functions whose name says set-up, I/O, printing, a test or a benchmark (a word such
    as `init`, `setup`, `save`, `export`, `dump`, `repr`, `print`, `test`, `bench`,
    `profile`) or that hand a value to the host (`tolist`, `numpy`, `__array__`,
    `state_dict`). Such functions are where per-step syncs hide: a metadata builder's
    `build()`, a loss helper, `compute_logits`.
    Not a tensor h2dlint cannot place, nor an explicit `torch.cuda.synchronize()`: in
    code not known to be hot, held-out trees showed those right about one time in eight
    (host tensors, timing brackets, one-off and start-up code). In hot code HDL202 and
    HDL305 report them.
    Off by default: select it with `--extend-select HDL204` (or `--select ALL`) when
    hunting the syncs a profile shows, and expect findings that run once (precision in
    docs/precision/early.md, "The audit narrowed").

    ## Why is this bad?
    Each of these makes the host wait until every kernel queued on the GPU stream has
    finished. If the function runs every step, the CPU can no longer queue work ahead
    and the GPU idles while it catches up; h2dlint cannot see the callers, so it lists
    the place and says why it may cost.

    ## Example
    ```python
    def build(self, common_attn_metadata):
        has_initial_states = common_attn_metadata.context_lens_gpu > 0
        prep_initial_states = torch.any(has_initial_states).item()
    ```

    Use instead:
    ```python
    def build(self, common_attn_metadata):
        # decide on the host copy the scheduler already has
        prep_initial_states = bool((common_attn_metadata.context_lens_cpu > 0).any())
    ```

    ## Fix safety
    No fix is offered (see HDL201).

    ## References
    - PyTorch: `torch.cuda.set_sync_debug_mode`, which reports these at run time
    """

    code = "HDL204"
    name = "sync-outside-hot-code"
    summary = "`.item()` / `if t:` on a CUDA tensor in a function that may run every step (an audit)"
    kinds = frozenset({READ, CONDITION})
    where = {Placement.GPU: UNKNOWN_HOTNESS}
    # Code hot through calls is the other rules' place; a tensor placed on the GPU by another file is its own.
    MODEL_DEPENDENCIES = frozenset({"placement"})
    default_enabled = False
    prefilter = ("torch",)
    evidence = "gpu"

    valid_examples = (
        Valid("import torch\nclass M:\n    def __init__(self, x):\n        self.n = x.cuda().sum().item()\n"),
        Valid("import torch\ndef report(x):\n    print(x.cuda().sum().item())\n"),
        Valid("import torch\ndef helper(x_cpu, n):\n    if n == 0:\n        return x_cpu.tolist()\n"),
        Valid("import torch\ndef forward(x):\n    return x.cuda().sum().item()\n"),
        Valid("import torch\ndef helper(xs):\n    t = torch.tensor(xs)\n    return t.sum().item()\n"),
        Valid("import torch\nTOTAL = torch.ones(3, device='cuda').sum().item()\n"),
        # A tensor h2dlint cannot place, in code it cannot tell hot: too often a host tensor or one-off code.
        Valid("import torch\ndef build(self, lens):\n    return torch.any(lens > 0).item()\n"),
        Valid("import torch\ndef average_tensor(self, tensor):\n    torch.cuda.synchronize()\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef build(self, metadata):\n    return torch.any(metadata.context_lens_gpu > 0).item()\n",
                None, message_contains="`.item()` reads a CUDA tensor back to the host in `build`"),
        Invalid("import torch\ndef chunked_nll(logits, labels):\n    n_valid = (labels.cuda() != -100).sum()\n"
                "    if n_valid == 0:\n        return logits.sum() * 0.0\n",
                None, message_contains="used as a condition in `chunked_nll` makes Python read it on the host"),
        Invalid("import torch\ndef mean_length(lengths):\n    lens = torch.tensor(lengths, device='cuda')\n"
                "    return lens.float().mean().item()\n", None, message_contains="reads a CUDA tensor"),
    )

    def report_site(self, node, site, context) -> None:
        where = f"in `{context.function}`"
        if site.kind == CONDITION:
            what = f"{site.what} {where} makes Python read it on the host"
        else:
            what = f"{site.what} reads {receiver_words(site)} back to the host {where}"
        self.report(node, f"{what}; h2dlint cannot tell how often `{context.function}` runs: if it runs every step, "
                          "the host waits for the GPU stream to drain each time")

from __future__ import annotations

from h2dlint.facts import Placement
from h2dlint.rule import Invalid, Rule, Valid, holds_one_of
from h2dlint.syncs import ACCUMULATE, ANYWHERE, KIND_CALL_NAMES, UNKNOWN_HOTNESS, SyncReporter, where


class GpuValueAccumulatedOnHost(SyncReporter, Rule):
    """
    ## What it does
    Finds a tensor's value read on the host only to be added to a running total:
    `total += loss.item()`, `self.losses += loss.mean().item()`,
    `loss_sum += loss.item() * batch_size`, `n += int(torch.count_nonzero(mask))` (the value
    reaches the `+=` through arithmetic only, not in a list or a string), where the total
    carries over from one pass to the next: the statement is in a loop or in hot code,
    or the total outlives the call (an attribute, an item such as `metrics[k]`, a
    `nonlocal` or `global` name), or the total is itself a CUDA tensor (the value
    then goes to the host and back). It reports tensors that may be on the GPU;
    h2dlint need not know where the tensor lives, nor whether the function is hot:
    adding a value up per step is what makes the read repeat. Reads of tensors known
    to be on a CUDA device in hot code are HDL201's. Some such totals add up host
    tensors (image grid sizes, a planner's costs, a driver's rewards on the CPU): on
    held-out trees it is about as often right as the other default rules.

    As for every sync rule, nothing is reported in constructors, at module level, in
    tests, in logging calls, or for tensors known to be on the host (`x_cpu`, a
    tensor made without a device).

    ## Why is this bad?
    Each `.item()` waits until every kernel queued on the GPU stream has run, so the
    host can no longer run ahead of the GPU: a loss, a token count or a metric summed
    this way costs one stall per micro-batch or per step. Summed on the device, it is
    read once, when the total is needed.

    ## Example
    ```python
    total_loss = 0.0
    for batch in batches:
        loss = model(batch)
        loss.backward()
        total_loss += loss.item()
    ```

    Use instead:
    ```python
    total_loss = torch.zeros((), device="cuda")
    for batch in batches:
        loss = model(batch)
        loss.backward()
        total_loss += loss.detach()
    print(total_loss.item())  # one read, after the loop
    ```

    ## Fix safety
    No fix is offered: where the total is read, and whether the host needs each value
    (early stopping on a NaN, a per-step log), is the author's decision. Where the
    tensor is on the host, or the read is intended, `# noqa: HDL205` says so.

    ## References
    - PyTorch: "Performance Tuning Guide", avoid unnecessary CPU-GPU synchronization
    - PyTorch: `torch.cuda.set_sync_debug_mode` ("warn" reports each `.item()`)
    """

    code = "HDL205"
    name = "gpu-value-accumulated-on-host"
    summary = "`total += t.item()` per step reads a tensor that may be on the GPU to add it up on the host"
    kinds = frozenset({ACCUMULATE})
    default_enabled = True  # as precise as the default rules on held-out trees (docs/precision.md)
    # On the GPU in hot code, the site is HDL201's; elsewhere (hot or not) a total that carries over repeats.
    where = {Placement.UNKNOWN: ANYWHERE, Placement.GPU: UNKNOWN_HOTNESS}
    prefilter = ("+=", "-=")

    valid_examples = (
        # A local total in a function that runs once per call, outside any loop.
        Valid("def report(loss):\n    total = 0.0\n    total += loss.item()\n    return total\n"),
        # Known host tensors, and the total kept on the device.
        Valid("import torch\ndef train(batches):\n    total = 0.0\n    for b in batches:\n"
              "        total += torch.tensor(b).sum().item()\n"),
        Valid("def train(model, batches, total):\n    for b in batches:\n        total += model(b).detach()\n"),
        Valid("def train(batches):\n    total = 0\n    for b in batches:\n        total += len(b)\n"),
        # Values put in a list or a string are not added up (the reads are HDL202's, opt-in).
        Valid("def rle(masks):\n    counts = []\n    for m in masks:\n        counts += [m.sum().item()]\n"),
        Valid("def rle(runs):\n    counts = []\n    for r in runs:\n        counts += r.tolist()\n"),
        Valid("def log(stats):\n    line = ''\n    for name, s in stats:\n        line += f'{name}={s.item()} '\n"),
        # A read that is not added: HDL202's (opt-in), not this rule's.
        Valid("def train(model, batches):\n    for b in batches:\n        print(model(b).item())\n"),
        # In a constructor, and in a comprehension (which adds nothing across passes).
        Valid("class M:\n    def __init__(self, xs):\n        self.n = 0\n        for x in xs:\n"
              "            self.n += x.item()\n"),
    )
    invalid_examples = (
        Invalid("def train(model, batches):\n    total = 0.0\n    for b in batches:\n"
                "        total += model(b).item()\n", None, message_contains="added to a running total on the host"),
        Invalid("class Engine:\n    def train_batch(self, loss):\n        self.losses += loss.mean().item()\n",
                None, message_contains="`.item()`"),
        Invalid("def evaluate(model, batches):\n    loss_sum = 0\n    for b in batches:\n"
                "        loss_sum += model(b).item() * len(b)\n", None, message_contains="in a loop"),
        Invalid("def schedule(step, batches):\n    total = 0\n    def helper(b):\n        nonlocal total\n"
                "        total += step(b).item()\n    for b in batches:\n        helper(b)\n", None),
        Invalid("import torch\ndef run(step, n):\n    total = torch.zeros([], device='cuda')\n"
                "    total += step(n).item()\n    return total\n", None, message_contains="the total is a CUDA tensor"),
        Invalid("import torch\ndef count(masks):\n    n = 0\n    for m in masks:\n"
                "        n += int(torch.count_nonzero(m))\n", None, message_contains="`int(<tensor>)`"),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=None) -> bool:
        # Both the running total and a read it may add up (`.item()`, `int()`, `float()`, `bool()`): `+=` alone is
        # in most files.
        return cls.prefilter_matches(text) and holds_one_of(text, _ADDED_READS)

    def report_site(self, node, site, context) -> None:
        total = "the total is a CUDA tensor, so the value goes to the host and back; " if site.total_on_gpu else ""
        self.report(node, f"{site.what} reads a tensor that may be on the GPU, added to a running total on the "
                          f"host{where(context)}: {total}if it is a CUDA tensor, the host waits for the GPU at every "
                          "addition; add it up on the device and read the total once")


# The calls a read added to a total is written with: `.item(`, `int(`, `float(`, `bool(`.
_ADDED_READS = tuple(sorted(f"{name}(" for name in KIND_CALL_NAMES[ACCUMULATE]))

from __future__ import annotations

from h2dlint.facts import Placement
from h2dlint.gaps import TokensApart
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import ALL_KINDS, GRAPH_CAPTURE, SyncReporter

# `graph` called or imported under another name; the word's start is checked apart (a leading `\b` would make
# the search many times slower: it could no longer look for the literal first).
_GRAPH_CALLED_OR_RENAMED = TokensApart(r"graph\b", r"\(|as\b", gap=")")


class SyncUnderGraphCapture(SyncReporter, Rule):
    """
    ## What it does
    Finds every pattern of HDL201-HDL203 and HDL301-HDL305 (host reads of tensor values,
    tensors as conditions, data-dependent shapes, `synchronize()` calls) inside a
    `with torch.cuda.graph(...):` block, on any tensor not known to be on the host. An
    error, not a slowdown: these findings get this code instead of their usual one, so
    `--select HDL501` (or `--select HDL5`) shows exactly the capture errors, and
    `--ignore HDL501` hides them.

    ## Why is this bad?
    During CUDA graph capture no kernel runs: work is only recorded. A host read of a
    tensor's value, a data-dependent output size (`nonzero`, `t[mask]`, `unique`,
    `repeat_interleave` without `output_size`) or a synchronize needs the GPU to have
    run, so CUDA rejects it ("operation not permitted when stream is capturing") and the
    capture fails; copies from non-pinned host memory are errors under capture too.
    Code that works eagerly breaks once someone enables CUDA graphs.

    ## Example
    ```python
    with torch.cuda.graph(g):
        n = int(lengths.sum())
        out = static_x[:n] * 2
    ```

    Use instead:
    ```python
    n = int(lengths.sum())  # before capture; a captured graph has static shapes
    with torch.cuda.graph(g):
        out = static_x[:n] * 2
    ```

    ## Fix safety
    No fix is offered: the value or size must be known before capture, which changes
    the code's structure.

    ## References
    - PyTorch: "CUDA Graphs" (constraints: no CPU-GPU synchronization under capture)
    - CUDA Programming Guide: "Prohibited and Unhandled Operations" during stream capture
    """

    code = "HDL501"
    name = "sync-under-graph-capture"
    summary = "a host sync inside `torch.cuda.graph(...)` capture is an error"
    kinds = ALL_KINDS
    where = {Placement.GPU: GRAPH_CAPTURE, Placement.UNKNOWN: GRAPH_CAPTURE}
    MODEL_DEPENDENCIES = frozenset()  # graph capture is seen in the file itself
    prefilter = ("graph",)

    @classmethod
    def may_apply(cls, text: str, settings, gate=None) -> bool:
        """A capture is `with <name>(...)` where the name resolves to `torch.cuda.graph`: so the word `graph` is
        called (`torch.cuda.graph(`, `graphs.graph (`, `(torch.cuda.graph)(`, split over lines or comments) or
        imported under another name (`graph as capture`). `cuda_graph(` and `capture_graph(` are not."""
        return cls.prefilter_matches(text) and any(not _is_word_character(text[start - 1:start])
                                                   for start, _ in _GRAPH_CALLED_OR_RENAMED.spans(text))

    valid_examples = (
        Valid("import torch\ndef capture(g, x):\n    with torch.cuda.graph(g):\n        y = x * 2\n"
              "    return y.item()\n"),
        Valid("import torch\ndef capture(g, x_cpu):\n    with torch.cuda.graph(g):\n        n = x_cpu.item()\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef capture(g, x):\n    with torch.cuda.graph(g):\n        n = x.sum().item()\n",
                None, message_contains="error under CUDA graph capture: `.item()`"),
        Invalid("import torch\ndef capture(g, x):\n    with torch.cuda.graph(g):\n"
                "        torch.cuda.synchronize()\n", None, message_contains="`torch.cuda.synchronize()`"),
        Invalid("import torch\ndef capture(g, x):\n    with torch.cuda.graph(g):\n        y = torch.nonzero(x)\n",
                None, message_contains="capture fails"),
    )

    def report_site(self, node, site, context) -> None:
        self.report(node, f"error under CUDA graph capture: {site.what} needs the GPU to have run, which it "
                          "does not while a graph is being captured, so the capture fails; do it before capture "
                          "or keep it on the device")


def _is_word_character(character: str) -> bool:
    """What `\\w` matches (False for the empty text before a file's start)."""
    return character.isalnum() or character == "_"

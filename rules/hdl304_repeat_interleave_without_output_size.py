from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from h2dlint.facts import Data, FileFacts, Placement
from h2dlint.model import Applicability, Fix
from h2dlint.placement import classify_data
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import ANYWHERE, HOT, REPEAT, SyncReporter, receiver_words, where
from h2dlint.syntax import dotted_name

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst


class RepeatInterleaveWithoutOutputSize(SyncReporter, Rule):
    """
    ## What it does
    Finds `torch.repeat_interleave(x, repeats)` and `x.repeat_interleave(repeats)` where
    `repeats` is a tensor (not an int) and no `output_size=` is given, outside
    constructors and module-level code. A CUDA tensor (see HDL201 for what counts) is
    reported wherever the code may run more than once: not in a function nothing in the
    project calls, unless that function is hot (see HDL101). A tensor of unknown placement
    is reported only in hot code (a loop, `forward`, a step function, or code they call):
    outside hot code such tensors were mostly host-side preprocessing, featurization for
    example (see docs/precision.md). A tensor known to be on the host is never reported.

    ## Why is this bad?
    The output has `repeats.sum()` elements. Without `output_size`, PyTorch computes that
    sum on the GPU and copies it to the host to allocate the output: the host waits
    until the GPU stream drains. With `output_size=` the host already knows the size and
    nothing is copied back. `torch.cuda.set_sync_debug_mode("warn")` reports
    `repeat_interleave` without `output_size` for this reason. Serving engines build the
    repeats tensor from host-side lengths, so the total is usually one `sum()` away;
    sglang's logits processor (0.5.11, `_expand_metadata_for_logprobs`) is an example.

    ## Example
    ```python
    pruned_lens = torch.tensor(meta.pruned_lens_cpu, device=device)
    temperature = torch.repeat_interleave(meta.temperature, pruned_lens)
    ```

    Use instead:
    ```python
    pruned_lens = torch.tensor(meta.pruned_lens_cpu, device=device)
    temperature = torch.repeat_interleave(
        meta.temperature, pruned_lens, output_size=sum(meta.pruned_lens_cpu)
    )
    ```

    ## Fix safety
    A fix is offered only where the repeats tensor is built in this function from host
    data (`torch.tensor(lengths, ...)`, `torch.as_tensor(lengths, ...)`, possibly
    followed by `.to(...)` / `.cuda()`) given as a name or attribute: it adds
    `output_size=sum(lengths)`. It is always **unsafe**: it is right only if `lengths`
    still holds the values the tensor was built from (nothing mutated or rebound it in
    between) and `sum(lengths)` is an int. On CUDA a wrong `output_size` is not checked
    and gives wrong results rather than an error. Elsewhere no fix is offered: the
    message says what to pass.

    ## References
    - PyTorch: `torch.repeat_interleave` (`output_size`: "to avoid stream synchronization")
    - PyTorch: `torch.cuda.set_sync_debug_mode`
    """

    code = "HDL304"
    name = "repeat-interleave-without-output-size"
    summary = "`repeat_interleave` with tensor repeats and no `output_size` copies the total to the host"
    kinds = frozenset({REPEAT})
    where = {Placement.GPU: ANYWHERE, Placement.UNKNOWN: HOT}
    prefilter = ("repeat_interleave(",)
    text_test_spares_only_parsing = True

    valid_examples = (
        Valid("import torch\ndef forward(x):\n    return x.repeat_interleave(2, dim=0)\n"),
        Valid("import torch\ndef forward(x, n_rep):\n    return torch.repeat_interleave(x, n_rep, dim=1)\n"),
        Valid("import torch\ndef f(x, lens, n):\n    r = torch.tensor(lens, device='cuda')\n"
              "    return torch.repeat_interleave(x, r, output_size=n)\n"),
        Valid("import torch\ndef f(x, lens):\n    r = torch.tensor(lens)\n    return x.repeat_interleave(r)\n"),
        Valid("import torch\nr = torch.tensor([1, 2], device='cuda')\ny = torch.repeat_interleave(r)\n"),
        # Unknown placement, in code nothing shows to be hot: host-side preprocessing as often as not.
        Valid("import torch\ndef expand(x, lens):\n    return x.repeat_interleave(lens.long(), dim=0)\n"
              "def featurize(x, lens):\n    return expand(x, lens)\n"),
    )
    invalid_examples = (
        Invalid(
            "import torch\ndef forward(meta, device):\n"
            "    pruned_lens = torch.tensor(meta.pruned_lens_cpu, device=device)\n"
            "    return torch.repeat_interleave(meta.temperature, pruned_lens)\n",
            "import torch\ndef forward(meta, device):\n"
            "    pruned_lens = torch.tensor(meta.pruned_lens_cpu, device=device)\n"
            "    return torch.repeat_interleave(meta.temperature, pruned_lens, output_size=sum(meta.pruned_lens_cpu))\n",
            unsafe=True, message_contains="copies the total of the repeats to the host",
        ),
        Invalid(
            "import torch\ndef expand(x, lens_cpu):\n    r = torch.tensor(lens_cpu).cuda()\n"
            "    return x.repeat_interleave(\n        r,\n        dim=0,\n    )\n",
            "import torch\ndef expand(x, lens_cpu):\n    r = torch.tensor(lens_cpu).cuda()\n"
            "    return x.repeat_interleave(\n        r,\n        dim=0,\n        output_size=sum(lens_cpu),\n    )\n",
            unsafe=True,
        ),
        Invalid("import torch\ndef forward(x, seq_lens):\n"
                "    return torch.repeat_interleave(x, seq_lens.to(torch.int64))\n",
                None, message_contains="pass `output_size=`"),
        Invalid("import torch\ndef positions(counts):\n    c = counts.cuda()\n    return torch.repeat_interleave(c)\n",
                None, message_contains="repeats are a CUDA tensor"),
        # Unknown placement, in a loop.
        Invalid("import torch\ndef expand(chunks, lens):\n"
                "    return [x.repeat_interleave(lens.long(), dim=0) for x in chunks]\n"
                "def decode(batches, lens):\n    for chunks in batches:\n        yield expand(chunks, lens)\n"
                "def run(batches, lens):\n    for x in batches:\n        yield x.repeat_interleave(lens.long())\n",
                None, message_contains="in a loop"),
    )

    def report_site(self, node, site, context) -> None:
        message = (f"{site.what} without `output_size`{where(context)}, whose repeats are {receiver_words(site)}, "
                   "copies the total of the repeats to the host, which waits until the GPU stream drains")
        lengths = _host_lengths(self.context.facts, site.repeats)
        fix = self._fix(node, lengths) if lengths is not None else None
        if fix is None:
            message += "; pass `output_size=` the total when the host knows it (e.g. the sum of the host-side lengths)"
        self.report(node, message, fix)

    def _fix(self, node: cst.Call, lengths: str) -> Fix | None:
        facts = self.context.facts
        start, _ = self.position(node)
        if facts.bindings_at("sum", start.line) is not None or "sum" in facts.aliases:
            return None
        new_arg = cst.Arg(cst.parse_expression(f"sum({lengths})"), keyword=cst.Name("output_size"),
                          equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                whitespace_after=cst.SimpleWhitespace("")))
        edit = self.context.replace_node(node, node.with_changes(args=_append_arg(node.args, new_arg)), self)
        if edit is None:
            return None
        return Fix(edits=(edit,), applicability=Applicability.UNSAFE,
                   message=f"Pass `output_size=sum({lengths})` (unsafe: right only if `{lengths}` still holds the "
                           "lengths the repeats tensor was built from)")


def _host_lengths(facts: FileFacts, repeats: ast.expr | None, depth: int = 0) -> str | None:
    """The code of the host-side lengths the repeats tensor was built from, when this file shows them."""
    if repeats is None or depth > 2:
        return None
    if isinstance(repeats, ast.Name):
        values = facts.bindings_at(repeats.id, repeats.lineno)
        if not values or len(values) != 1 or values[0] is None:
            return None
        return _host_lengths(facts, values[0], depth + 1)
    call = repeats
    while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cuda") \
            and not facts.qualify(dotted_name(call.func)):
        call = call.func.value
    if not isinstance(call, ast.Call) or facts.qualify(dotted_name(call.func)) not in ("torch.tensor",
                                                                                       "torch.as_tensor"):
        return None
    if not call.args or any(kw.arg == "dtype" and "float" in (dotted_name(kw.value) or "") for kw in call.keywords):
        return None
    data = call.args[0]
    if dotted_name(data) is None or classify_data(facts, data, data.lineno) not in (Data.HOST, Data.LIKELY_HOST):
        return None
    return dotted_name(data)


def _append_arg(args, new_arg: cst.Arg) -> list[cst.Arg]:
    """`args` plus `new_arg` at the end, laid out like the others (same separator, same trailing comma)."""
    args = list(args)
    last = args[-1]
    separator = next((arg.comma for arg in args[:-1] if isinstance(arg.comma, cst.Comma)),
                     cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return [*args[:-1], last.with_changes(comma=separator),
            new_arg.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)]

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from h2dlint.copies import (
    PINNABLE_FACTORIES,
    dotted,
    enclosing_function,
    is_literal,
    keywords_of,
    pin_guard,
    torch_name,
)
from h2dlint.facts import Device
from h2dlint.model import Applicability, Fix
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syntax import dotted_name

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst


class UnguardedPinMemory(Rule):
    """
    ## What it does
    Finds a literal `pin_memory=True` in a torch factory call (`torch.empty(n, pin_memory=True)`)
    and `.pin_memory()` calls in a function that shows no sign of requiring CUDA: no
    `torch.cuda.is_available()` (or the configured pin-memory helper), no other
    `torch.cuda.*` call, no `.cuda()`, no `"cuda"` device, no `.is_cuda` test.

    ## Why is this bad?
    Pinned memory needs an accelerator: on a PyTorch build without CUDA,
    `pin_memory=True` and `.pin_memory()` raise `RuntimeError: pin_memory=True requires
    a CUDA or other accelerator backend`. Code that otherwise runs on the CPU (tests,
    CPU inference, CI machines) then fails only because of a performance hint.

    ## Example
    ```python
    staging = torch.empty(n, dtype=torch.int64, pin_memory=True)
    ```

    Use instead:
    ```python
    staging = torch.empty(n, dtype=torch.int64, pin_memory=torch.cuda.is_available())
    ```

    ## Fix safety
    The fix replaces the literal `True` by the guard: the file's pin-memory helper
    (by default `is_pin_memory_available`) if it has one, else
    `torch.cuda.is_available()`. It is **safe**: with CUDA the memory is pinned as
    before; without it the call now works instead of raising, and the values are the
    same (pinning changes no value). On a machine with another accelerator and no CUDA,
    `torch.cuda.is_available()` is False and the memory is no longer pinned: slower,
    same results. `.pin_memory()` calls get no fix (`x.pin_memory() if ... else x`
    would evaluate `x` twice).

    This rule is opt-in: most code that pins memory only runs with a GPU, and whether
    a function may run without CUDA is often decided far from it.

    ## References
    - h2dlint reference "What makes PyTorch code stall the GPU stream": hazard 1
      (`pin_memory=True` raises on a CPU-only build, torch 2.13.0+cpu; projects replace
      the literal `True` with a guard).
    """

    code = "HDL403"
    name = "unguarded-pin-memory"
    summary = "literal `pin_memory=True` / `.pin_memory()` raises on a build without CUDA; use a guard"
    call_names = frozenset({*PINNABLE_FACTORIES, "pin_memory"})
    prefilter = re.compile(r"pin_memory")
    default_enabled = False

    valid_examples = (
        Valid("import torch\ndef f(n):\n    return torch.empty(n, pin_memory=torch.cuda.is_available())\n"),
        Valid("import torch\ndef f(n):\n    if torch.cuda.is_available():\n"
              "        return torch.empty(n, pin_memory=True)\n"),
        Valid("import torch\ndef f(n):\n    b = torch.empty(n, pin_memory=True)\n    return b.cuda(non_blocking=True)\n"),
        Valid("import torch\ndef f(n):\n    return torch.empty(n, pin_memory=False)\n"),
        Valid("import torch\ndef f(loader):\n    return torch.utils.data.DataLoader(loader, pin_memory=True)\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef f(n):\n    return torch.empty(n, pin_memory=True)\n",
                "import torch\ndef f(n):\n    return torch.empty(n, pin_memory=torch.cuda.is_available())\n",
                message_contains="raises"),
        Invalid("from torch import zeros\nfrom vllm.utils import is_pin_memory_available\n"
                "buf = zeros(4, pin_memory=True)\n",
                "from torch import zeros\nfrom vllm.utils import is_pin_memory_available\n"
                "buf = zeros(4, pin_memory=is_pin_memory_available())\n"),
        Invalid("import torch\ndef f(x):\n    return x.pin_memory()\n", None),
    )

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.context.facts
        func = node.func
        method = isinstance(func, cst.Attribute) and func.attr.value == "pin_memory" and not node.args
        pin = None
        if not method:
            qualified = facts.qualify(dotted(func)) or ""
            if not qualified.startswith("torch.") or qualified.split(".", 1)[1] not in PINNABLE_FACTORIES:
                return
            pin = keywords_of(node).get("pin_memory")
            if pin is None or not is_literal(pin.value, "True"):
                return
        start, end = self.position(node)
        site = facts.site_at(start, end)
        if site is None or self._requires_cuda(enclosing_function(facts, site.node)):
            return
        what = "`.pin_memory()`" if method else "`pin_memory=True`"
        self.report(node, f"{what} raises on a PyTorch build without CUDA, and nothing in this function shows "
                          "it runs only with CUDA: guard it with `torch.cuda.is_available()`",
                    None if method else self._fix(node, pin))

    def _requires_cuda(self, function: ast.AST | None) -> bool:
        facts = self.context.facts
        helpers = set(self.context.settings.pin_memory_helpers)
        for node in ast.walk(function) if function is not None else ():
            if isinstance(node, ast.Attribute) and node.attr in ("is_available", "is_cuda", "cuda"):
                return True
            if isinstance(node, ast.Name) and node.id in helpers:
                return True
            if isinstance(node, ast.Attribute) and (facts.qualify(dotted_name(node)) or "").startswith("torch.cuda."):
                return True
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("cuda"):
                return True
        return False

    def _fix(self, node: cst.Call, pin: cst.Arg) -> Fix | None:
        torch_local, extra_edits = torch_name(self)
        if torch_local is None:
            return None
        guard = pin_guard(self, Device.UNKNOWN, torch_local)
        if dotted(guard.func) != f"{torch_local}.cuda.is_available":
            extra_edits = []  # a helper the file already has: no torch import needed
        replacement = node.with_changes(args=[arg.with_changes(value=guard) if arg is pin else arg
                                              for arg in node.args])
        edit = self.context.replace_node(node, replacement, self)
        if edit is None:
            return None
        return Fix(edits=tuple(sorted([edit, *extra_edits])), applicability=Applicability.SAFE,
                   message="Pin only where pinned memory is available")

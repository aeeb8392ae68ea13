from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from h2dlint.copies import (
    COPY_METHODS,
    copy_device,
    copy_of,
    does_not_repeat,
    factory_data,
    fresh_host_factory,
    host_factory,
    is_literal,
    makes_no_elements,
    may_run_under_default_device,
    no_pinned_rewrite,
    pin_guard,
    pinned,
    shown,
    to_ast,
    torch_name,
    unpinnable_data,
    where_hot,
    with_pin_memory,
)
from h2dlint.facts import Device
from h2dlint.model import Applicability, Fix
from h2dlint.rule import Invalid, Rule, Valid

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst


class FalseAsyncCopy(Rule):
    """
    ## What it does
    Finds `.to(<device>, non_blocking=True)` and `.cuda(non_blocking=True)` whose source
    is pageable host memory: a fresh torch factory without `pin_memory=`
    (`torch.tensor(x)`, `torch.zeros(n)`; not `torch.tensor(t)` of a tensor that may be
    elsewhere, which stays where `t` is), `torch.from_numpy(a)`, or a local name bound
    only to such a call. A factory written with no elements (`torch.zeros(0)`,
    `torch.tensor([])`) is not reported: an empty copy never reaches the device; nor a
    name holding a tensor the file page-locks where it lies (`torch.cuda.cudart().
    cudaHostRegister(x.data_ptr(), size, 0)`, also for each name of a `for x in [a, b]:`
    around it), where the binding registered is the one the copy reads. Not in code
    that runs once, once in a while, in a test, in a function nothing in the project
    calls, in a block no call takes or only on an empty input (see HDL101): staging a
    copy made once costs once. Unlike HDL101-103 and HDL105, code not known to run
    every step is reported: a copy written `non_blocking=True` is one its author means
    to overlap with the GPU's work, which per-step code wants.

    ## Why is this bad?
    `non_blocking=True` makes a copy truly asynchronous only from pinned memory. From
    pageable memory CUDA first stages the data through a pinned buffer and may
    synchronize with the host: the copy looks async but is not reliably so
    ("false async"). Nsight Systems flags it as "async memcpy with pageable memory".

    ## Example
    ```python
    ids = torch.tensor(ids_list).to(device, non_blocking=True)
    ```

    Use instead:
    ```python
    ids = torch.tensor(ids_list, pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)
    ```

    ## Fix safety
    The fix adds `pin_memory=<guard>` to the source factory, where the source is a
    fresh factory call written inline. The guard is a literal `True` when the target
    is certainly CUDA (`.cuda()`, `"cuda"`, ...), else the file's pin-memory helper or
    `torch.cuda.is_available()`: `pin_memory=True` raises on a build without CUDA.
    The pinned source is a temporary, so nothing can write to it during the copy.
    The fix is **unsafe** when `torch.tensor`'s data is of unknown kind: it may be a
    tensor or a numpy array, and PyTorch refuses to pin those ("Can't pin tensor
    constructed from a variable" / "... from numpy"), on a CUDA machine too.

    No rewrite is offered (the copy is still reported, with the reason) when the
    data is a numpy array where it is made, when the result is read back to the
    host at once (`.item()`, `.tolist()`, ... in the same or one of the next two
    statements), or when the code runs once (a constructor or a loading function).
    A source made under a default-device context this file sets up
    (`torch.set_default_device`, `with torch.device(...)`) is not reported: the
    factory allocates on that device, and pinning it raises on CUDA.

    No fix is offered for `torch.from_numpy(a)` (it cannot allocate pinned memory;
    `.pin_memory()` is an extra host copy) or for a source bound to a name on another
    line: keep a pinned staging buffer there.

    ## References
    - h2dlint reference "What makes PyTorch code stall the GPU stream": false async
      (CUDA stages pageable memory and may synchronize; a pinned source makes the copy
      truly async), hazard 1 (`pin_memory=True` raises without CUDA).
    - CUDA Runtime API: "API synchronization behavior".
    - Nsight Systems expert rule `cuda_memcpy_async`.
    """

    code = "HDL104"
    name = "false-async-copy"
    summary = "`non_blocking=True` copy from pageable host memory is not truly async; pin the source"
    call_names = COPY_METHODS
    prefilter = ("non_blocking",)
    text_test_spares_only_parsing = True

    valid_examples = (
        # `torch.tensor` of a tensor copies it where it is: not a fresh host tensor, bound to a name or not.
        Valid("import torch\ndef count(mask: torch.Tensor, device, n):\n    for _ in range(n):\n"
              "        c = torch.tensor(mask.sum())\n        yield c.to(device, non_blocking=True)\n"),
        Valid("import torch\ndef forward(device):\n    return torch.zeros(0, dtype=torch.int64).to(device, non_blocking=True)\n"),
        Valid("import torch\ndef forward(ids, d):\n    return torch.tensor(ids, pin_memory=True).to(d, non_blocking=True)\n"),
        Valid("import torch\ndef forward(x, d):\n    return x.to(d, non_blocking=True)\n"),
        # Made once, by a constructor.
        Valid("import torch\nclass Loss(torch.nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
              "        self.mask = torch.zeros(n).cuda(non_blocking=True)\n"),
        Valid("import torch\ndef forward(ids, d):\n    return torch.tensor(ids).to(d)\n"),
        Valid("import torch\ndef forward(ids):\n    return torch.tensor(ids).to('cpu', non_blocking=True)\n"),
        Valid("import torch\ndef forward(n, d):\n    b = torch.empty(n, pin_memory=True)\n    return b.to(d, non_blocking=True)\n"),
        # Page-locked where it lies (cleanrl's rollout buffers), directly or through a loop over the buffers.
        Valid("import torch\nobs = torch.zeros(8, 4)\ndone = torch.zeros(8)\ncudart = torch.cuda.cudart()\n"
              "for x in [obs, done]:\n    cudart.cudaHostRegister(x.data_ptr(), x.numel() * x.element_size(), 0)\n"
              "for update in range(10):\n    o = obs.to('cuda', non_blocking=True)\n"
              "    d = done.to('cuda', non_blocking=True)\n"),
    )
    invalid_examples = (
        # A name bound again after its tensor was page-locked holds a new, pageable tensor.
        Invalid("import torch\ndef f(steps):\n    x = torch.zeros(4)\n"
                "    torch.cuda.cudart().cudaHostRegister(x.data_ptr(), 16, 0)\n    x = torch.zeros(4)\n"
                "    for s in range(steps):\n        a = x.to('cuda', non_blocking=True)\n", None,
                message_contains="`x` (bound to"),
        # Only what is page-locked is pinned: `done` is not.
        Invalid("import torch\nobs = torch.zeros(8, 4)\ndone = torch.zeros(8)\n"
                "torch.cuda.cudart().cudaHostRegister(obs.data_ptr(), obs.numel() * obs.element_size(), 0)\n"
                "for update in range(10):\n    o = obs.to('cuda', non_blocking=True)\n"
                "    d = done.to('cuda', non_blocking=True)\n", None, message_contains="`done` (bound to"),
        Invalid("import torch\ndef forward(dev):\n    return torch.tensor([1, 2]).to(dev, non_blocking=True)\n",
                "import torch\ndef forward(dev):\n"
                "    return torch.tensor([1, 2], pin_memory=torch.cuda.is_available()).to(dev, non_blocking=True)\n"),
        Invalid("import torch\ndef forward(n):\n    return torch.zeros(n, dtype=torch.int32).cuda(non_blocking=True)\n",
                "import torch\ndef forward(n):\n"
                "    return torch.zeros(n, dtype=torch.int32, pin_memory=True).cuda(non_blocking=True)\n"),
        Invalid("import torch\ndef forward(ids, device):\n    return torch.tensor(ids).to(device, non_blocking=True)\n",
                "import torch\ndef forward(ids, device):\n"
                "    return torch.tensor(ids, pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)\n",
                unsafe=True),
        Invalid("import torch\ndef forward(a):\n    return torch.from_numpy(a).to('cuda', non_blocking=True)\n", None,
                message_contains="pageable"),
        Invalid("import numpy as np\nimport torch\ndef forward(a, device):\n"
                "    return torch.tensor(np.pad(a, 1)).to(device, non_blocking=True)\n", None,
                message_contains="`np.pad(a, 1)` is a numpy array"),
        Invalid("import torch\ndef forward(ids, device):\n    t = torch.tensor([len(ids)]).to(device, non_blocking=True)\n"
                "    return t.item()\n", None, message_contains="read back to the host at once (t.item() on the next"),
        Invalid("import torch\ndef forward(n, device):\n    b = torch.empty(n)\n    return b.to(device, non_blocking=True)\n", None,
                message_contains="`b` (bound to a fresh host tensor)"),
    )

    @classmethod
    def candidates(cls, facts):
        # The visitor needs `non_blocking=` given (and not False), a copy to a device that may be a CUDA one,
        # and a source that is a torch factory call or a name bound only to unpinned ones: other copies are
        # not parsed at all.
        return [call for call in facts.calls_named(cls.call_names)
                if any(keyword.arg == "non_blocking" for keyword in call.keywords)
                and copy_device(facts, call, call.lineno) not in (None, Device.NOT_CUDA)
                and _may_be_fresh_host_tensor(facts, call.func.value, call.lineno)]

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.context.facts
        start, end = self.position(node)
        found = copy_of(facts, node, start.line)
        if found is None:
            return
        copy, device = found
        if device is Device.NOT_CUDA or copy.non_blocking is None or is_literal(copy.non_blocking, "False"):
            return
        fresh = fresh_host_factory(facts, copy.source)
        if fresh is not None:
            if pinned(fresh[0]) or makes_no_elements(*fresh):
                return
            what = f"`torch.{fresh[1]}(...)`"
        elif isinstance(copy.source, cst.Name) and _bound_to_unpinned_factory(facts, copy.source.value, start.line):
            what = f"`{copy.source.value}` (bound to a fresh host tensor)"
        else:
            return
        if (fresh is None or fresh[1] != "from_numpy") and may_run_under_default_device(facts, start.line):
            return  # the factory allocates on the context's device: there may be no host memory to pin
        if does_not_repeat(facts, start, end) is not None:
            return  # what staging may cost, it costs once
        where = where_hot(facts, start.line)
        message = (f"{what} is pageable memory, so this `non_blocking=True` copy is staged by CUDA and may still "
                   f"synchronize{where}: pin the source")
        if fresh is None or fresh[1] == "from_numpy":
            self.report(node, message)
            return
        site = facts.site_at(start, end)
        if site is not None and site.synced_by:
            self.report(node, f"{message}; its result is read back to the host at once ({site.synced_by}), so "
                              "pinning would gain nothing: no rewrite is offered")
            return
        data = factory_data(fresh)
        why_not = no_pinned_rewrite(facts, start.line, data and to_ast(data), data and shown(data))
        if why_not is not None:
            self.report(node, f"{message}; {why_not}")
            return
        self.report(node, message, self._fix(node, copy, device, fresh[0], fresh[1], start.line))

    def _fix(self, node, copy, device, factory, name, line) -> Fix | None:
        if copy.legacy_type:
            return None
        torch_local, extra_edits = torch_name(self)
        if torch_local is None:
            return None
        unsafe = []
        data = factory_data((factory, name))
        unpinnable = data and unpinnable_data(self.context.facts, to_ast(data), line, shown(data))
        if unpinnable:
            unsafe.append(unpinnable)
        source = with_pin_memory(factory, pin_guard(self, device, torch_local))
        edit = self.context.replace_node(node, node.with_changes(func=node.func.with_changes(value=source)), self)
        if edit is None:
            return None
        message = "Build the source in pinned memory"
        if unsafe:
            message += " (unsafe: " + "; ".join(unsafe) + ")"
        return Fix(edits=tuple(sorted([edit, *extra_edits])),
                   applicability=Applicability.UNSAFE if unsafe else Applicability.SAFE, message=message)


def _bound_to_unpinned_factory(facts, name: str, line: int) -> bool:
    values = facts.bindings_at(name, line)
    if not values or facts.pinned_in_place(name, line):
        return False
    # Each a fresh host tensor as `host_factory` sees it (not `torch.tensor(t)` of a tensor that may be elsewhere),
    # made without `pin_memory=` at all.
    return all(isinstance(value, ast.Call) and host_factory(facts, value) is not None
               and not any(keyword.arg == "pin_memory" for keyword in value.keywords) for value in values)


def _may_be_fresh_host_tensor(facts, source: ast.expr, line: int) -> bool:
    """What the visitor can report as the source of the copy starting on `line`: an unpinned fresh host tensor
    (as `host_factory` and `pinned` see it), or a name bound only to unpinned factories where the copy starts
    (`b = (\n    b\n).to(...)` reads the earlier `b`)."""
    if isinstance(source, ast.Call):
        pin = next((keyword.value for keyword in source.keywords if keyword.arg == "pin_memory"), None)
        return host_factory(facts, source) is not None and (
            pin is None or isinstance(pin, ast.Constant) and pin.value is False)
    return isinstance(source, ast.Name) and _bound_to_unpinned_factory(facts, source.id, line)

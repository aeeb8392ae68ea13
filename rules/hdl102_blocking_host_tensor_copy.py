from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from h2dlint.copies import (
    COPY_METHODS,
    copy_device,
    copy_of,
    factory_data,
    fresh_host_factory,
    is_literal,
    keywords_of,
    left_unreported,
    legacy_tensor_without_elements,
    makes_no_elements,
    may_copy_to_a_named_device,
    may_run_under_default_device,
    no_pinned_rewrite,
    pin_guard,
    pinned,
    pinned_source,
    placement_is_host,
    shown,
    to_ast,
    torch_name,
    unpinnable_data,
    where_hot,
    with_non_blocking,
    with_pin_memory,
)
from h2dlint.facts import OPEN_GATE, Device, Placement
from h2dlint.gaps import TokensApart
from h2dlint.model import Applicability, Fix
from h2dlint.placement import classify_placement, drawn_from_a_data_loader
from h2dlint.rule import Invalid, Rule, Valid

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst


class BlockingHostTensorCopy(Rule):
    """
    ## What it does
    Finds `.cuda()`, `.to(<device>)` and `.type(torch.cuda.FloatTensor)` (a legacy CUDA
    tensor type, named or as its string) without `non_blocking=True` on a tensor known
    to be on the host: a fresh torch factory without `device=` (`torch.tensor(x)`,
    `torch.zeros(n)`; `torch.tensor(t)` of a tensor stays where `t` is, so only when `t`
    is on the host), `torch.from_numpy(a)`, a legacy constructor (`torch.LongTensor(ids)`),
    `.cpu()`, `.pin_memory()`, `torch.cat` / `torch.stack` of such tensors only, a mask
    comparing one (`torch.arange(n) < lens`, which would raise if `lens` were on the GPU),
    a local name bound only to those (or named `*_cpu`), or `self.x` assigned only those
    in its class (or a property returning them; not a registered buffer, which moves with
    its module), or a batch a
    data loader hands out (`for inputs, labels in loader:`, `next(iter(loader))`, over a
    `DataLoader` made in the file or a name, parameter or field annotated with one), where
    the target is, or may be, a CUDA device. For a batch the message says to make the
    loader with `pin_memory=True` and copy with `non_blocking=True`. A tensor made with no
    elements (`torch.empty(0)`, `torch.FloatTensor()`) is not reported: its copy returns before
    reaching the device.

    ## Why is this bad?
    A copy to the GPU with `non_blocking=False` is a `cudaMemcpyAsync` followed by a
    stream synchronize: the host waits until every kernel already queued on the
    stream has finished, so the CPU stops running ahead of the GPU. With a pinned
    source and `non_blocking=True` the copy is only enqueued.

    ## Example
    ```python
    positions = torch.tensor(positions_list).cuda()
    ```

    Use instead:
    ```python
    positions = torch.tensor(positions_list, pin_memory=True).cuda(non_blocking=True)
    ```

    ## Fix safety
    h2dlint offers a rewrite only where the source can be made pinned for free:
    - a fresh factory that accepts `pin_memory=` (`torch.tensor`, `zeros`, `ones`,
      `empty`, `full`, `arange`, `rand`, `randn`, ...): the fix adds
      `pin_memory=<guard>` to it and `non_blocking=True` to the copy. The guard is a
      literal `True` for `.cuda()` or a certain CUDA device, else the file's
      pin-memory helper or `torch.cuda.is_available()` (`pin_memory=True` raises on a
      build without CUDA). The pinned source is a temporary: nothing can write to it
      while the copy is in flight, and PyTorch's caching host allocator keeps its
      block until the copy ends.
    - an inline `.pin_memory()` source: the fix adds `non_blocking=True`.

    No rewrite is offered for `.type(<CUDA tensor type>)` (`.to("cuda", dtype)` says the
    same and may take `non_blocking=True`; write it by hand), nor for a pageable source
    that already exists (a name, `torch.from_numpy(a)`, `.cpu()`): adding `non_blocking=True` alone gives a
    "false async" copy (CUDA stages pageable memory and may still synchronize), and
    `.pin_memory()` on it is an extra host copy that can cost more than it saves.
    Keep a pinned staging buffer instead, and mind HDL402 when reusing it.

    `torch.tensor(data, pin_memory=True)` pins only Python data: PyTorch refuses a
    numpy array ("Can't pin tensor constructed from numpy") and a tensor ("... from a
    variable") on a CUDA machine too. No rewrite is offered (the copy is reported,
    with the reason) when the data is a numpy array where it is made. As HDL101, only
    code known to run every step is reported (`copies-outside-hot-code = true`: other
    code too). Code that runs
    once per model (a constructor, `main`, a loading function, or, by the project
    model, a function only they call), once per test, once in a while (under a
    periodic guard, filling a cache or setting up lazily behind a flag, see HDL101), or
    in a function named for set-up, export, a test or a benchmark (see HDL101) is
    not reported: the copy does not repeat every step. Nor is a block no call of the
    project takes, or only another accelerator takes (see HDL101): it never runs on CUDA.
    A fresh factory under a default-device context this
    file sets up (`torch.set_default_device`, `with torch.device(...)` and the
    constructors it runs), or a tensor computed from factories there (`torch.arange(n) * 2`),
    is not reported at all: it allocates on that device, so
    there may be no host tensor to copy, and `pin_memory=True` would raise on CUDA.

    The fix is **unsafe** when `torch.tensor`'s data is of unknown kind (it may be
    a tensor or a numpy array, which cannot be pinned there) or when the file uses
    several CUDA streams (the copy is then ordered only on the current stream).

    Sources with `requires_grad=True` are left to HDL404. Where the result is read
    back to the host at once (`.item()`, `.tolist()`, ..., in the same statement or
    one of the next two), the finding has no fix: the host waits anyway.

    ## References
    - h2dlint reference "What makes PyTorch code stall the GPU stream": blocking H2D
      (`cpu_tensor.cuda()`, `.to(cuda)` without `non_blocking`), false async, and
      hazards 1, 3, 6 and 7 of the pinned / non_blocking rewrite.
    - PyTorch: "A guide on good usage of non_blocking and pin_memory()".
    """

    code = "HDL102"
    name = "blocking-host-tensor-copy"
    summary = "`.cuda()` / `.to(<gpu>)` / `.type(torch.cuda.X)` of a host tensor without `non_blocking=True` blocks the host"
    call_names = COPY_METHODS
    prefilter = TokensApart(r"\.", r"(?:cuda|to|type)\b", r"\(", gap=")")  # `.to(`, `.to (`, `(x.cuda)()`
    text_test_spares_only_parsing = True

    valid_examples = (
        Valid("import torch\ndef f(x):\n    return x.cuda()\n"),
        Valid("import torch\ndef forward(x):\n    return torch.cat([torch.FloatTensor().to(x.device), x])\n"),
        Valid("import torch\ndef f(ids):\n    return torch.tensor(ids).to(torch.float16)\n"),
        Valid("import torch\ndef f(ids):\n    return torch.tensor(ids).to('cpu')\n"),
        # No elements: the copy returns before reaching the device (torchaudio's Emformer without memory).
        Valid("import torch\ndef forward(x):\n    return torch.empty(0).to(dtype=x.dtype, device=x.device)\n"),
        Valid("import torch\ndef f(ids, d):\n    return torch.tensor(ids, pin_memory=True).to(d, non_blocking=True)\n"),
        # `torch.tensor` of a tensor copies it where it is: no host tensor unless that one is.
        Valid("import torch\ndef count(mask: torch.Tensor, device, n):\n    for _ in range(n):\n"
              "        yield torch.tensor(mask.sum()).to(device)\n"),
        Valid("import torch\ndef f(a, b):\n    return torch.zeros(3).to(b)\n"),
        Valid("import torch\ndef f(ids):\n    return torch.tensor(ids, device='cuda').cuda()\n"),
        Valid("import torch\ndef f(m):\n    return torch.nn.Linear(3, 4).cuda()\n"),
        Valid("import torch\ndef f(v, d):\n    return torch.tensor(v, requires_grad=True).to(d)\n"),
        Valid("import torch\ndef forward(n, x, device):\n    return torch.cat([torch.arange(n), x]).to(device)\n"),
        Valid("import torch\ndef build(device, n):\n    with torch.device(device):\n"
              "        return torch.arange(n).to(device)\n"),
        Valid("import torch\nclass Rope(torch.nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
              "        self.register_buffer('inv_freq', torch.arange(n), persistent=False)\n"
              "        self.inv_freq = torch.arange(n)\n"
              "    def forward(self, x):\n        return self.inv_freq.to(x.device)\n"),
        Valid("import torch\ndef load_weights(model, n):\n    return torch.arange(n).cuda()\n"),
        Valid("import torch\ndef forward(n, x):\n"
              "    return x.cuda().type(torch.cuda.HalfTensor) + torch.arange(n).type(torch.float16)\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef forward(x):\n    return x * torch.FloatTensor([0.5]).to(x.device)\n", None,
                message_contains="copies a host tensor to `x.device` (if it is a CUDA device)"),
        Invalid("import torch\ndef count(mask: torch.Tensor, device, n):\n    for _ in range(n):\n"
                "        yield torch.tensor(mask.cpu().sum()).to(device)\n", None, message_contains="copies a host tensor"),
        Invalid("import torch\nfrom torch.utils.data import DataLoader\ndef train(model, dataset):\n"
                "    for step, (inputs, labels) in enumerate(DataLoader(dataset, batch_size=8)):\n"
                "        model(inputs.cuda(), labels)\n", None, message_contains="a batch from a data loader"),
        Invalid("import torch\ndef forward(heatmap):\n"
                "    return heatmap * torch.arange(heatmap.shape[-1]).type(torch.cuda.FloatTensor)\n", None,
                message_contains="copies a host tensor to a CUDA device with a blocking copy in `forward`"),
        Invalid("import torch\ndef forward(n):\n    return torch.zeros(n).type('torch.cuda.FloatTensor')\n", None),
        Invalid("import torch\nfrom torch.cuda import FloatTensor as F\ndef forward(n):\n    return torch.zeros(n).type(F)\n",
                None),
        Invalid("import torch\nimport torch.cuda as tc\ndef forward(n):\n"
                "    return torch.zeros(n).type(dtype=tc.FloatTensor)\n", None),
        Invalid("import torch\ndef forward(ids):\n    return torch.tensor([1, 2]).cuda()\n",
                "import torch\ndef forward(ids):\n    return torch.tensor([1, 2], pin_memory=True).cuda(non_blocking=True)\n"),
        Invalid("import torch\ndef forward(n, device):\n    return torch.arange(n).to(device)\n",
                "import torch\ndef forward(n, device):\n"
                "    return torch.arange(n, pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)\n",
                message_contains="in `forward`"),
        Invalid("import torch\ndef forward(ids, device):\n    return torch.tensor(ids).to(device=device)\n",
                "import torch\ndef forward(ids, device):\n"
                "    return torch.tensor(ids, pin_memory=torch.cuda.is_available()).to(device=device, non_blocking=True)\n",
                unsafe=True),
        Invalid("import torch\ndef forward(a):\n    return torch.from_numpy(a).cuda()\n", None,
                message_contains="staging buffer"),
        Invalid("import numpy as np\nimport torch\ndef forward(a, device):\n    return torch.tensor(np.pad(a, 1)).to(device)\n",
                None, message_contains="`np.pad(a, 1)` is a numpy array"),
        Invalid("import torch\ndef forward(t):\n    t_cpu = t.cpu()\n    return t_cpu.to('cuda:0')\n", None),
        Invalid("import torch\ndef forward(x):\n    staged = x.cpu().pin_memory()\n    return staged.cuda()\n", None,
                message_contains="the source is pinned already"),
        Invalid("import torch\ndef forward(x):\n    return x.pin_memory().cuda(non_blocking=False)\n",
                "import torch\ndef forward(x):\n    return x.pin_memory().cuda(non_blocking=True)\n"),
        Invalid("import torch\ndef forward(n):\n    return torch.zeros(n).cuda().sum().item()\n", None,
                message_contains="read back"),
        Invalid("import torch\nclass Runner:\n    def forward(self, lens):\n"
                "        return torch.concat([torch.arange(n) for n in lens]).to(device=self.device)\n", None,
                message_contains="staging buffer"),
        Invalid("import torch\nfrom functools import cached_property\nclass Mapping:\n    @cached_property\n"
                "    def table(self):\n        return torch.zeros(10, dtype=torch.int)\n"
                "    def forward(self, ids):\n        tokens = self.table[ids.to('cpu')]\n        return tokens.to(ids.device)\n",
                None),
        Invalid("import torch\ndef forward(lens, pos, device):\n    masks = []\n    for n in lens:\n"
                "        masks.append((torch.arange(n) >= pos).int())\n    return torch.concat(masks).to(device=device)\n",
                None),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=OPEN_GATE) -> bool:
        # Without GPU evidence there is no `.cuda(` call, and a `.to(` copies to a device copy_device does not rule
        # out only when its target is named like one.
        return cls.prefilter_matches(text) and (gate.gpu or may_copy_to_a_named_device(text))

    @classmethod
    def candidates(cls, facts):
        # The visitor needs a copy to a device that may be a CUDA one (not a dtype cast), a host source (a
        # fresh factory without `device=` counts: its placement is HOST), and no `non_blocking=` (anything
        # but a literal False is HDL104's). Other calls, by far the most `.to()` calls, are not parsed at all.
        return [call for call in facts.calls_named(cls.call_names)
                if not _asks_non_blocking(call)
                and copy_device(facts, call, call.lineno) not in (None, Device.NOT_CUDA)
                and classify_placement(facts, call.func.value, call.lineno) is Placement.HOST]

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.context.facts
        start, end = self.position(node)
        found = copy_of(facts, node, start.line)
        if found is None:
            return
        copy, device = found
        if device is Device.NOT_CUDA or (copy.non_blocking is not None and not is_literal(copy.non_blocking, "False")):
            return
        fresh = fresh_host_factory(facts, copy.source)
        if fresh is not None:
            requires_grad = keywords_of(fresh[0]).get("requires_grad")
            if requires_grad is not None and not is_literal(requires_grad.value, "False"):
                return  # HDL404
            if fresh[1] != "from_numpy" and may_run_under_default_device(facts, start.line) is not None:
                return  # the factory allocates on the context's device: there may be no host tensor to copy
            if makes_no_elements(*fresh):
                return  # `torch.empty(0).to(device)`: a copy of no elements returns before reaching the device
        elif not placement_is_host(facts, copy.source, start.line) or (
                not _moved_to_the_host(copy.source) and may_run_under_default_device(facts, start.line) is not None):
            return  # (a host tensor computed from factories may be on the context's device)
        elif legacy_tensor_without_elements(facts, copy.source):
            return  # `torch.FloatTensor().to(device)`: no elements either
        if left_unreported(facts, start, end, self.context.settings) is not None:
            return
        where = where_hot(facts, start.line)
        target = "a CUDA device" if device is Device.CUDA else f"`{shown(copy.device)}` (if it is a CUDA device)"
        message = (f"copies a host tensor to {target} with a blocking copy{where}: "
                   "the host waits until the GPU stream drains")
        site = facts.site_at(start, end)
        if site is not None and site.synced_by:
            self.report(node, f"{message}; the result is read back to the host at once ({site.synced_by}), so "
                              "an async copy would gain nothing")
            return
        fix = self._fix(node, copy, device, fresh)
        if fix is not None:
            data = factory_data(fresh)
            why_not = no_pinned_rewrite(facts, start.line, data and to_ast(data), data and shown(data))
            if why_not is not None:
                self.report(node, f"{message}; {why_not}")
                return
        if fix is None and drawn_from_a_data_loader(facts, to_ast(copy.source), start.line):
            message += ("; the source is a batch from a data loader: make the loader with `pin_memory=True` and "
                        "copy with `non_blocking=True`")
        elif fix is None and pinned_source(facts, to_ast(copy.source), start.line):
            message += ("; the source is pinned already: `non_blocking=True` makes the copy asynchronous (leave the "
                        "source unchanged until the copy is done)")
        elif fix is None:
            message += ("; the source is pageable memory: copy from a pinned staging buffer with "
                        "`non_blocking=True`")
        self.report(node, message, fix)

    def _fix(self, node: cst.Call, copy, device, fresh) -> Fix | None:
        if copy.legacy_type:
            return None
        facts = self.context.facts
        unsafe = []
        if facts.uses_several_streams:
            unsafe.append("this file uses several CUDA streams; the copy is now ordered on the current stream only")
        source = copy.source
        extra_edits = []
        if fresh is not None and fresh[1] != "from_numpy":
            factory, name = fresh
            if not pinned(factory):
                torch_local, extra_edits = torch_name(self)
                if torch_local is None:
                    return None
                data = factory_data(fresh)
                if data is not None:
                    unpinnable = unpinnable_data(facts, to_ast(data), self.position(node)[0].line, shown(data))
                    if unpinnable is not None:
                        unsafe.append(unpinnable)
                source = with_pin_memory(factory, pin_guard(self, device, torch_local))
        elif not (isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute)
                  and source.func.attr.value == "pin_memory"):
            return None
        replacement = with_non_blocking(node.with_changes(func=node.func.with_changes(value=source)))
        edit = self.context.replace_node(node, replacement, self)
        if edit is None:
            return None
        message = "Copy from pinned memory with `non_blocking=True`"
        if unsafe:
            message += " (unsafe: " + "; ".join(unsafe) + ")"
        return Fix(edits=tuple(sorted([edit, *extra_edits])),
                   applicability=Applicability.UNSAFE if unsafe else Applicability.SAFE, message=message)


def _asks_non_blocking(call: ast.Call) -> bool:
    return any(keyword.arg == "non_blocking" and not (isinstance(keyword.value, ast.Constant)
                                                      and keyword.value.value is False)
               for keyword in call.keywords)


def _moved_to_the_host(source: cst.BaseExpression) -> bool:
    """`x.cpu()`, `x.pin_memory()`: on the host under any default device."""
    return isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) \
        and source.func.attr.value in ("cpu", "pin_memory")

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from h2dlint.copies import (
    constant_upload,
    dotted,
    is_literal,
    is_pure,
    join_args,
    keywords_of,
    left_unreported,
    may_call_tensor_with_device,
    no_pinned_rewrite,
    pin_guard,
    shown,
    tight_equal,
    to_ast,
    torch_name,
    unpinnable_data,
    where_hot,
)
from h2dlint.facts import Data, Device, Placement
from h2dlint.hotness import RUN_ONCE_FUNCTIONS, context_at
from h2dlint.model import Applicability, Fix
from h2dlint.placement import classify_data, classify_device, classify_placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syntax import dotted_name
from h2dlint.values import PinData, holds_no_elements, pin_data_kind

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst


class BlockingTensorCopy(Rule):
    """
    ## What it does
    Finds `torch.tensor(data, device=...)` and `torch.as_tensor(data, device=...)`
    that build a tensor from host data (Python lists, scalars, numpy arrays) directly
    on a device that is, or may be, a CUDA GPU; and `x.new_tensor(data)`, which builds
    it on `x`'s device, where `x` is, or may be, a CUDA tensor.

    ## Why is this bad?
    PyTorch first builds the tensor in ordinary (pageable) host memory, then copies it
    with `non_blocking=False`: a `cudaMemcpyAsync` followed by a stream synchronize.
    The host waits until every kernel already queued on the stream has finished, so
    the CPU can no longer run ahead of the GPU and launch overhead shows up in every
    step. Building the tensor in pinned memory and copying it with `non_blocking=True`
    only enqueues the copy.

    Where the result is read back to the host at once (`.item()`, `.tolist()`,
    `.cpu()`, `int(...)`, in the same statement or one of the next two), the host
    waits anyway: h2dlint still reports the copy but offers no rewrite, since it
    would gain nothing.
    Inside TorchScript (`@torch.jit.script`, `@torch.jit.export`) the copy is reported
    without a rewrite too: TorchScript's `torch.tensor` takes no `pin_memory`. Data with no
    elements (`[]`, `[[]] * batch`) is not reported: such a copy returns before it reaches the device.
    Nor is `self.r = torch.tensor(self.r, device=d)`: the attribute holds the device tensor after the
    first call, so only that call copies from the host.

    Only code known to run every step is reported: in a `for` or `while` loop (not a
    comprehension's, whose copies repeat within one call, nor one over what an object holds,
    `for m in self.members`, `.items()`, `.named_modules()`, which repeats once per item it
    built), under CUDA graph capture, or
    in a function hot by its name (`forward`, `step`, a training step such as
    `_train_batch`, an engine's per-step entry point, a `hot-functions` entry) or called
    from one through the project (the finding's `evidence` names the chain). In held-out
    projects the copies elsewhere were set-up, an epoch's or an evaluation's bookkeeping
    or weight conversion at load about as often as per-step work. Nor is a conversion in
    a branch for a parameter known there not to be a tensor (`if not
    torch.is_tensor(timesteps): timesteps = torch.tensor([timesteps], device=d)`, the
    code past `if isinstance(x, torch.Tensor): return x`) unless the project's calls
    bring it Python data: every call a literal or the default, or some call a literal,
    a list or tuple, a comprehension or `.tolist()` (an array, or a name bound to a
    list, is not seen). In held-out projects, a module that takes either was mostly
    given tensors by its callers. With `copies-outside-hot-code =
    true` both are reported too, except as follows.
    Not reported, hot or not: code that runs once per model (`__init__`, `__post_init__`, `setup`,
    `reset_parameters`, `_init_weights`, a loading function such as `load_weights` or
    `from_pretrained`; their loops too, except in the constructor of a class that is
    no `nn.Module` nor optimizer (a `torch.optim` class), which may be built every step;
    `main` outside its loops; or, by the project model, a function that only such code
    calls, loops and all for a module's or an optimizer's constructor): the copy waits once, at
    start-up; nor a function not hot by its own name whose name says set-up, export,
    a test, a benchmark, a profile, a warm-up, a CUDA graph's capture or a plot
    (`setup_model`, `export_engine`, `profile_kernels`, loops and all; not `init_*` nor
    I/O such as `save_*`, which name per-step code as often); nor a function that builds
    a `DataLoader`, outside its loops (it prepares the data once per run); nor, loops and
    all, a function nothing in the project calls, in a module other modules import from
    (API the project never runs per step, or dead code; a function returned, passed, stored,
    decorated, or an event hook `on_*`, counts as called); nor, hot or not, a block no call
    takes (`if mode == "debug":` where every call of the function passes another mode, or
    `if self.flag:` where every store into `self.flag` stores False), nor one only another
    accelerator takes (`if x.device.type == "mps":`, or the code after `if x.device.type not
    in ("mps", "xla"): return ...`);
    nor test code (a test module or a
    `test_*` function), which runs once per test; nor code that runs once in a
    while: under a periodic guard (`if step % eval_interval == 0:`, see HDL201), in a
    function cached with `functools.cache` / `lru_cache` / `cached_property`, filling a
    cache (`if key not in _CACHE: _CACHE[key] = ...`, `if self._x is None: self._x =
    ...`, or `self._set_x(...)` where that method stores `self._x`), setting up lazily behind a
    flag it, or what follows it, clears and nothing but a constructor sets
    (`if self._uninitialized: ...; self._uninitialized = False`), or only called from
    such code; nor the code after an early return on a cache hit that checks the cached
    table still fits (`if self.pe is not None and self.pe.size(1) >= x.size(1): return`),
    or on a flag that code sets and nothing but a constructor sets back (`if
    self._registered: return`, then `self._registered = True`), or on a module's cache or
    flag the function declares `global` (`if _OK is not None: return _OK`, then `_OK = ...`);
    nor a block that ends by raising or failing an assertion (`if
    boxes.any(): ...; raise ValueError(...)`, `torch._assert(False, ...)`), which runs only
    on bad input, nor the body of `if torch.isnan(x).any():` (or `isinf`, or `not
    torch.isfinite(x).all()`), which runs only on a step that diverged; nor an empty input's fallback, the arm taken only when a count is zero
    (`loss / n if n > 0 else torch.tensor(0.0, device=d)` with `n = mask.sum()`, `if
    len(boxes) == 0: ...`), which runs only on a degenerate batch; not in a loop, where
    a count is often each element's. A local made when it is None (`if mask is None:
    mask = ...`) is made on every call: it is reported. A device of unknown kind in a
    module for another accelerator (`torch_tpu/`, `tpu_model_runner.py`, `npu/`, by the
    words of its path) is not a CUDA device.

    ## Example
    ```python
    indices = torch.tensor(indices, device=states.device, dtype=torch.int64)
    ```

    Use instead:
    ```python
    indices = torch.tensor(
        indices, dtype=torch.int64, pin_memory=torch.cuda.is_available()
    ).to(states.device, non_blocking=True)
    ```

    ## Fix safety
    The rewrite keeps the data, an explicit `dtype` (an inferred one is unchanged,
    since the data is untouched), and leaf status: `requires_grad=True` moves after
    the copy as `.requires_grad_()`. The device expression is still evaluated once.

    `pin_memory=True` raises on a PyTorch build without CUDA, so the fix writes a
    literal `True` only where the device is certainly CUDA (`"cuda"`, `"cuda:1"`,
    an ordinal, `torch.device("cuda", 0)`, or a local name bound to one). Otherwise
    it writes a guard: a helper this file already imports (by default
    `is_pin_memory_available`), else `torch.cuda.is_available()`. On a CUDA machine
    where the device turns out to be the CPU, the result is a pinned CPU tensor with
    the same values.

    `torch.tensor(data, pin_memory=True)` pins only Python data: for a numpy array
    PyTorch raises "Can't pin tensor constructed from numpy", for a tensor "Can't pin
    tensor constructed from a variable", on a CUDA machine too. So no rewrite is
    offered (the copy is still reported, with the reason) where:
    - the data is a numpy array where it is made (`np.concatenate(...)`, `np.pad`,
      `a > 0` of an array, `t.numpy()`, a name bound to one): copy it from a pinned
      staging buffer instead; data that is certainly a tensor is not reported;
    - the call may run under a default-device context this file sets up
      (`torch.set_default_device(...)`, the body of `with torch.device(...)`, or the
      constructor of a class built there): a factory then allocates on that device
      and `pin_memory=True` raises on CUDA;

    The fix is **safe** when the data is certainly Python data (a literal, a
    comprehension, `.tolist()`, a Python number such as `float(x)` or `len(x)`, a
    slice or a sum of lists, a name checked by an enclosing `if isinstance(name,
    list):`, or a local name bound only to those, by unpacking too). It is
    **unsafe** when:
    - the data's kind is unknown (a parameter, an attribute, a `*_cpu` name): it may
      be a tensor or a numpy array, which `torch.tensor(..., pin_memory=True)`
      cannot pin, so the fixed line raises on CUDA for those;
    - it is `torch.as_tensor` with data that is only probably host data: `as_tensor`
      returned a tensor already on the device without copying, `torch.tensor` copies;
    - the file uses several CUDA streams: a `non_blocking` copy is ordered only on
      the current stream, so a consumer on another stream may need `wait_stream`
      or `record_stream`;
    - moving the device (or `requires_grad`) after the other arguments changes the
      order in which calls with side effects run.

    A constant (`torch.tensor(0, device=...)`, `torch.tensor([1.0], device=...)`)
    is left to HDL103, which replaces the copy by a factory.

    `x.new_tensor(data)` is reported without a fix. The rewrite maintainers use,
    `torch.tensor(data, dtype=x.dtype, pin_memory=...).to(x.device, non_blocking=True)`,
    is not exactly equivalent: it evaluates `x` twice, and `new_tensor` dispatches
    on `x`'s type (tensor subclasses, sparse layouts) where `torch.tensor` does not.
    A `new_tensor` with its own `device=` is not reported.

    ## References
    - PyTorch: "A guide on good usage of non_blocking and pin_memory()"
    - CUDA Runtime API: "API synchronization behavior" (pageable and pinned memcpy)
    """

    code = "HDL101"
    name = "blocking-tensor-copy"
    summary = "`torch.tensor(host_data, device=<gpu>)` blocks the host until the GPU stream drains"
    call_names = frozenset({"tensor", "as_tensor", "new_tensor"})
    prefilter = re.compile(r"\b(?:as_)?tensor\b")
    text_test_spares_only_parsing = True

    valid_examples = (
        # Host data the first time only: the attribute holds the device tensor after that.
        Valid("import torch\nclass Coder:\n    def __init__(self, r):\n        self.r = r\n"
              "    def forward(self, heat):\n"
              "        self.r = torch.tensor(self.r, device=heat.device)\n        return self.r\n"),
        # Nothing shows that this runs every step (no loop, no hot name, no hot caller): reported only with
        # `copies-outside-hot-code = true`.
        Valid("import torch\ndef prepare(ids, device):\n    return torch.tensor(ids, device=device)\n"),
        # A function named for set-up (or export, a test, a benchmark, ...) is no per-step work.
        Valid("import torch\ndef setup_model(model, values, device):\n"
              "    model.mean = torch.tensor(values, device=device)\n"),
        # Filled once, on the first call: later calls return the buffer before the copy.
        Valid("import torch\nclass Loss(torch.nn.Module):\n    def target(self, value, device):\n"
              "        if 'target' in self._buffers:\n            return self.target\n"
              "        self.register_buffer('target', torch.tensor(value, device=device))\n        return self.target\n"),
        Valid("import torch\nluts = {}\ndef forward(x, values):\n    lut = luts.get(x.device)\n    if lut is None:\n"
              "        lut = luts[x.device] = torch.tensor(values, device=x.device)\n    return lut[x]\n"),
        # `ends` was moved to the host first: a tensor made on its device is a host tensor, nothing is copied.
        Valid("import torch\ndef forward(done, cursor):\n    ends = done.cpu().nonzero(as_tuple=True)[0]\n"
              "    return torch.cat([ends, torch.tensor([cursor], device=ends.device)])\n"),
        # A loop over what an object holds repeats once per member, not per step: it says nothing of how often
        # `scales` runs.
        Valid("import torch\nclass Scaler:\n    def scales(self, device):\n        out = []\n"
              "        for member in self.members:\n            out.append(torch.tensor(member.values, device=device))\n"
              "        return out\n"),
        Valid("import torch\ndef fit(batches, eval_interval):\n    for step, batch in enumerate(batches):\n"
              "        if step % eval_interval == 0:\n            t = torch.tensor([step], device='cuda')\n"),
        Valid("import functools\nimport torch\n@functools.lru_cache\ndef table(device):\n"
              "    return torch.tensor([0.5, 1.0, 1.5], device=device)\n"),
        Valid("import torch\n_LUTS = {}\ndef forward(x):\n    if x.device not in _LUTS:\n"
              "        _LUTS[x.device] = torch.tensor([0.5, 1.0], device=x.device)\n    return x * _LUTS[x.device]\n"),
        Valid("import torch\n_OK = None\ndef forward(x):\n    global _OK\n    if _OK is not None:\n        return _OK\n"
              "    _OK = bool(torch.tensor([1, 2], device=x.device).sum())\n    return _OK\n"),
        Valid("import torch\nx = torch.tensor([1, 2], device='cpu')\n"),
        Valid("import torch\nx = torch.tensor([1, 2], device=torch.device('cpu'))\n"),
        Valid("import torch\nx = torch.tensor([1, 2])\n"),
        Valid("import torch\ndef f(device):\n    return torch.tensor([], device=device)\n"),
        Valid("import torch\ndef forward(batch, device):\n    return torch.tensor([[]] * batch, device=device)\n"),
        Valid("import torch\ndef f(idx, states):\n"
              "    return torch.tensor(idx, dtype=torch.int64, pin_memory=True).to(states.device, non_blocking=True)\n"),
        Valid("import torch\ndef f(t):\n    return torch.as_tensor(t, device='cuda')\n"),
        Valid("import torch\ndef f(a):\n    b = a.cuda()\n    return torch.tensor(b, device='cuda')\n"),
        Valid("import torch\ndev = 'meta'\nx = torch.tensor([1.0], device=dev)\n"),
        Valid("def tensor(x, device=None): return x\nx = tensor([1], device='cuda')\n"),
        Valid("import torch\ndef f(device):\n    return torch.tensor([[0, 0]], device=device)\n"),  # HDL103's
        Valid("import numpy as np\nx = np.tensor([1], device='cuda')\n"),
        Valid("import torch\ndef f(x, n):\n    return x.cpu().new_tensor([n])\n"),
        Valid("import torch\ndef f(x):\n    return x.new_tensor(torch.arange(3))\n"),
        Valid("import torch\ndef forward(x):\n    m = x.new_zeros(3)\n    return x.new_tensor(m)\n"),
        Valid("import torch\ndef f(x, n):\n    return x.new_tensor([n], device='cpu')\n"),
        # A branch for a value no call passes: the module's callers may all pass a tensor.
        Valid("import torch\nclass UNet(torch.nn.Module):\n    def forward(self, sample, timesteps):\n"
              "        if not torch.is_tensor(timesteps):\n"
              "            timesteps = torch.tensor([timesteps], device=sample.device)\n        return sample * timesteps\n"),
        Valid("import torch\nclass Rope(torch.nn.Module):\n    def __init__(self, n, device):\n"
              "        super().__init__()\n        self.bounds = torch.tensor([0, n], device=device)\n"),
    )
    invalid_examples = (
        Invalid(
            "import torch\ndef forward(lens):\n    buf = torch.zeros(4, device='cuda')\n    return buf.new_tensor(lens)\n",
            None,
            message_contains="`.new_tensor()` copies host data to a CUDA device from pageable memory with a "
                             "blocking copy in `forward`",
        ),
        Invalid(
            "import torch\ndef forward(self, counts):\n"
            "    self.num_tokens_gpu = self.num_tokens_gpu.new_tensor([sum(counts)], dtype=torch.int32)\n",
            None,
            message_contains="the device of `self.num_tokens_gpu` (if it is a CUDA device)",
        ),
        Invalid(
            "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], device='cuda')\n",
            "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], pin_memory=True).to('cuda', non_blocking=True)\n",
            message_contains="with a blocking copy in a loop: the host waits",
        ),
        Invalid(
            "import torch\ndef forward(indices, states):\n"
            "    return torch.tensor(indices, device=states.device, dtype=torch.int64)\n",
            "import torch\ndef forward(indices, states):\n"
            "    return torch.tensor(indices, dtype=torch.int64, pin_memory=torch.cuda.is_available())"
            ".to(states.device, non_blocking=True)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\ndef forward(lengths, device):\n    if isinstance(lengths, list):\n"
            "        return torch.tensor(lengths, device=device)\n",
            "import torch\ndef forward(lengths, device):\n    if isinstance(lengths, list):\n"
            "        return torch.tensor(lengths, pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)\n",
        ),
        Invalid(
            "import torch\ndef forward(lens, device):\n    out, total = [], 0\n    for n in lens:\n"
            "        out.append(total)\n        total += n\n    return torch.tensor(out[1:] + out[:1], device=device)\n",
            "import torch\ndef forward(lens, device):\n    out, total = [], 0\n    for n in lens:\n"
            "        out.append(total)\n        total += n\n"
            "    return torch.tensor(out[1:] + out[:1], pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)\n",
        ),
        Invalid(
            "import torch\ndef forward(scale, device):\n    return torch.tensor(float(scale), device=device)\n",
            "import torch\ndef forward(scale, device):\n"
            "    return torch.tensor(float(scale), pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)\n",
        ),
        Invalid(
            "import numpy as np\nimport torch\ndef forward(rows, device):\n    table = np.concatenate(rows)\n"
            "    return torch.tensor(table > 0, device=device)\n",
            None,
            message_contains="`table > 0` is a numpy array, which `torch.tensor(..., pin_memory=True)` cannot pin",
        ),
        Invalid(
            "import torch\ndef forward(load_device, sizes):\n    with torch.device(load_device):\n"
            "        return torch.tensor(sizes, device=load_device)\n",
            None,
            message_contains="it may run under `with torch.device(...)` (line 3)",
        ),
        Invalid(
            "import torch\ntorch.set_default_device('cuda')\ndef forward(n, device):\n"
            "    return torch.tensor([n, n + 1], device=device)\n",
            None,
            message_contains="`torch.set_default_device` is called on line 2",
        ),
        Invalid(
            "import torch as th\ndef forward(states):\n    idx = [i * 2 for i in range(4)]\n"
            "    return th.tensor(idx, device=states.device)\n",
            "import torch as th\ndef forward(states):\n    idx = [i * 2 for i in range(4)]\n"
            "    return th.tensor(idx, pin_memory=th.cuda.is_available()).to(states.device, non_blocking=True)\n",
        ),
        Invalid(
            "import torch\nfor step in range(3):\n    w = torch.tensor([0.5, 0.25], requires_grad=True, device=torch.device('cuda', 0))\n",
            "import torch\nfor step in range(3):\n    w = torch.tensor([0.5, 0.25], pin_memory=True).to(torch.device('cuda', 0), non_blocking=True)"
            ".requires_grad_()\n",
        ),
        Invalid(
            "from torch import tensor\ndef forward(dev):\n    return tensor([1, 2, 3], device=dev)\n",
            "import torch\nfrom torch import tensor\ndef forward(dev):\n"
            "    return tensor([1, 2, 3], pin_memory=torch.cuda.is_available()).to(dev, non_blocking=True)\n",
        ),
        Invalid(
            "import torch\nfrom vllm.utils import is_pin_memory_available\ndef forward(meta, device):\n"
            "    return torch.tensor(\n        meta.lens_cpu,\n        device=device,\n    )\n",
            "import torch\nfrom vllm.utils import is_pin_memory_available\ndef forward(meta, device):\n"
            "    return torch.tensor(\n        meta.lens_cpu,\n        pin_memory=is_pin_memory_available(),\n"
            "    ).to(device, non_blocking=True)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\ndef forward(device):\n    return torch.as_tensor([1, 2], dtype=torch.int32, device=device)\n",
            "import torch\ndef forward(device):\n"
            "    return torch.tensor([1, 2], dtype=torch.int32, pin_memory=torch.cuda.is_available())"
            ".to(device, non_blocking=True)\n",
        ),
        Invalid(
            "import torch\n@torch.jit.script\ndef forward(n: int, device: torch.device):\n"
            "    return torch.tensor([n, n + 1], device=device)\n",
            None,
            message_contains="no rewrite is offered under TorchScript",
        ),
        Invalid(
            "import torch\ndef forward(n, device):\n    return torch.tensor([n], device=device).item()\n",
            None,
            message_contains="read back to the host at once (.item())",
        ),
        Invalid(
            "import torch\ndef forward(n, device):\n    t = torch.tensor([n], device=device)\n    return t.tolist()\n",
            None,
            message_contains="t.tolist() on the next line",
        ),
        Invalid(
            "import torch\ns = torch.cuda.Stream()\ndef forward(device):\n    return torch.tensor([1, 2], device=device)\n",
            "import torch\ns = torch.cuda.Stream()\ndef forward(device):\n"
            "    return torch.tensor([1, 2], pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)\n",
            unsafe=True,
        ),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=None) -> bool:
        return may_call_tensor_with_device(text) or "new_tensor" in text

    @classmethod
    def candidates(cls, facts):
        # What the visitor checks on the call's shape and device, checked here on the ast (it checks again):
        # other calls, most of them with `device="cpu"`, `pin_memory=` or another `.tensor` method, are not
        # parsed at all.
        return [call for call in facts.calls_named(cls.call_names)
                if not any(isinstance(arg, ast.Starred) for arg in call.args)
                and all(keyword.arg is not None for keyword in call.keywords)
                and (_may_copy_to_device(facts, call) if not _is_new_tensor(call) else
                     len(call.args) == 1 and not any(keyword.arg == "device" for keyword in call.keywords))]

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "new_tensor":
            self._visit_new_tensor(node, node.func.value)
            return
        facts = self.context.facts
        qualified = facts.qualify(dotted(node.func))
        if qualified not in ("torch.tensor", "torch.as_tensor"):
            return
        is_as_tensor = qualified == "torch.as_tensor"
        if any(arg.star for arg in node.args):
            return
        positional = [arg for arg in node.args if arg.keyword is None]
        keywords = keywords_of(node)
        if not positional or "pin_memory" in keywords:
            return
        if not is_as_tensor and constant_upload(node) is not None:
            return  # a constant: HDL103 reports it with a better fix (a factory, no copy at all)
        data_arg = positional[0]
        device_arg = keywords.get("device")
        if device_arg is None:
            return
        start, end = self.position(node)
        device = classify_device(facts, to_ast(device_arg.value), start.line)
        if device is Device.NOT_CUDA or left_unreported(facts, start, end, self.context.settings) is not None:
            return
        data_ast = to_ast(data_arg.value)
        if holds_no_elements(data_ast):
            return  # an empty copy returns before the device copy: nothing waits
        site = facts.site_at(start, end)
        if _converts_in_place(facts, site, data_ast):
            return  # `self.r = torch.tensor(self.r, device=d)`: host data the first time only, a device tensor after
        data = classify_data(facts, data_ast, start.line)
        if data is Data.TENSOR or (is_as_tensor and data not in (Data.HOST, Data.LIKELY_HOST)) \
                or pin_data_kind(facts, data_ast, start.line) is PinData.TENSOR:
            return  # a tensor's copy: no host data

        call_text = "torch.as_tensor" if is_as_tensor else "torch.tensor"
        device_text = shown(device_arg.value)
        target = "a CUDA device" if device is Device.CUDA else f"`{device_text}` (if it is a CUDA device)"
        where = where_hot(facts, start.line)
        message = (f"`{call_text}` copies host data to {target} from pageable memory with a blocking copy"
                   f"{where}: the host waits until the GPU stream drains")
        if site is not None and site.synced_by:
            self.report(node, f"{message}; its result is read back to the host at once ({site.synced_by}), "
                              "so a pinned non_blocking copy would gain nothing: keep the value on the host "
                              "or move the read later")
            return
        if facts.in_torchscript(start.line):
            self.report(node, f"{message}; no rewrite is offered under TorchScript, whose `torch.tensor` has no "
                              "`pin_memory`")
            return
        why_not = no_pinned_rewrite(facts, start.line, data_ast, shown(data_arg.value))
        if why_not is not None:
            self.report(node, f"{message}; {why_not}")
            return
        self.report(node, message, self._fix(node, is_as_tensor, data, device, data_arg, device_arg,
                                             keywords.get("requires_grad")))

    def _visit_new_tensor(self, node: cst.Call, receiver: cst.BaseExpression) -> None:
        """`x.new_tensor(data)`: a blocking copy of host data to `x`'s device."""
        facts = self.context.facts
        positional = [arg for arg in node.args if arg.keyword is None]
        if len(positional) != 1 or any(arg.star for arg in node.args) or "device" in keywords_of(node):
            return
        start, end = self.position(node)
        if left_unreported(facts, start, end, self.context.settings) is not None:
            return
        placement = classify_placement(facts, to_ast(receiver), start.line)
        data_ast = to_ast(positional[0].value)
        if placement is Placement.HOST or (isinstance(data_ast, (ast.List, ast.Tuple)) and not data_ast.elts) \
                or classify_data(facts, data_ast, start.line) is Data.TENSOR \
                and classify_placement(facts, data_ast, start.line) is not Placement.HOST:
            return  # (a tensor's copy: from the host only when that tensor is known to be there)
        target = "a CUDA device" if placement is Placement.GPU else \
            f"the device of `{shown(receiver)}` (if it is a CUDA device)"
        where = where_hot(facts, start.line)
        self.report(node, f"`.new_tensor()` copies host data to {target} from pageable memory with a blocking copy"
                          f"{where}: the host waits until the GPU stream drains; build the "
                          "data in pinned memory and copy it with `non_blocking=True`")

    def _fix(self, node, is_as_tensor, data, device, data_arg, device_arg, requires_grad_arg):
        facts = self.context.facts
        torch_local, extra_edits = torch_name(self)
        if torch_local is None:
            return None

        unsafe_reasons = []
        unpinnable = unpinnable_data(facts, to_ast(data_arg.value), self.position(node)[0].line,
                                     shown(data_arg.value))
        if unpinnable is not None:
            unsafe_reasons.append(unpinnable)
        if is_as_tensor and data is not Data.HOST:
            unsafe_reasons.append("`torch.as_tensor` returned data already on the device without a copy")
        if facts.uses_several_streams:
            unsafe_reasons.append("this file uses several CUDA streams; the copy is now ordered on the current "
                                  "stream only")
        moved = [device_arg] + ([requires_grad_arg] if _moves_requires_grad(requires_grad_arg) else [])
        later = node.args[node.args.index(device_arg) + 1:]
        if (later and any(not is_pure(arg.value, facts) for arg in moved)) or \
                any(not is_pure(arg.value, facts) for arg in later):
            unsafe_reasons.append("the device is now evaluated after the other arguments")

        guard = pin_guard(self, device, torch_local)

        kept = []
        for arg in node.args:
            if arg is device_arg or (arg is requires_grad_arg and _moves_requires_grad(arg)):
                continue
            kept.append(arg)
        pin_arg = cst.Arg(guard, keyword=cst.Name("pin_memory"), equal=tight_equal())
        func = node.func
        if is_as_tensor:
            func = cst.parse_expression(f"{torch_local}.tensor")
        source = node.with_changes(func=func, args=join_args(node.args, kept + [pin_arg]), lpar=[], rpar=[])
        result = cst.Call(
            func=cst.Attribute(value=source, attr=cst.Name("to")),
            args=[cst.Arg(device_arg.value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                  cst.Arg(cst.Name("True"), keyword=cst.Name("non_blocking"), equal=tight_equal())],
        )
        if _moves_requires_grad(requires_grad_arg):
            flag = requires_grad_arg.value
            grad_args = [] if is_literal(flag, "True") else [cst.Arg(flag)]
            result = cst.Call(func=cst.Attribute(value=result, attr=cst.Name("requires_grad_")), args=grad_args)

        replacement = self.context.replace_node(node, result, self)
        if replacement is None:
            return None
        applicability = Applicability.UNSAFE if unsafe_reasons else Applicability.SAFE
        message = "Build the tensor in pinned memory and copy it with `non_blocking=True`"
        if unsafe_reasons:
            message += " (unsafe: " + "; ".join(unsafe_reasons) + ")"
        return Fix(edits=tuple(sorted([replacement, *extra_edits])), applicability=applicability, message=message)


def _may_copy_to_device(facts, call: ast.Call) -> bool:
    """`torch.tensor(data, device=d)` / `torch.as_tensor(...)` with data that is no empty literal, no
    `pin_memory=`, and a device that may be a CUDA one."""
    if facts.qualify(dotted_name(call.func)) not in ("torch.tensor", "torch.as_tensor") or not call.args:
        return False
    keywords = {keyword.arg: keyword.value for keyword in call.keywords}
    if "pin_memory" in keywords or "device" not in keywords:
        return False
    if holds_no_elements(call.args[0]):
        return False
    return classify_device(facts, keywords["device"], call.lineno) is not Device.NOT_CUDA


def _is_new_tensor(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "new_tensor"


def _moves_requires_grad(arg: cst.Arg | None) -> bool:
    return arg is not None and not is_literal(arg.value, "False")


def _converts_in_place(facts, site, data: ast.expr) -> bool:
    """`self.r = torch.tensor(self.r, device=d)`: the attribute's host data is replaced by its device copy, so only
    the first call copies from the host (mmdet3d's box coders convert their ranges so on their first decode)."""
    if site is None or not (isinstance(data, ast.Attribute) and isinstance(data.value, ast.Name)):
        return False
    statement = facts.parents.get(site.node)
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return False
    target = statement.targets[0]
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and (target.value.id, target.attr) == (data.value.id, data.attr)):
        return False
    # The class's own assignments of the attribute (the method's receiver's: `batch.boxes = torch.tensor(
    # batch.boxes, ...)` of a fresh object every call is no such conversion) include this one; host data again on
    # a later call would be copied again, so only the constructor may assign it otherwise.
    bindings = facts.self_attribute_bindings(data.attr, statement.lineno) or []
    if not any(binding.line == statement.lineno for binding in bindings):
        return False
    return all(context_at(facts, binding.line).function in RUN_ONCE_FUNCTIONS
               for binding in bindings if binding.line != statement.lineno)

from __future__ import annotations

from h2dlint.facts import Placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import ACCUMULATE, HOT, INT_ARGUMENT_TEXT, READ, SyncReporter, where


class GpuValueRead(SyncReporter, Rule):
    """
    ## What it does
    Finds reads of a CUDA tensor's value on the host in code that runs often (a loop, but
    not one over what an object holds, see HDL101; `forward`, a training or decoding step, an inference engine's per-step function such
    as `forward_batch_generation` or `init_forward_metadata*`): `.item()`, `.tolist()`,
    `.cpu()`, `.numpy(force=True)` (a plain `.numpy()` of a CUDA tensor raises),
    `.to("cpu")`, `.type(torch.BoolTensor)` (a legacy CPU type, so a copy to the host),
    `int(t)` / `float(t)` / `bool(t)`, and the builtins that read every element:
    `any(t)` and `all(t)` test each one with `bool()`, `max(t)` and `min(t)` compare
    them, one wait per element. It reports only tensors h2dlint knows are on a CUDA
    device (built with `.cuda()`, a CUDA `device=`, computed from such tensors, a
    `self.x` set from one, an attribute named `*_gpu` / `*_cuda`
    such as `batch.seq_lens_gpu`, unless the name reads as a flag or a count: `is_cuda`,
    `use_gpu`, `num_gpu`, or the class assigns it a number, `self.parallel_gpu =
    parallel_gpu` of `parallel_gpu=1`); the same reads on tensors of unknown placement in
    hot code are HDL202, and those on CUDA tensors in functions h2dlint cannot tell to be
    hot or cold HDL204 (both off by default). Code under a periodic guard, `if step %
    log_interval == 0:` (a divisor named for logging, evaluation, saving, an interval or a
    frequency, or a literal of 10 or more; not gradient accumulation), runs every so many
    steps: not hot.

    A name with a host mirror is the device copy: inference engines keep
    `forward_batch.seq_lens` on the GPU next to `forward_batch.seq_lens_cpu`. So an
    attribute `obj.x` counts as a CUDA tensor when the file also names `x_cpu` or `x_host`
    (any receiver, attribute or not), and so does a parameter `x` that its function
    never rebinds when the same function has `x_cpu` / `x_host` (a parameter or a local).
    Not in files for another accelerator (that import `torch_npu` or use `torch.xpu`, ...),
    and not for names that read as flags or actions (`is_cpu`, `move_to_cpu`). No read
    at all is reported in a module whose path names another accelerator (`npu/`,
    `xpu_backend.py`, `torch_tpu/`): its tensors are that accelerator's.

    A tensor passed where Python or torch needs an int is read the same way, through
    `__index__` (an implicit `.item()`): a size or a bound (`torch.arange(t)`,
    `torch.zeros(t, n)`, `torch.empty((t, n))`, `torch.full((t,), v)`, `torch.randperm(t)`,
    `torch.eye(t)`, `range(t)`), a list repetition `[x] * t`, or a size given to
    `.view(t)`, `.reshape(t)`, `.expand(t)`, `.repeat(t)`, `.split(t)`, `.new_zeros(t)`, or a
    Python number: a fill value, or the `alpha=` of `add`/`sub` and the `value=` of
    `addcmul`/`addcdiv` (`g.sub(w, alpha=proj)` with a 0-d tensor `proj`);
    typically `torch.arange(lens[i])` for one entry of a CUDA tensor of lengths. The
    argument must be the CUDA tensor itself: `torch.arange(n)` with an int stays quiet.

    `sum(t)`, `list(t)` and `for v in t` are not reported: iterating a tensor only
    unbinds it into views on the device (`Tensor.__iter__` is `unbind(0)`), and nothing
    is read until an element is.

    Reads in constructors, at module level, in `print`/logger/`warnings` calls, in
    `raise` statements or a block that ends by raising or failing an assertion (`if
    boxes.any(): ...; torch._assert(False, ...)`), in the body of `if torch.isnan(x).any():` (a step that
    diverged), in branches about logging (`if self.log_stats:`) and in the
    branch taken while CUDA graphs are captured (`x.cpu() if in_capture else x_cpu`)
    are not reported: they run once (per captured graph), or only when someone asked
    for the output. Nor are reads in a function not hot by its own name whose name
    says set-up, export, a test, a benchmark, a profile, a warm-up, a capture or a plot
    (`setup_model`, `export_stats`, `profile_kernels`, see HDL101), loops and all, nor
    reads in a block no call of the project takes or only another accelerator takes, nor
    in an empty input's fallback (see HDL101), nor in a function only `nn.Module`
    constructors call (outside functions hot by their own name), which builds what the
    model holds once. The same holds for every sync rule.

    ## Why is this bad?
    The value is computed by kernels still queued on the GPU stream, so the host must
    wait until the stream drains before it can read it: the CPU can no longer run ahead
    of the GPU, and the launch overhead of the next kernels shows up in every step.
    PyTorch's `torch.cuda.set_sync_debug_mode("warn")` reports these reads at run time.

    ## Example
    ```python
    for batch in loader:
        loss = model(batch.cuda())
        total += loss.item()
    ```

    Use instead:
    ```python
    total = torch.zeros((), device="cuda")
    for batch in loader:
        loss = model(batch.cuda())
        total += loss.detach()  # read once, after the loop
    ```

    ## Fix safety
    No fix is offered: keeping the value on the device, reading it less often or
    reading a host-side mirror changes the program's structure, and only its author
    knows which of these is right. Where the host truly needs the value, a `# noqa:
    HDL201` documents that the sync is intended.

    ## References
    - PyTorch: `torch.cuda.set_sync_debug_mode` ("warn" reports `.item()`, `.cpu()`, `nonzero`)
    - PyTorch: "Performance Tuning Guide", avoid unnecessary CPU-GPU synchronization
    """

    code = "HDL201"
    name = "gpu-value-read"
    summary = "`.item()` / `.tolist()` / `.cpu()` / `int(t)` on a CUDA tensor in hot code waits for the GPU"
    kinds = frozenset({READ, ACCUMULATE})
    where = {Placement.GPU: HOT}
    MODEL_DEPENDENCIES = frozenset({"placement"})  # it reports no tensor of unknown placement in code hot only through calls
    prefilter = (".item(", ".tolist(", ".cpu(", ".numpy(", ".to(", ".type(", "int(", "float(", "bool(", "alpha",
                 "value=", "any(", "all(", "max(", "min(", *INT_ARGUMENT_TEXT)
    evidence = "gpu"

    valid_examples = (
        Valid("import torch\ndef profile_scales(scales, x, times):\n    x = x.cuda()\n    for scale in scales:\n"
              "        times.append((x * scale).sum().item())\n"),
        Valid("import torch\ndef train(xs, log_interval):\n    total = 0\n    for step, x in enumerate(xs):\n"
              "        loss = (x.cuda() ** 2).mean()\n        if step % log_interval == 0:\n"
              "            total += loss.item()\n"),
        Valid("import torch\nclass M:\n    def __init__(self):\n"
              "        self.n = torch.zeros(3, device='cuda').sum().item()\n"),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nprint(x.tolist())\n"),
        Valid("import torch\ndef forward(x):\n    y = x.cpu()\n    return y.item()\n"),
        Valid("import torch\ndef forward(x_cpu):\n    return x_cpu.sum().item()\n"),
        Valid("import torch\ndef forward(x):\n    return int(x.size(0)) + int(x.shape[1])\n"),
        Valid("import torch\nimport logging\nlogger = logging.getLogger()\n"
              "def step(x):\n    y = x.cuda()\n    logger.debug('norm %s', y.norm().item())\n"),
        Valid("import torch\ndef step(x, log_stats):\n    y = x.cuda()\n    if log_stats:\n"
              "        stats = y.mean().item()\n"),
        Valid("import torch\ndef helper(x):\n    return x.cuda().sum().item()\n"),
        Valid("import torch\ndef forward(x):\n    y = x.cuda()\n    return y.to('cpu', non_blocking=True)\n"),
        Valid("import torch\ndef step(xs):\n    for x in xs:\n        model = torch.nn.Linear(2, 2).to('cuda')\n"
              "        model.cpu()\n"),
        Valid("import torch\ndef forward(x):\n    y = x.cuda()\n    return sum(y), list(y), [v for v in y]\n"),
        Valid("import torch\ndef forward(xs):\n    return any(x > 0 for x in xs.cuda())\n"),
        Valid("import torch\ndef forward(x):\n    return max(x.cuda(), key=len)\n"),
        Valid("import torch\ndef forward(n):\n    return max(torch.arange(n))\n"),
        Valid("import torch\ndef forward(self, x):\n    return bool(self.use_gpu) and x.cuda()\n"),
        Valid("def step(rows):\n    for used, utilization_gpu in rows:\n        yield int(utilization_gpu)\n"),
        Valid("def forward(seq_lens_cpu):\n    seq_lens = seq_lens_cpu.tolist()\n    return max(seq_lens)\n"),
        Valid("def forward(lens_cpu):\n    for lens in lens_cpu:\n        yield lens.item()\n"),
        Valid("import torch_npu\ndef forward(batch):\n    return batch.seq_lens.tolist(), batch.seq_lens_cpu\n"),
        Valid("import torch\ndef forward(x, n):\n    y = x.cuda()\n"
              "    return torch.arange(n), torch.zeros(y.size(0), 4), [0] * len(y), y.view(y.shape[0], -1)\n"),
        Valid("from dataclasses import dataclass\n@dataclass\nclass Case:\n    seq_lens: tuple[int, ...]\n"
              "def forward(case, seq_lens_cpu):\n    for i in range(3):\n        n = case.seq_lens[i]\n"
              "        yield range(n)\n"),
        Valid("def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):\n"
              "    return forward_batch.seq_lens.cpu() if in_capture else forward_batch.seq_lens_cpu\n"),
    )
    invalid_examples = (
        # `lens` is a CUDA tensor, so a tensor made on its device is one too.
        Invalid("import torch\ndef forward(n):\n    lens = torch.ones(n, device='cuda')\n"
                "    mask = torch.zeros(n, device=lens.device) > 0\n    return mask.any().item()\n",
                None, message_contains="CUDA tensor"),
        Invalid("import torch\ndef train(xs, accumulation_steps):\n    total = 0\n    for i, x in enumerate(xs):\n"
                "        loss = (x.cuda() ** 2).mean()\n        if (i + 1) % accumulation_steps == 0:\n"
                "            total += loss.item()\n", None, message_contains="in a loop"),
        Invalid("import torch\ndef positions(seq_lens, seq_lens_cpu, n):\n    for i in range(n):\n"
                "        p = torch.full((3, 1), seq_lens[i] - 1, device='cuda')\n",
                None, message_contains="implicit `.item()`"),
        Invalid("import torch\ndef train(xs):\n    total = 0\n    for x in xs:\n"
                "        loss = (x.cuda() ** 2).mean()\n        total += loss.item()\n",
                None, message_contains="`.item()` reads a CUDA tensor back to the host (in a loop)"),
        Invalid("import torch\nclass M:\n    def __init__(self):\n"
                "        self.buf = torch.zeros(8, device='cuda')\n"
                "    def forward(self, x):\n        return self.buf[:4].tolist()\n",
                None, message_contains="in `forward`"),
        Invalid("import torch\ndef forward(x):\n    lens = torch.ones(4, dtype=torch.int32, device='cuda:0')\n"
                "    return int(lens.max())\n", None, message_contains="`int(<tensor>)`"),
        Invalid("import torch\ndef step(x):\n    y = x.to('cuda')\n    return y.to('cpu')\n",
                None, message_contains='.to("cpu")'),
        Invalid("import torch\ndef init_forward_metadata(self, batch):\n    lens = torch.ones(4, device='cuda')\n"
                "    if any(lens):\n        pass\n",
                None, message_contains="`any(<tensor>)` (one read per element) reads a CUDA tensor back to the host "
                                       "(in `init_forward_metadata`)"),
        Invalid("import torch\ndef forward_batch_generation(self, x):\n    return min(x.cuda())\n",
                None, message_contains="`min(<tensor>)`"),
        Invalid("def run_batch(self, batch):\n    return batch.seq_lens_gpu.tolist()\n",
                None, message_contains="`.tolist()` reads a CUDA tensor back to the host (in `run_batch`)"),
        Invalid("def init_forward_metadata(self, forward_batch):\n    return forward_batch.seq_lens.max().item()\n"
                "def prepare(forward_batch):\n    return forward_batch.seq_lens_cpu\n",
                None, message_contains="`.item()` reads a CUDA tensor back to the host"),
        Invalid("def init_forward_metadata_target_verify(self, seq_lens, seq_lens_cpu=None):\n"
                "    if seq_lens_cpu is None:\n        seq_lens_cpu = seq_lens.tolist()\n",
                None, message_contains="`.tolist()` reads a CUDA tensor back to the host"),
        Invalid("import torch\ndef forward(x):\n    lens = torch.ones(4, dtype=torch.int64, device='cuda')\n"
                "    for i in range(4):\n        x = x + torch.arange(lens[i], device='cuda').sum()\n",
                None, message_contains="`torch.arange(<tensor>)` (an implicit `.item()`) reads a CUDA tensor"),
        Invalid("def prepare_attn_masks(self, forward_batch, input_ids):\n"
                "    for i in range(forward_batch.batch_size):\n"
                "        mask = input_ids.new_zeros(forward_batch.extend_seq_lens[i])\n"
                "    return forward_batch.extend_seq_lens_cpu\n", None, message_contains="`.new_zeros(<tensor>)`"),
        Invalid("import torch\ndef step(x):\n    n = x.cuda().sum()\n    return [0] * n\n",
                None, message_contains="`[...] * <tensor>` (an implicit `.item()`)"),
        Invalid("def init_forward_metadata(self, forward_batch):\n    if not self.is_capturing:\n"
                "        return forward_batch.seq_lens.cpu()\n    return forward_batch.seq_lens_cpu\n",
                None, message_contains="`.cpu()` reads a CUDA tensor"),
    )

    def report_site(self, node, site, context) -> None:
        self.report(node, f"{site.what} reads a CUDA tensor back to the host{where(context)}: the host waits "
                          "until the GPU stream drains; keep the value on the device or read it less often")

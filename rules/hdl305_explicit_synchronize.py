from __future__ import annotations

from h2dlint.facts import Placement
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syncs import EXPLICIT, HOT, SyncReporter, where


class ExplicitSynchronize(SyncReporter, Rule):
    """
    ## What it does
    Finds `torch.cuda.synchronize()` (and `torch.accelerator.synchronize()`),
    `stream.synchronize()` and `event.synchronize()` in code that runs often: a loop,
    `forward`, a training or decoding step. A receiver counts as a stream or event when
    it is built by `torch.cuda.Stream/Event/current_stream/default_stream` or its name
    ends in `stream` or `event`. Off by default (`--extend-select HDL305`): on real code most
    such calls are deliberate waits (benchmarks, reading non_blocking copies), which h2dlint
    cannot tell from accidental ones. Under graph capture they are always HDL501 errors;
    in functions h2dlint cannot tell to be hot or cold no rule reports them (most were
    timing brackets and one-off waits on held-out trees).

    ## Why is this bad?
    Each call blocks the host until the device (or the stream, or the work before the
    event) has finished: the CPU stops running ahead and the GPU idles while the next
    kernels are launched. Ordering work between streams needs no host wait:
    `stream.wait_stream(other)` or `stream.wait_event(event)` order it on the GPU.
    `torch.cuda.set_sync_debug_mode` does *not* report `torch.cuda.synchronize()` or
    `Event.synchronize()`, so these are easy to miss at run time.

    Benchmarks that time a loop need a synchronize; such a call deserves a
    `# noqa: HDL305`.

    ## Example
    ```python
    for batch in loader:
        out = model(batch)
        torch.cuda.synchronize()
    ```

    Use instead:
    ```python
    for batch in loader:
        out = model(batch)
    torch.cuda.synchronize()  # once, where the host really needs the results
    ```

    ## Fix safety
    No fix is offered: removing a synchronize is safe only where nothing on the host
    depends on the finished work (timing, reading a non_blocking device-to-host copy),
    which h2dlint cannot tell.

    ## References
    - CUDA Runtime API: `cudaDeviceSynchronize`, `cudaStreamSynchronize`, `cudaEventSynchronize`
    - PyTorch: `torch.cuda.Stream.wait_stream`, `torch.cuda.Stream.wait_event`
    """

    code = "HDL305"
    name = "explicit-synchronize"
    summary = "`torch.cuda.synchronize()` / `stream.synchronize()` in hot code blocks the host"
    kinds = frozenset({EXPLICIT})
    where = {Placement.GPU: HOT, Placement.UNKNOWN: HOT}
    default_enabled = False
    prefilter = ("synchronize(",)
    text_test_spares_only_parsing = True

    valid_examples = (
        Valid("import torch\ndef benchmark_setup():\n    torch.cuda.synchronize()\n"),
        Valid("import torch\ndef forward(x):\n    x.synchronize()\n"),
        Valid("import torch\ndef forward(barrier):\n    barrier.synchronize()\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef run(model, xs):\n    for x in xs:\n        model(x)\n"
                "        torch.cuda.synchronize()\n", None, message_contains="(in a loop)"),
        Invalid("import torch\ndef forward(self, x):\n    s = torch.cuda.Stream()\n    s.synchronize()\n",
                None, message_contains="in `forward`"),
        Invalid("def step(self):\n    self.copy_event.synchronize()\n", None,
                message_contains="Stream/Event.synchronize()"),
    )

    def report_site(self, node, site, context) -> None:
        self.report(node, f"{site.what}{where(context)} blocks the host until the GPU work finishes; order "
                          "work between streams with `wait_stream`/`wait_event`, or synchronize once, outside "
                          "the hot path")

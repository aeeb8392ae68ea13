"""Candidates named by several rules: each rule still sees its own, on both parse paths."""

import pytest

from .helpers import lint

# `torch.tensor(xs).to(...)` (HDL104's candidate) and `torch.tensor(xs)` (HDL403's kind of call)
# start at the same place; keying candidates by their start alone once lost HDL104's finding.
SAME_START = """\
import torch
def f(xs, device):
    a = torch.tensor(xs).to(device, non_blocking=True)
    return a
def g(xs, out):
    p = torch.tensor(xs, pin_memory=True)
    out.copy_(p, non_blocking=True)
"""


@pytest.mark.parametrize("full_parse", [False, True], ids=["candidates", "full"])
def test_rules_whose_candidates_start_at_one_place_all_report(full_parse):
    alone = [(finding.code, finding.start.line) for finding in lint(SAME_START, "HDL104", full_parse=full_parse)]
    together = [(finding.code, finding.start.line)
                for finding in lint(SAME_START, "HDL104", "HDL403", full_parse=full_parse)]
    assert alone == [("HDL104", 3)]
    assert together == [("HDL104", 3), ("HDL403", 6)]



# HDL302 needs GPU evidence in the text or a hot function: its text prefilter must see configured globs too.
GLOB_HOT = """\
import torch
def run_policy_step(x):
    return x[torch.isnan(x)]
"""


def test_a_configured_hot_function_glob_reaches_the_text_prefilter():
    assert [finding.code for finding in lint(GLOB_HOT, "HDL302", hot_functions=("run_*_step",))] == ["HDL302"]
    assert lint(GLOB_HOT, "HDL302") == []


# The read is in `forward`; what `self.buf` / `self.lens` hold is decided in `__init__`, where no candidate is:
# its bindings and parameters must still be found in that method.
SELF_SET_IN_ANOTHER_METHOD = """\
import torch
class M:
    def __init__(self, seq_lens, seq_lens_cpu):
        x = torch.zeros(3, device="cuda")
        self.buf = x
        self.lens = seq_lens
    def forward(self):
        return self.buf.item(), self.lens.item()
"""


@pytest.mark.parametrize("full_parse", [False, True], ids=["candidates", "full"])
def test_self_attributes_set_in_another_method_keep_their_placement(full_parse):
    findings = lint(SELF_SET_IN_ANOTHER_METHOD, "HDL201", "HDL202", full_parse=full_parse)
    assert [(finding.code, finding.start.column) for finding in findings] == [("HDL201", 15), ("HDL201", 32)]


# `device` is a CUDA device only because the project says so (`gpu-device-names`); HDL106 needs GPU evidence in the
# text (its prefilter) and in the placement of `counts`.
CONFIGURED_DEVICE = """\
import torch
def forward(n: int, slots, device):
    counts = torch.zeros(slots, device=device)
    counts[0] = n
    return counts
"""


@pytest.mark.parametrize("full_parse", [False, True], ids=["candidates", "full"])
def test_configured_gpu_device_names_make_a_device_cuda(full_parse):
    found = lint(CONFIGURED_DEVICE, "HDL106", gpu_device_names=("device",), full_parse=full_parse)
    assert [(finding.code, finding.start.line) for finding in found] == [("HDL106", 4)]
    assert lint(CONFIGURED_DEVICE, "HDL106", gpu_device_names=("self.device",), full_parse=full_parse) == []


# `_is_boolean` looks up the bindings of a name only when some assignment in the file may bind it to a mask:
# each way of binding one must still count.
MASKS_BOUND_EVERY_WAY = [
    "    m: torch.Tensor = y.float() > 0\n    return x[m]\n",
    "    if (m := y.float() > 0).any():\n        return x[m]\n",
    "    m |= torch.isnan(y)\n    return x[m]\n",
    "    a = y.float() > 0\n    m = a\n    return x[m]\n",
    "    m = bad(y)\n    return x[m]\n",
    "    m = y.to(torch.bool)\n    return x[m]\n",
    "    m = torch.zeros_like(y, dtype=torch.bool)\n    return x[m]\n",
]


@pytest.mark.parametrize("full_parse", [False, True], ids=["candidates", "full"])
@pytest.mark.parametrize("body", MASKS_BOUND_EVERY_WAY)
def test_a_mask_bound_to_a_name_in_any_way_is_found(body, full_parse):
    code = f"import torch\nfrom torch import isnan as bad\ndef forward(x, y):\n{body}"
    findings = lint(code, "HDL302", full_parse=full_parse)
    assert [(finding.code, finding.start.line) for finding in findings] == [("HDL302", code.count("\n"))]


def test_a_name_bound_to_no_mask_is_no_mask():
    assert lint("import torch\ndef forward(x, y):\n    m = y.sum()\n    return x[m]\n", "HDL302") == []


# A loss added up per batch: HDL205 reports it where it is on; without it, the read is the other rules' to report.
ACCUMULATED = """\
def train(model, batches):
    total = 0.0
    for batch in batches:
        total += model(batch.cuda()).item()
    return total
"""


@pytest.mark.parametrize("codes, reported", [
    (("HDL205",), ["HDL205"]),
    (("HDL202",), ["HDL202"]),
    (("HDL201", "HDL202"), ["HDL202"]),
    (("HDL202", "HDL205"), ["HDL205"]),
    (("HDL201",), []),
])
def test_a_read_added_to_a_running_total_is_reported_once_by_the_rules_selected(codes, reported):
    assert [finding.code for finding in lint(ACCUMULATED, *codes)] == reported

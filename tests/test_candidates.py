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
def run_train_step(x):
    return x[torch.isnan(x)]
"""


def test_a_configured_hot_function_glob_reaches_the_text_prefilter():
    assert [finding.code for finding in lint(GLOB_HOT, "HDL302", hot_functions=("run_*_step",))] == ["HDL302"]
    assert lint(GLOB_HOT, "HDL302") == []


# The read is in `forward`; what `self.buf` / `self.lens` hold is decided in `__init__`, which the anchored walk
# skips (no candidate line there): its bindings and parameters must still be found in that method.
SELF_SET_IN_A_SKIPPED_METHOD = """\
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
def test_self_attributes_set_in_a_skipped_method_keep_their_placement(full_parse):
    findings = lint(SELF_SET_IN_A_SKIPPED_METHOD, "HDL201", "HDL202", full_parse=full_parse)
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


# Found by a second reader of the candidate filters: each input gave a finding on the full path that the fast
# path (candidates, anchored walk) dropped.
FAST_PATH_MISSES = [
    # HDL104's candidate filter read the binding of `b` at the name's line, where the statement's own `b = ...`
    # is already visible, not at the copy's first line as the visitor does.
    ("HDL104", "import torch\ndef f(n, device):\n    b = torch.empty(n)\n    b = (\n        b).to(device, "
               "non_blocking=True)\n    return b\n"),
    # An element write whose `]` and `=` are on different lines matches no anchor line, so the anchored walk
    # skips its statement; HDL108 must still find it among every node.
    ("HDL108", "import torch\ndef step(self, x):\n    flags = x.cuda()\n    flags[0, 0] = True\n"
               "    (flags[0, 1]) = True\n"),
]


@pytest.mark.parametrize("code, source", FAST_PATH_MISSES, ids=[code for code, _ in FAST_PATH_MISSES])
def test_the_fast_path_finds_what_the_full_path_finds(code, source):
    full = [(finding.code, finding.start) for finding in lint(source, code, full_parse=True)]
    assert full  # the case still has something to find
    assert [(finding.code, finding.start) for finding in lint(source, code)] == full


@pytest.mark.parametrize("text", [
    "import torch\rdef f(ids, device):\r    x = torch.tensor([1, 2]).to(device)\r    return x\r",
    "\x0cimport torch\ndef f(ids, device):\n\x0c    x = torch.tensor([1, 2]).to(device)\n    return x\n",
], ids=["cr-line-endings", "form-feeds"])
def test_text_that_libcst_does_not_render_back_exactly_keeps_its_fixes_on_both_paths(text):
    # LibCST drops a final "\r" and a form feed before code when it renders a module: the whole-file path must
    # still offer the fix the candidate path offers (and neither may edit by positions it has not checked).
    fast, full = (lint(text, "HDL102", full_parse=full_parse) for full_parse in (False, True))
    assert [finding.fix for finding in fast] == [finding.fix for finding in full]
    assert len(fast) == 1 and fast[0].fix is not None


@pytest.mark.parametrize("imports", ["if True: import torch as th\n", "import os; import torch as th\n",
                                     "\x0cimport torch as th\n", "try: import torch as th\nexcept ImportError: pass\n"])
def test_the_anchored_walk_sees_imports_wherever_they_sit_on_a_line(imports):
    # The walk keeps only statements on lines an anchored rule names, and lines with imports: an import that
    # does not start its line must still be seen, or `th.tensor` is not known to be torch's.
    code = imports + "def f(ids, device):\n    x = th.tensor([1, 2]).to(device)\n    return x\n"
    fast, full = (lint(code, "HDL102", full_parse=full_parse) for full_parse in (False, True))
    assert len(fast) == 1 and fast == full

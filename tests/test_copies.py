"""The copy rules across rules and parse paths: precedence over HDL101, method chains broken over lines."""

import pytest

from h2dlint.copies import may_copy_to_a_named_device

from .helpers import fix, lint

CHAIN = ("import torch\ndef forward(ids, device):\n    x = (\n        torch.tensor([1, 2])\n        .to(device)\n    )\n"
         "    return x\n")


@pytest.mark.parametrize("full_parse", [False, True])
def test_a_method_chain_broken_over_lines_is_checked_and_fixed(full_parse):
    findings = lint(CHAIN, "HDL102", full_parse=full_parse)
    assert [(f.code, f.start.line, f.start.column) for f in findings] == [("HDL102", 4, 8)]
    assert fix(CHAIN, "HDL102") == CHAIN.replace(
        "torch.tensor([1, 2])\n        .to(device)",
        "torch.tensor([1, 2], pin_memory=torch.cuda.is_available())\n        .to(device, non_blocking=True)")


def test_constant_uploads_are_reported_by_hdl103_only():
    code = "import torch\ndef forward(device):\n    return torch.tensor([0, 0], device=device), torch.tensor([0, 1], device=device)\n"
    assert [(f.code, f.start.column) for f in lint(code, "HDL101", "HDL103")] == [("HDL103", 11), ("HDL101", 48)]


def test_fixes_of_the_family_apply_together():
    code = ("import torch\ndef forward(ids, device):\n    a = torch.tensor(1.0, device=device)\n"
            "    b = torch.tensor(ids).to(device, non_blocking=True)\n    return a, b\n")
    fixed = fix(code, "HDL1")
    assert "torch.ones((), device=device)" in fixed
    assert "torch.tensor(ids, pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)" in fixed
    assert lint(fixed, "HDL1") == []


@pytest.mark.parametrize("device, safe", [
    ("th.device('cuda', 0)", True),  # torch.device under the file's alias: no side effect
    ("dev('cuda', 0)", True),  # imported as `from torch import device as dev`
    ("device('cuda', 0)", False),  # the file's own function named `device`: it may have side effects
])
def test_moving_the_device_after_other_arguments_is_safe_only_for_torch_device(device, safe):
    code = ("import torch as th\nfrom torch import device as dev\ndef device(kind, index):\n    return kind\n"
            f"def forward(ids):\n    return th.tensor(ids, device={device}, dtype=th.int64)\n")
    [finding] = lint(code, "HDL101")
    assert ("the device is now evaluated after the other arguments" not in finding.fix.message) is safe


@pytest.mark.parametrize(("text", "expected"), [
    ("x.to(device)", True), ("x.to(self.dev)", True), ("x.to(torch.device(k))", True), ("x.to(DEVICE)", True),
    ("from torch import device as D\nx.to(D(0))", True),
    ("x.to(torch.float32)", False), ("x.to('cpu')", False), ("x.to(y)", False), ("x.to(other.dtype)", False),
])
def test_without_gpu_evidence_a_copy_needs_the_word_of_a_device(text, expected):
    assert may_copy_to_a_named_device(text) is expected


DEFAULT_DEVICE = """\
import torch
class Model(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.build(n)
    def build(self, n):
        self.ids = torch.arange(n)
    def forward(self, x):
        return x + torch.arange(3)
def load(device):
    with torch.device(device):
        model = Model(4)
    with torch.device("cpu"):
        spare = torch.arange(2)
    return model, spare
"""


def test_may_run_under_default_device_follows_the_block_and_the_constructor_it_runs():
    import ast

    from h2dlint.copies import may_run_under_default_device
    from h2dlint.facts import FileFacts
    from h2dlint.source import LineIndex

    facts = FileFacts(ast.parse(DEFAULT_DEVICE), LineIndex(DEFAULT_DEVICE))
    found = {line: may_run_under_default_device(facts, line) for line in range(1, 16)}
    assert found[12] == "under `with torch.device(...)` (line 11)"
    assert found[4] == "in `__init__`, which runs under `with torch.device(...)` (line 11)"
    assert found[7] == "in `build`, which runs under `with torch.device(...)` (line 11)"  # called by `__init__`
    assert found[9] is None, "`forward` runs later, outside the block"
    assert found[14] is None, "a CPU default device pins fine"
    with_default = "import torch\ntorch.set_default_device('cuda:0')\ndef forward(n):\n    return torch.arange(n)\n"
    facts = FileFacts(ast.parse(with_default), LineIndex(with_default))
    assert may_run_under_default_device(facts, 4) == "`torch.set_default_device` is called on line 2"


def test_a_local_made_when_it_is_none_is_no_cache():
    # `if mask is None: mask = ...` makes a default on every call: the copy is reported, unlike one filling a cache.
    code = ("import torch\ndef forward(x, lens, mask=None):\n    if mask is None:\n"
            "        mask = torch.tensor(lens, device=x.device)\n    return x * mask\n")
    assert [finding.code for finding in lint(code, "HDL101")] == ["HDL101"]
    cached = code.replace("mask is None", "self._mask is None").replace("        mask =", "        self._mask =")
    assert lint(cached.replace("def forward(x,", "def forward(self, x,"), "HDL101") == []


def test_work_behind_an_early_return_on_its_own_flag_runs_once():
    # `if self._registered: return ... self._registered = True`: the copy runs once per object, unless code that may
    # run every step sets the flag back; a module's probe behind a global flag or cache runs once per process.
    code = ("import torch\nclass Camera(torch.nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self._registered = False\n"
            "    def forward(self, x):\n        if self._registered:\n            return x\n"
            "        self.pose = torch.tensor([0.0, 1.0], device=x.device)\n        self._registered = True\n"
            "        return x\n")
    assert lint(code, "HDL101") == []
    rearmed = code + "    def reset(self):\n        self._registered = False\n"
    assert [(finding.code, finding.start.line) for finding in lint(rearmed, "HDL101")] == [("HDL101", 9)]
    probe = ("import torch\n_OK = None\ndef forward(x):\n    global _OK\n    if _OK is not None:\n        return _OK\n"
             "    t = torch.tensor([1, 2], device=x.device)\n    _OK = bool(t.sum())\n    return _OK\n")
    assert lint(probe, "HDL101") == []
    assert [finding.code for finding in lint(probe.replace("    global _OK\n", ""), "HDL101")] == ["HDL101"]


def test_occasional_code_in_a_module_level_loop_is_checked_without_error():
    # Module-level code in a loop, but under a periodic guard or filling a cache: neither per-step nor run once by
    # a function's name (a function-less context the audit rules once asked the name of).
    code = ("import torch\n_CACHE = {}\nt = torch.zeros(4, device='cuda')\nfor step in range(300):\n"
            "    t[1] = 2\n"
            "    if step % 100 == 0:\n        t[0] = 1\n        print(t.sum().item())\n"
            "    if step not in _CACHE:\n        _CACHE[step] = torch.tensor([step], device='cuda')\n")
    assert [(finding.code, finding.start.line) for finding in lint(code)] == [("HDL106", 5)]


CONVERTED_IN_PLACE = """\
import torch


class Coder:
    def __init__(self, ranges):
        self.ranges = ranges

    def forward(self, heat):
        self.ranges = torch.tensor(self.ranges, device=heat.device)
        return self.ranges
"""


def test_an_attribute_converted_in_place_copies_host_data_only_once():
    # mmdet3d's CenterPoint coder: after the first call the attribute holds the device tensor.
    assert lint(CONVERTED_IN_PLACE, "HDL101") == []
    # Host data assigned again outside the constructor is copied again at the next call.
    again = CONVERTED_IN_PLACE + "\n    def reset(self, ranges):\n        self.ranges = list(ranges)\n"
    assert [finding.start.line for finding in lint(again, "HDL101")] == [9]


def test_an_attribute_of_another_object_converted_every_call_is_a_copy():
    # `batch.boxes` of a fresh batch each time: host data at every call (a second reader's case).
    code = ("import torch\ndef batches(loader, device):\n    for batch in loader:\n"
            "        batch.boxes = torch.tensor(batch.boxes, device=device)\n        yield batch\n")
    assert [finding.start.line for finding in lint(code, "HDL101")] == [4]


def test_a_full_of_zeros_is_no_empty_tensor():
    # `torch.full(shape, 0)`: the 0 is the fill value; the tensor has elements to copy.
    code = "import torch\ndef forward(x, shape):\n    return torch.full(shape, 0).to(x.device)\n"
    assert [finding.code for finding in lint(code, "HDL102")] == ["HDL102"]
    empty = "import torch\ndef forward(x, n):\n    return torch.full((0, n), 1.0).to(x.device)\n"
    assert lint(empty, "HDL102") == []


def test_new_tensor_of_a_host_tensor_is_a_copy():
    code = ("import torch\ndef forward(x, values):\n    t = torch.zeros(3).new_tensor(values)\n"
            "    return x.new_tensor(t)\n")
    assert [finding.start.line for finding in lint(code, "HDL101")] == [4]
    on_device = "import torch\ndef forward(x):\n    m = x.new_zeros(3)\n    return x.new_tensor(m)\n"
    assert lint(on_device, "HDL101") == []


def test_a_host_tensor_computed_from_factories_may_be_on_the_default_device():
    code = "import torch\ndef forward(x, n):\n    return (torch.arange(n) * 2 - 1).to(x.device)\n"
    assert [finding.code for finding in lint(code, "HDL102")] == ["HDL102"]
    under_default = code.replace("import torch\n", "import torch\ntorch.set_default_device('cuda')\n")
    assert lint(under_default, "HDL102") == []
    # moved to the host, it is there under any default device
    moved = under_default.replace("(torch.arange(n) * 2 - 1)", "x.cpu()")
    assert [finding.code for finding in lint(moved, "HDL102")] == ["HDL102"]


# Methods of one class whose only sign of running more than once is a loop, over different things.
LOOPS = """import torch
class Scaler:
    def members(self, device):
        for member in self.members:
            torch.tensor(member.values, device=device)
    def entries(self, device, table):
        for name, values in table.items():
            torch.tensor(values, device=device)
    def submodules(self, model, device):
        for i, module in enumerate(model.named_modules()):
            torch.tensor(module.scale, device=device)
    def graph_pass(self, device):
        for node in self.graph.nodes:
            torch.tensor(node.args, device=device)
    def batches(self, device):
        for ids in self.val_loader:
            torch.tensor(ids, device=device)
    def indices(self, device, n):
        for i in range(n):
            torch.tensor(self.members[i].values, device=device)
    def items_of_a_local(self, device, batch):
        for ids in batch:
            torch.tensor(ids, device=device)
    def nested(self, device, n):
        for step in range(n):
            for member in self.members:
                torch.tensor(member.values, device=device)
    def one_line_inner(self, device, n):
        for step in range(n):
            for member in self.members: torch.tensor(member.values, device=device)
    def one_line_outer(self, device, n):
        for member in self.members:
            for i in range(n): torch.tensor(member.values, device=device)
    def drained(self, device):
        for name, queue in self.queues.items():
            while queue:
                torch.tensor(queue.pop(), device=device)
    async def streamed(self, device):
        async for ids in self.members:
            torch.tensor(ids, device=device)
    def camel_case(self, device):
        for ids in self.valLoader:
            torch.tensor(ids, device=device)
    def handed(self, device, metadata):
        for request in metadata.requests:
            torch.tensor(request.ids, device=device)
"""


def test_a_loop_over_what_an_object_holds_is_no_sign_of_running_every_step():
    # Over an attribute of `self`, a mapping's entries, a module's submodules or its graph's nodes, a loop repeats
    # once per item the object holds: no copy reported. Over a loader (`valLoader` too), a range, a local's items,
    # an async stream or an attribute of what the call is handed, and in such a loop inside one of those or around
    # one (sharing its lines or not), the copy repeats: reported, "in a loop".
    findings = lint(LOOPS, "HDL101")
    assert [(f.start.line, dict(f.evidence)["hot"]) for f in findings] == [
        (17, "in a loop"), (20, "in a loop"), (23, "in a loop"), (27, "in a loop"), (30, "in a loop"),
        (33, "in a loop"), (37, "in a loop"), (40, "in a loop"), (43, "in a loop"), (46, "in a loop")]

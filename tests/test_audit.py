"""The audit of code h2dlint cannot tell to be hot or cold (HDL204, and HDL108 outside hot code), and the value
reasoning it rests on."""

import ast
from pathlib import Path

import pytest

from h2dlint.engine import process_file
from h2dlint.facts import FileFacts
from h2dlint.hotness import is_off_the_step_path, is_test_path
from h2dlint.source import LineIndex, decode_source
from h2dlint.values import is_certainly_tensor

from .helpers import lint, linter_for


def certainly_tensor(code: str) -> bool:
    """Whether the value assigned to TARGET in `code` is certainly a tensor."""
    tree = ast.parse(code)
    facts = FileFacts(tree, LineIndex(code))
    target = next(node for node in ast.walk(tree)
                  if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "TARGET")
    return is_certainly_tensor(facts, target.value, target.lineno)


@pytest.mark.parametrize(("code", "expected"), [
    # A rebinding reads the earlier value: `labels = labels[...]` is a tensor when the parameter is one.
    ("import torch\ndef f(labels: torch.Tensor, shift: bool):\n    if shift:\n        labels = labels[..., 1:]\n"
     "    labels = labels.reshape(-1)\n    valid = labels != -100\n    n_valid = valid.sum()\n    TARGET = n_valid\n",
     True),
    ("def f(labels):\n    labels = labels[1:]\n    TARGET = labels != -100\n", False),
    ("import torch\ndef f(x: torch.Tensor):\n    TARGET = x is None\n", False),
    ("import torch\ndef f(x: torch.Tensor):\n    TARGET = x == None\n", False),
    ("import torch\ndef f(x: torch.Tensor, xs):\n    TARGET = x in xs\n", False),
    ("import torch\ndef f(x: torch.Tensor):\n    TARGET = (x > 0).any()\n", True),
    ("import torch\ndef f(x: torch.Tensor):\n    TARGET = x.shape[0] == 0\n", False),
    # a reduction given `dim=` as ints is torch's (NumPy and pandas say `axis`, xarray names a dimension)
    ("import torch\ndef f(mask):\n    rows = ~mask.any(dim=-1)\n    TARGET = rows.any()\n", True),
    ("import torch\ndef f(x):\n    TARGET = x.sum(dim=(1, 2))\n", True),
    ("import torch\ndef f(x):\n    TARGET = x.max(dim=1)\n", False),  # (values, indices)
    ("import torch\ndef f(x):\n    TARGET = x.mean(dim='time')\n", False),
    ("import torch\ndef f(x):\n    TARGET = x.sum(axis=1)\n", False),
    ("def f(x):\n    TARGET = x.sum(dim=1)\n", False),  # no torch in the file
    # a name a method is called on, or indexed, is not None there: `rows = None` does not reach `rows.any()`
    ("import torch\ndef f(mask):\n    rows = None\n    if mask is not None:\n        rows = ~mask.any(dim=-1)\n"
     "    TARGET = rows.any()\n", True),
    ("import torch\ndef f(mask):\n    rows = None\n    if mask is not None:\n        rows = ~mask.any(dim=-1)\n"
     "    TARGET = rows[0]\n", True),
    ("import torch\ndef f(mask):\n    rows = None\n    if mask is not None:\n        rows = ~mask.any(dim=-1)\n"
     "    TARGET = rows\n", False),  # the name itself may still be None
    ("import torch\ndef f(mask):\n    rows = None\n    if mask is not None:\n        rows = [1, 2]\n"
     "    TARGET = rows.count(1)\n", False),
    ("import torch\ndef f():\n    rows = None\n    TARGET = rows.any()\n", False),
])
def test_comparisons_and_rebindings_of_tensors_are_tensors(code, expected):
    assert certainly_tensor(code) is expected


@pytest.mark.parametrize(("path", "expected"), [
    ("tests/test_model.py", True), ("pkg/testing/_internal/common.py", True), ("src/test/kernels/check.py", True),
    ("model_test.py", True), ("conftest.py", True), ("src/model.py", False), ("src/attest.py", False),
    ("src/latest/model.py", False), ("torchrec/distributed/test_utils/model_input.py", True),
    ("transformers/testing_utils.py", True), ("src/tester/model.py", False), ("src/testbed_model.py", False),
    ("src/testing_pipeline.py", False),  # often the evaluation on a test split, per batch
])
def test_test_modules_are_told_by_their_path(path, expected):
    assert is_test_path(path) is expected


@pytest.mark.parametrize(("path", "expected"), [
    ("tests/test_model.py", True), ("vllm/benchmarks/forward/capture.py", True), ("vllm/profiler/layerwise.py", True),
    ("ultralytics/utils/export/engine.py", True), ("ultralytics/engine/exporter.py", True),
    ("kv_connector/v1/decode_bench_connector.py", True), ("src/model.py", False),
    ("lerobot/processor/converters.py", False),  # per observation
    ("sglang/srt/model_executor/cuda_graph_capture.py", False), ("src/exported_names.py", False),
])
def test_modules_off_the_step_are_told_by_their_path(path, expected):
    assert is_off_the_step_path(path) is expected


SYNC_IN_A_HELPER = "import torch\ndef build(self, lens):\n    return torch.any(lens.cuda() > 0).item()\n"


def test_the_audit_skips_test_modules():
    linter = linter_for("HDL204")
    assert [f.code for f in linter.lint(decode_source(SYNC_IN_A_HELPER.encode(), Path("src/builder.py")))] == ["HDL204"]
    assert linter.lint(decode_source(SYNC_IN_A_HELPER.encode(), Path("tests/builder_helpers.py"))) == []
    assert linter.lint(decode_source(SYNC_IN_A_HELPER.encode(), Path("benchmarks/builder.py"))) == []


def test_a_test_folder_above_the_project_root_does_not_make_a_test_module(tmp_path, monkeypatch):
    project = tmp_path / "tests" / "project"
    project.mkdir(parents=True)
    (project / "builder.py").write_text(SYNC_IN_A_HELPER)
    monkeypatch.chdir(project)
    linter = linter_for("HDL204")
    # However the path is spelled (the cache keys it by its absolute path), the answer is the same.
    for spelling in (Path("builder.py"), project / "builder.py", Path("../project/builder.py")):
        assert [f.code for f in process_file(spelling, linter, "check").findings] == ["HDL204"], spelling


@pytest.mark.parametrize("function", ["build_meta", "_init_cache", "save_checkpoint", "extra_repr", "print_stats",
                                      "bench_decode", "tolist", "__array__", "test_build"])
def test_the_audit_skips_functions_named_for_set_up_io_printing_tests_and_conversions(function):
    code = SYNC_IN_A_HELPER.replace("build", function)
    assert [f.code for f in lint(code, "HDL204")] == (["HDL204"] if function == "build_meta" else [])


def test_each_sync_outside_hot_code_has_one_owner():
    """Outside hot code the audit takes what HDL201/HDL203 would report in hot code, not what HDL202 or HDL305
    would (a tensor it cannot place, an explicit synchronize); in hot code it reports nothing."""
    cold_or_warm = ("import torch\ndef helper(x, mask: torch.Tensor):\n    y = x.cuda()\n    a = y.sum().item()\n"
                    "    if mask.sum() == 0:\n        pass\n    torch.cuda.synchronize()\n")
    assert sorted((f.code, f.start.line) for f in lint(cold_or_warm, "ALL")
                  if f.code.startswith("HDL2") or f.code == "HDL305") \
        == [("HDL204", 4)]
    hot = cold_or_warm.replace("def helper", "def forward")
    assert sorted(f.code for f in lint(hot, "ALL") if f.code.startswith("HDL2") or f.code == "HDL305") \
        == ["HDL201", "HDL202", "HDL305"]


@pytest.mark.parametrize(("code", "expected"), [
    ("import torch\ndef forward(x):\n    y = x.cuda()\n    if _is_npu:\n        return y.sum().item()\n"
     "    return y.sum().item()\n", 1),
    ("import torch\ndef forward(x):\n    y = x.cuda()\n    if not y.is_cuda:\n        return y.tolist()\n", 0),
    ("import torch\ndef forward(x):\n    y = x.cuda()\n    return y.tolist() if is_xpu() else None\n", 0),
])
def test_no_sync_is_reported_in_branches_for_other_devices(code, expected):
    assert len(lint(code, "HDL201")) == expected


def test_a_comparison_with_a_host_scalar_tensor_is_no_possible_condition():
    layerdrop = "import torch\ndef forward(self, x):\n    p = torch.rand([])\n    if p < self.layerdrop:\n        return x\n"
    assert lint(layerdrop, "HDL202") == []
    assert [f.code for f in lint(layerdrop.replace("torch.rand([])", "x.sum()").replace("(self, x)",
                                                                                     "(self, x: torch.Tensor)"),
                                 "HDL202")] == ["HDL202"]


@pytest.mark.parametrize(("code", "expected"), [
    ("import torch\ndef forward(x):\n    return x.cuda().numpy()\n", []),
    ("import torch\ndef forward(x):\n    return x.cuda().numpy(force=True)\n", ["HDL201"]),
    ("import torch\ndef forward(x):\n    return float(torch.cuda.memory_allocated())\n", []),
    ("import numpy as np\ndef forward(n):\n    return np.linspace(0, 1, n).tolist()\n", []),
    ("def forward(node_proxy):\n    return node_proxy.item()\n", []),
])
def test_reads_that_do_not_wait_for_the_gpu(code, expected):
    assert [f.code for f in lint(code, "HDL201", "HDL202")] == expected


def test_a_copy_to_a_host_device_object_is_a_read():
    code = "import torch\ndef forward(x):\n    return x.cuda().to(torch.device('cpu'))\n"
    assert [f.code for f in lint(code, "HDL201")] == ["HDL201"]


@pytest.mark.parametrize(("code", "expected"), [
    ("import torch\ndef forward(w, g):\n    proj = torch.dot(w.cuda(), g.cuda())\n    return g.sub(w, alpha=proj)\n",
     ["HDL201"]),
    ("import torch\ndef forward(w, g):\n    return torch.addcdiv(g, w, g, value=0.5), g.sub(w, alpha=2)\n", []),
    ("import torch\ndef step(xs):\n    for x in xs:\n        yield float(x.float().sum())\n", ["HDL202"]),
    ("import numpy as np\ndef step(xs):\n    for x in xs:\n        yield float(x.sum())\n", []),
])
def test_scalar_arguments_and_tensor_only_methods(code, expected):
    assert [f.code for f in lint(code, "HDL201", "HDL202")] == expected

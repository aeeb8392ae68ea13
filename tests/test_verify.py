"""The runtime verifier, on the CPU here; the tests marked `cuda` run on a GPU (scripts/gpu_check.sh)."""

import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from h2dlint.source import decode_source
from h2dlint.verify.instrument import PROBE_NAME, instrument
from h2dlint.verify.replay import load_module

torch = pytest.importorskip("torch")
from h2dlint.verify.runtime import Recorder  # noqa: E402

ROOT = Path(__file__).parent.parent
H2DLINT = [sys.executable, "-m", "h2dlint"]


def instrumented_module(tmp_path, code: str):
    path = tmp_path / "program.py"
    path.write_text(code)
    ids = itertools.count(1)
    result = instrument(decode_source(code.encode(), path), lambda: next(ids))
    recorder = Recorder()
    recorder.register(result.sites)
    module = load_module(path, "program", result.text, {PROBE_NAME: recorder.probe})
    return module, result, recorder


def test_site_arguments_run_once_and_the_program_keeps_the_original_result(tmp_path):
    code = textwrap.dedent("""\
        import torch
        calls = []
        def next_batch():
            calls.append(1)
            return [len(calls), 2, 3]
        def f(device):
            return torch.tensor(
                next_batch(),  # evaluated once, shared by both forms
                device=device,
            )
        def after():
            return 1
        """)
    module, result, recorder = instrumented_module(tmp_path, code)
    assert len(result.sites) == 1 and result.skipped == []
    assert result.text.count("\n") == code.count("\n")
    assert module.after.__code__.co_firstlineno == 11, "instrumenting must not move lines"
    value = module.f("cpu")
    assert module.calls == [1]
    assert torch.equal(value, torch.tensor([1, 2, 3]))
    [record] = recorder.records.values()
    assert (record.hits, record.compared, record.equal, record.gpu_checked) == (1, 1, True, False)
    assert record.site.row == 7 and record.site.code == "HDL101"


def test_an_element_write_fix_is_probed_as_a_statement(tmp_path):
    code = textwrap.dedent("""\
        import torch
        DEVICE = "cuda"
        def forward(n: int):
            counts = torch.zeros((2, n), dtype=torch.int32, device=DEVICE)
            counts[1, -1] = 7.9  # the assignment truncates to int32, and so must the fix
            return counts
        """)
    module, result, recorder = instrumented_module(tmp_path, code)
    assert [site.code for site in result.sites] == ["HDL106"] and result.skipped == []
    assert result.text.count("\n") == code.count("\n")
    module.DEVICE = "cpu"
    assert torch.equal(module.forward(3), torch.tensor([[0, 0, 0], [0, 0, 7]], dtype=torch.int32))
    [record] = recorder.records.values()
    assert (record.hits, record.compared, record.equal) == (1, 1, True)


def test_probe_reports_a_fixed_form_that_differs_and_returns_the_original():
    from h2dlint.verify.instrument import Site

    recorder = Recorder()
    recorder.register([Site(1, "x.py", 3, 5, "HDL101", "")])
    broken = lambda data: torch.tensor(data, dtype=torch.float64)  # noqa: E731
    value = recorder.probe(1, lambda data: torch.tensor(data), broken, broken, [1.5, 2.5])
    assert value.dtype == torch.float32
    record = recorder.records[1]
    assert not record.equal and record.differences == ["result.dtype: torch.float32 became torch.float64"]
    raising = lambda data: torch.tensor(data).view(5)  # noqa: E731
    recorder.register([Site(2, "x.py", 4, 5, "HDL101", "")])
    recorder.probe(2, lambda data: torch.tensor(data), raising, raising, [1])
    assert recorder.records[2].errors and not recorder.records[2].equal


def test_probe_runs_the_pinned_branch_and_flags_a_pin_torch_refuses():
    from h2dlint.verify.instrument import Site

    numpy = pytest.importorskip("numpy")
    recorder = Recorder()
    recorder.register([Site(1, "x.py", 3, 5, "HDL101", ""), Site(2, "x.py", 4, 5, "HDL101", "")])
    original = lambda data: torch.tensor(data)  # noqa: E731
    pinned = lambda data: torch.tensor(data, pin_memory=True).to("cpu", non_blocking=True)  # noqa: E731
    # A list can be pinned: only the allocator is missing here, so the branch runs unpinned and is compared.
    recorder.probe(1, original, pinned, pinned, [1, 2])
    legal = recorder.records[1]
    assert (legal.equal, legal.pinned_branch_runs, legal.cuda_crashes, legal.errors) == (True, 1, [], [])
    # A numpy array cannot: torch refuses it before it needs an allocator, as it would on CUDA.
    value = recorder.probe(2, original, pinned, pinned, numpy.array([1, 2]))
    assert torch.equal(value, torch.tensor([1, 2])), "the program still gets the original's result"
    crashed = recorder.records[2]
    assert not crashed.equal and crashed.errors == []
    assert crashed.cuda_crashes == ["`torch.tensor` with pin_memory would raise on CUDA: "
                                    "RuntimeError: Can't pin tensor constructed from numpy"]


def verify(*args, cwd=ROOT):
    return subprocess.run([*H2DLINT, "verify", *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_fixtures_are_equivalent_on_cpu_and_gpu_checks_say_skipped():
    completed = verify("--output-format", "json")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    cases = json.loads(completed.stdout)
    assert {case["case"] for case in cases} == {path.name for path in (ROOT / "fixtures").iterdir() if path.is_dir()}
    for case in cases:
        assert case["equal"] is True and case["passed"] is True, case
        assert case["gpu_checked"] is False and case["sync_free"] is None and case["host_ms_before"] is None
        assert "without CUDA" in case["gpu_skipped_reason"]
    # its three HDL101 copies, and any other rule's fixable site in that file (HDL304's repeat_interleave)
    assert {case["case"]: case["sites_reached"] for case in cases}["HDL101-logits_processor"] >= 3
    assert "GPU checks skipped" in completed.stderr
    table = verify()
    assert table.returncode == 0 and "skipped" in table.stdout and "HDL101-logits_processor" in table.stdout


def test_broken_rewrites_are_flagged_on_cpu():
    completed = verify(ROOT / "verify_negatives", "--output-format", "json")
    assert completed.returncode == 1
    cases = {case["case"]: case for case in json.loads(completed.stdout)}
    assert not cases["lost_leaf"]["passed"]
    assert "meta device: result[0].is_leaf: True became False" in cases["lost_leaf"]["differences"]
    assert not cases["changed_dtype"]["passed"]
    assert "seed 1: result[0].dtype: torch.int64 became torch.int32" in cases["changed_dtype"]["differences"]
    for case, refused in (("pinned_numpy", "from numpy"), ("pinned_tensor", "from a variable")):
        # after.py's pin guard is false here; forced true, torch refuses the pin as it would on CUDA.
        assert not cases[case]["passed"] and not cases[case]["equal"]
        assert cases[case]["cuda_crashes"][0] == ("`torch.tensor` with pin_memory would raise on CUDA: "
                                                  f"RuntimeError: Can't pin tensor constructed {refused}")
    early = cases["early_host_read"]
    assert early["equal"] is None and early["gpu_checked"] is False and "needs CUDA" in early["skipped"]


PROGRAM_MODEL = """\
import torch


def offsets(lengths, device):
    return torch.tensor([sum(lengths[:i]) for i in range(len(lengths))], device=device)
"""

PROGRAM_MAIN = """\
import sys

import torch

from model import offsets

for step in range(3):
    scale = torch.tensor([0.5 * step + 1.0, 2.0], device="cpu" if step < 0 else sys.argv[1])
    lengths = offsets([2, 3, 4], sys.argv[1])
    ends = lengths + 4  # keeps the read of `scale` three statements away: a read sooner leaves nothing to fix
    print(step, lengths.tolist(), ends.tolist(), scale.tolist())
sys.exit(int(sys.argv[2]))
"""


@pytest.fixture
def program(tmp_path):
    (tmp_path / "model.py").write_text(PROGRAM_MODEL)
    (tmp_path / "train.py").write_text(PROGRAM_MAIN)
    return tmp_path


def test_run_replays_each_site_inside_the_program(program):
    plain = subprocess.run([sys.executable, "train.py", "cpu", "0"], capture_output=True, text=True, cwd=program)
    completed = verify("--run", "--output-format", "json", "--", "python", "train.py", "cpu", "0", cwd=program)
    assert completed.returncode == 0, completed.stderr
    assert plain.stdout in completed.stderr, "the program's own output must be unchanged"
    sites = {(Path(site["filename"]).name, site["row"]): site for site in json.loads(completed.stdout)}
    assert set(sites) == {("model.py", 5), ("train.py", 8)}
    for site in sites.values():
        assert site["code"] == "HDL101" and site["hits"] == 3 and site["equal"] is True
        assert site["gpu_checked"] is False and site["sync_free"] is None and site["host_ms_saved"] is None
    assert "GPU checks skipped" in completed.stderr

    table = verify("--run", "--", "python", "train.py", "cpu", "0", cwd=program)
    assert table.stdout.startswith(plain.stdout) and "model.py:5" in table.stdout


def test_run_passes_the_program_exit_status_through(program):
    completed = verify("--run", "--", "python", "train.py", "cpu", "3", cwd=program)
    assert completed.returncode == 3
    assert "exited with status 3" in completed.stderr


def test_run_instruments_only_the_included_folders(program):
    completed = verify("--run", "--include", program / "nowhere", "--output-format", "json", "--",
                       "python", "train.py", "cpu", "0", cwd=program)
    assert completed.returncode == 0 and json.loads(completed.stdout) == []


def test_the_linter_never_imports_torch(tmp_path):
    (tmp_path / "a.py").write_text("import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], device='cuda')\n")
    code = ("import sys\nfrom click.testing import CliRunner\nfrom h2dlint.cli import main\n"
            f"CliRunner().invoke(main, [{str(tmp_path)!r}, '--fix'])\nprint('torch' in sys.modules)\n")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.stdout.strip() == "False", completed.stderr
    assert "pin_memory=True" in (tmp_path / "a.py").read_text()


@pytest.mark.cuda
def test_fixtures_on_gpu_are_equivalent_sync_free_and_stop_the_stall():
    completed = verify("--output-format", "json")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for case in json.loads(completed.stdout):
        assert case["passed"] and case["equal"], case
        if case["sites"]:
            assert case["gpu_checked"] and case["sync_free"] and case["original_caught"], case
            assert case["host_ms_before"] > 10 * case["host_ms_after"], case


@pytest.mark.cuda
def test_broken_rewrites_are_flagged_on_gpu():
    completed = verify(ROOT / "verify_negatives", "--output-format", "json")
    assert completed.returncode == 1
    for case in json.loads(completed.stdout):
        assert case["equal"] is False and not case["passed"], case


@pytest.mark.cuda
def test_run_on_gpu_checks_sync_and_time(program):
    completed = verify("--run", "--output-format", "json", "--", "python", "train.py", "cuda", "0", cwd=program)
    assert completed.returncode == 0, completed.stderr
    for site in json.loads(completed.stdout):
        assert site["equal"] and site["gpu_checked"] and site["sync_free"] and site["original_caught"], site
        assert site["host_ms_saved"] > 1.0, site


def test_examples_replays_every_documented_fix_on_its_pinned_branch():
    completed = verify("--examples", "--output-format", "json")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    rows = {row["example"]: row for row in json.loads(completed.stdout)}
    assert all(row["passed"] for row in rows.values())
    # `torch.tensor(indices, pin_memory=...)` with `indices` a parameter: refused for numpy and tensor stand-ins,
    # which is why that fix is unsafe.
    unknown = rows["HDL101-invalid-3"]
    assert unknown["unsafe"] and unknown["runs"] and unknown["cuda_crashes"]
    assert {crash.split(":")[0] for crash in unknown["cuda_crashes"]} == {
        "forward(numpy, numpy)", "forward(numpy, tensor)", "forward(tensor, numpy)", "forward(tensor, tensor)"}
    safe = [row for row in rows.values() if not row["unsafe"] and row["pin_requests"]]
    assert safe and not any(row["cuda_crashes"] for row in safe)


@pytest.mark.cuda
def test_on_gpu_torch_refuses_the_pins_the_cpu_replay_calls_crashes():
    """What PinnedBranch reports without CUDA is what CUDA torch raises, and what it retries unpinned pins."""
    numpy = pytest.importorskip("numpy")
    for data, refused in ((numpy.arange(3), "Can't pin tensor constructed from numpy"),
                          (torch.arange(3), "Can't pin tensor constructed from a variable")):
        with pytest.raises(RuntimeError, match=refused):
            torch.tensor(data, pin_memory=True)
    assert torch.tensor([1, 2], pin_memory=True).is_pinned() and torch.zeros(3, pin_memory=True).is_pinned()
    with torch.device("cuda"), pytest.raises(RuntimeError):
        torch.zeros(3, pin_memory=True)  # a default-device context: pinning raises


def test_run_reports_a_fix_that_would_raise_on_cuda_inside_the_program(tmp_path):
    """`lengths` is a parameter, so the fix is unsafe; the program passes a numpy array, which the pinned
    branch cannot pin: without a GPU, --run still sees the crash the fix would cause on CUDA."""
    pytest.importorskip("numpy")
    (tmp_path / "batch.py").write_text(
        "import torch\n\n\ndef upload(lengths, device):\n    return torch.tensor(lengths, device=device)\n")
    (tmp_path / "main.py").write_text(
        "import numpy as np\n\nfrom batch import upload\n\n"
        "print(upload([1, 2], 'cpu').tolist(), upload(np.array([3, 4]), 'cpu').tolist())\n")
    completed = verify("--run", "--output-format", "json", "--", "python", "main.py", cwd=tmp_path)
    assert completed.returncode == 1, completed.stderr
    assert "[1, 2] [3, 4]" in completed.stderr, "the program still runs as it would"
    [site] = json.loads(completed.stdout)
    assert (Path(site["filename"]).name, site["row"], site["hits"]) == ("batch.py", 5, 2)
    assert site["pinned_branch_runs"] == 2 and not site["equal"]  # the list is pinned, the array refused
    assert site["cuda_crashes"] == ["`torch.tensor` with pin_memory would raise on CUDA: "
                                    "RuntimeError: Can't pin tensor constructed from numpy"]

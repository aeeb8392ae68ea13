"""Golden before/after files in fixtures/: the fix is exact, compiles, and keeps behaviour on CPU."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import linter_for

FIXTURES = sorted(path for path in (Path(__file__).parent.parent / "fixtures").iterdir() if path.is_dir())
# A fixture's functions are helpers its `replay` calls, and nothing shows that they run every step: the copies
# in them are findings with `copies-outside-hot-code` (fixtures/h2dlint.toml), as in any project that sets it.
CONFIG = Path(__file__).parent.parent / "fixtures" / "h2dlint.toml"


def fixture_code(folder: Path) -> str:
    return folder.name.split("-")[0]


@pytest.mark.parametrize("folder", FIXTURES, ids=[folder.name for folder in FIXTURES])
def test_fix_turns_before_into_after_exactly(folder, tmp_path):
    target = tmp_path / "before.py"
    shutil.copyfile(folder / "before.py", target)
    subprocess.run([sys.executable, "-m", "h2dlint", "check", str(target), "--fix", "--unsafe-fixes",
                    "--select", fixture_code(folder), "--config", str(CONFIG)], capture_output=True, check=False)
    assert target.read_bytes() == (folder / "after.py").read_bytes()


@pytest.mark.parametrize("folder", FIXTURES, ids=[folder.name for folder in FIXTURES])
def test_after_compiles_and_has_nothing_left_to_fix(folder):
    compile((folder / "after.py").read_bytes(), str(folder / "after.py"), "exec")
    from h2dlint.source import read_source

    linter = linter_for(fixture_code(folder), unsafe_fixes=True, copies_outside_hot_code=True)
    assert all(finding.fix is None for finding in linter.lint(read_source(folder / "after.py")))
    assert linter.lint(read_source(folder / "before.py")), "a fixture's before.py must show the problem"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pinned_branch(folder: Path):
    """after.py with its pin guards forced true (the branch a CUDA machine takes), and the PinStats its
    replays fill when run under `mode`."""
    from h2dlint.source import read_source
    from h2dlint.verify.pinning import PinStats, force_pinning_in, pinned_branch_mode
    from h2dlint.verify.replay import load_module

    text = force_pinning_in(read_source(folder / "after.py").text)
    stats = PinStats()
    return load_module(folder / "after.py", f"fixture_pinned_{folder.name.replace('-', '_')}", text), stats, \
        lambda: pinned_branch_mode(stats)


@pytest.mark.parametrize("folder", FIXTURES, ids=[folder.name for folder in FIXTURES])
def test_after_gives_equal_tensors_on_cpu_on_its_pinned_branch(folder):
    torch = pytest.importorskip("torch")
    before = load(folder / "before.py", f"fixture_before_{folder.name.replace('-', '_')}")
    after, stats, mode = pinned_branch(folder)
    for seed in (1, 2, 3):
        expected = before.replay("cpu", torch.Generator().manual_seed(seed))
        with mode():
            actual = after.replay("cpu", torch.Generator().manual_seed(seed))
        assert stats.crashes == [], "a pin request torch refuses: this rewrite would raise on CUDA"
        assert len(expected) == len(actual)
        for want, got in zip(expected, actual, strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape and got.device == want.device
            assert got.requires_grad == want.requires_grad and got.is_leaf == want.is_leaf
            assert torch.equal(got.detach(), want.detach())
    if "pin_memory=" in (folder / "after.py").read_text(encoding="latin-1"):
        assert stats.requests, "the pinned branch never ran"


def test_a_rewrite_that_pins_numpy_data_fails_the_same_check(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "after.py").write_text(
        "import numpy as np\nimport torch\n"
        "def replay(device, generator):\n"
        "    table = np.zeros((2, 3), dtype=np.int32)\n"
        "    return (torch.tensor(table, pin_memory=torch.cuda.is_available()).to(device, non_blocking=True),)\n")
    after, stats, mode = pinned_branch(tmp_path)
    with pytest.raises(RuntimeError), mode():
        after.replay("cpu", None)
    assert [str(crash) for crash in stats.crashes] == [
        "`torch.tensor` with pin_memory would raise on CUDA: RuntimeError: Can't pin tensor constructed from numpy"]

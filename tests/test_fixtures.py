"""Golden before/after files in fixtures/: the fix is exact, compiles, and keeps behaviour on CPU."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import linter_for

FIXTURES = sorted(path for path in (Path(__file__).parent.parent / "fixtures").iterdir() if path.is_dir())


def fixture_code(folder: Path) -> str:
    return folder.name.split("-")[0]


@pytest.mark.parametrize("folder", FIXTURES, ids=[folder.name for folder in FIXTURES])
def test_fix_turns_before_into_after_exactly(folder, tmp_path):
    target = tmp_path / "before.py"
    shutil.copyfile(folder / "before.py", target)
    subprocess.run([sys.executable, "-m", "h2dlint", "check", str(target), "--fix", "--unsafe-fixes",
                    "--select", fixture_code(folder)], capture_output=True, check=False)
    assert target.read_bytes() == (folder / "after.py").read_bytes()


@pytest.mark.parametrize("folder", FIXTURES, ids=[folder.name for folder in FIXTURES])
def test_after_compiles_and_has_nothing_left_to_fix(folder):
    compile((folder / "after.py").read_bytes(), str(folder / "after.py"), "exec")
    from h2dlint.source import read_source

    linter = linter_for(fixture_code(folder), unsafe_fixes=True)
    assert all(finding.fix is None for finding in linter.lint(read_source(folder / "after.py")))
    assert linter.lint(read_source(folder / "before.py")), "a fixture's before.py must show the problem"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("folder", FIXTURES, ids=[folder.name for folder in FIXTURES])
def test_after_gives_equal_tensors_on_cpu(folder):
    torch = pytest.importorskip("torch")
    before = load(folder / "before.py", f"fixture_before_{folder.name.replace('-', '_')}")
    after = load(folder / "after.py", f"fixture_after_{folder.name.replace('-', '_')}")
    for seed in (1, 2, 3):
        expected = before.replay("cpu", torch.Generator().manual_seed(seed))
        actual = after.replay("cpu", torch.Generator().manual_seed(seed))
        assert len(expected) == len(actual)
        for want, got in zip(expected, actual, strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape and got.device == want.device
            assert got.requires_grad == want.requires_grad and got.is_leaf == want.is_leaf
            assert torch.equal(got.detach(), want.detach())

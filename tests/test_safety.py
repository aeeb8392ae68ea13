"""Two runs at once corrupt nothing; checked code is never imported or run; nothing is written outside the paths."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURES = sorted(path for path in (Path(__file__).parent.parent / "fixtures").glob("HDL101-*") if path.is_dir())
COPIES = 8  # 32 files: enough for the worker processes to start


def test_two_concurrent_fix_runs_leave_every_file_fixed_or_original(tmp_path):
    originals = {}
    for fixture in FIXTURES:
        for copy in range(COPIES):
            target = tmp_path / f"{fixture.name}_{copy}.py"
            shutil.copyfile(fixture / "before.py", target)
            originals[target] = fixture
    command = [sys.executable, "-m", "h2dlint", "check", str(tmp_path), "--fix", "--unsafe-fixes", "--no-cache",
               "--jobs", "2", "--output-format", "concise", "--select", "HDL101",
               "--config", str(FIXTURES[0].parent / "h2dlint.toml")]  # the fixtures' helpers are not known hot
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (stdout, stderr) in zip(runs, outputs, strict=True):
        assert run.returncode in (1, 2), stdout + stderr  # 1: read-back findings have no fix
        assert "internal error" not in stderr
        # The only error allowed: the other run changed a file first, and this one left it alone.
        assert all("changed on disk since it was read; not overwritten" in line
                   for line in stderr.splitlines() if line.startswith("error:")), stderr
    assert sorted(tmp_path.iterdir()) == sorted(originals), "temporary files were left behind"
    for path, fixture in originals.items():
        content = path.read_bytes()
        assert content in ((fixture / "after.py").read_bytes(), (fixture / "before.py").read_bytes()), path
        ast.parse(content)


MARKER_WRITER = """\
import pathlib
import torch

pathlib.Path({marker!r}).write_text("imported")
for step in range(3):
    x = torch.tensor([1, 2], device="cuda")
if __name__ == "__main__":
    pathlib.Path({marker!r}).write_text("run")
"""


def test_checked_and_fixed_code_is_never_imported_or_run(tmp_path):
    marker = tmp_path / "marker"
    package = tmp_path / "package"
    package.mkdir()
    for name in ("__init__.py", "module.py", "conftest.py", "setup.py", "__main__.py"):
        (package / name).write_text(MARKER_WRITER.format(marker=str(marker)))
    for args in ([], ["--fix", "--unsafe-fixes"], ["--full-parse"]):
        completed = subprocess.run([sys.executable, "-m", "h2dlint", "check", str(package), *args],
                                   capture_output=True, text=True, cwd=package)
        assert completed.returncode in (0, 1), completed.stderr
        assert not marker.exists()
    assert "non_blocking=True" in (package / "module.py").read_text()


def test_fix_never_writes_through_a_symlink_out_of_the_tree(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.py"
    victim.write_text("import torch\nx = torch.tensor([1], device='cuda')\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link.py").symlink_to(victim)
    (tree / "linked_folder").symlink_to(outside)
    for paths in ([tree], [tree / "link.py"]):
        subprocess.run([sys.executable, "-m", "h2dlint", "check", *map(str, paths), "--fix"],
                       capture_output=True, text=True)
        assert victim.read_text() == "import torch\nx = torch.tensor([1], device='cuda')\n"
    assert sorted(path.name for path in outside.iterdir()) == ["victim.py"]

"""The pre-commit hooks, run for real by pre-commit in a scratch repository.

pre-commit installs h2dlint into a fresh virtual environment with pip (so this
needs the package index, and about a minute). `pre-commit try-repo` does that
for each call, so one test runs it as users would; the others use
`pre-commit run` on a commit of this working tree, whose environment is built once.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCKING = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], device='cuda')\n"
FIXED = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], pin_memory=True).to('cuda', non_blocking=True)\n"
CLEAN = "import torch\nx = torch.tensor([1, 2])\n"

pytestmark = [
    pytest.mark.precommit,
    pytest.mark.skipif(not (REPO / ".git").exists(), reason="needs the h2dlint git checkout"),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


def git(repo, *args) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def pre_commit(repo, home, *args):
    env = dict(os.environ, PRE_COMMIT_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture
def scratch(tmp_path):
    repo = tmp_path / "scratch"
    repo.mkdir()
    git(repo, "init", "-q")
    return repo


@pytest.fixture(scope="module")
def hooks_config(tmp_path_factory):
    """A pre-commit config using the hooks of a commit holding this working tree, and a shared store."""
    base = tmp_path_factory.mktemp("hooks")
    shadow = base / "h2dlint"
    git(base, "clone", "-q", str(REPO), str(shadow))
    # Changed, new (staged or not) and deleted files.
    changed = (git(REPO, "ls-files", "--modified", "--others", "--exclude-standard", "-z")
               + git(REPO, "diff", "--cached", "--name-only", "-z")).split("\0")
    for name in filter(None, changed):
        if (REPO / name).is_file():
            (shadow / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, shadow / name)
        else:
            (shadow / name).unlink(missing_ok=True)
    git(shadow, "add", "-A")
    git(shadow, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "--allow-empty",
        "-m", "working tree")
    rev = git(shadow, "rev-parse", "HEAD").strip()
    config = base / "pre-commit-config.yaml"
    config.write_text(f"repos:\n- repo: {shadow}\n  rev: {rev}\n  hooks:\n  - id: h2dlint\n  - id: h2dlint-fix\n")
    return config, base / "store"


def run_hook(repo, hooks_config, hook, *args):
    config, store = hooks_config
    return pre_commit(repo, store, "run", hook, "--config", str(config), *args)


def test_try_repo_check_hook_refuses_and_fix_hook_rewrites(scratch, tmp_path):
    (scratch / "model.py").write_text(BLOCKING)
    git(scratch, "add", ".")
    result = pre_commit(scratch, tmp_path / "store", "try-repo", str(REPO), "--all-files")  # both hooks, in order
    assert result.returncode == 1, result.stdout + result.stderr
    check_output, fix_output = result.stdout.split("h2dlint (fix)")
    assert "Failed" in check_output and "model.py:3:9: HDL101" in check_output
    assert "files were modified by this hook" in fix_output
    assert (scratch / "model.py").read_text() == FIXED


def test_check_hook(scratch, hooks_config):
    (scratch / "model.py").write_text(BLOCKING)
    git(scratch, "add", ".")
    refused = run_hook(scratch, hooks_config, "h2dlint", "--all-files")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "model.py:3:9: HDL101" in refused.stdout
    assert (scratch / "model.py").read_text() == BLOCKING
    for good in (CLEAN, FIXED):
        (scratch / "model.py").write_text(good)
        git(scratch, "add", ".")
        passed = run_hook(scratch, hooks_config, "h2dlint", "--all-files")
        assert passed.returncode == 0, passed.stdout + passed.stderr


def test_fix_hook_rewrites_then_passes(scratch, hooks_config):
    (scratch / "model.py").write_text(BLOCKING)
    git(scratch, "add", ".")
    first = run_hook(scratch, hooks_config, "h2dlint-fix", "--all-files")
    assert first.returncode == 1 and "files were modified by this hook" in first.stdout, first.stdout
    assert (scratch / "model.py").read_text() == FIXED
    git(scratch, "add", ".")
    assert run_hook(scratch, hooks_config, "h2dlint-fix", "--all-files").returncode == 0


def test_a_commit_without_python_files_passes(scratch, hooks_config):
    (scratch / "notes.txt").write_text("torch.tensor([1], device='cuda')\n")
    git(scratch, "add", ".")
    result = run_hook(scratch, hooks_config, "h2dlint")  # the staged files only
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(no files to check)Skipped" in result.stdout

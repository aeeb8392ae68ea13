"""Writing fixes never changes who owns a file or who may write it, and refuses a file the user may not write.

The refusal is tested as an unprivileged user: as root (who may write anything) the test runs h2dlint as
`nobody` through `setpriv`, in a folder `nobody` may write, on a file root owns."""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from h2dlint.source import NotWrittenError, read_source, write_source_atomically

BLOCKING = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], device='cuda')\n"
FIXED = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], pin_memory=True).to('cuda', non_blocking=True)\n"
NOBODY = 65534
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
SETPRIV = shutil.which("setpriv")
ROOT = Path(__file__).resolve().parent.parent


def notebook(source: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": source.splitlines(keepends=True)}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


@pytest.fixture
def shared_folder():
    """A folder any user may write (as /tmp is), outside pytest's own, which only its owner may enter."""
    folder = Path(tempfile.mkdtemp(prefix="h2dlint-permissions-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder)


def run_unprivileged(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """h2dlint run as a user who is not root: this user when it is not root, else `nobody`."""
    command = [sys.executable, "-m", "h2dlint", *args, "--no-cache", "--output-format", "concise"]
    if IS_ROOT:
        if SETPRIV is None:
            pytest.skip("running as root without setpriv: cannot run h2dlint as an unprivileged user")
        command = [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=environment)


def someone_elses_read_only_file(path: Path, content: str) -> None:
    """A file the unprivileged user may read but not write: root's (mode 644) when running as root, else the
    user's own with no write permission (mode 444)."""
    path.write_text(content)
    path.chmod(0o644 if IS_ROOT else 0o444)


def make_own(path: Path) -> None:
    if IS_ROOT:
        os.chown(path, NOBODY, NOBODY)


@pytest.mark.parametrize("options", [("--fix",), ("--fix", "--unsafe-fixes"), ("--add-noqa",)])
def test_a_file_the_user_may_not_write_is_refused_and_untouched(shared_folder, options):
    locked, notebook_file, ordinary = (shared_folder / "locked.py", shared_folder / "locked.ipynb",
                                       shared_folder / "ordinary.py")
    someone_elses_read_only_file(locked, BLOCKING)
    someone_elses_read_only_file(notebook_file, notebook(BLOCKING))
    ordinary.write_text(BLOCKING)
    make_own(ordinary)
    before = {path: (path.read_bytes(), path.stat()) for path in (locked, notebook_file)}

    result = run_unprivileged("check", str(shared_folder), *options, cwd=shared_folder)

    assert result.returncode == 2, result.stdout + result.stderr
    for path, (content, status) in before.items():
        assert f"error: {path}: cannot write: Permission denied; the file is not changed" in result.stderr
        after = path.stat()
        assert path.read_bytes() == content
        assert (after.st_uid, after.st_gid, after.st_mode, after.st_ino) == \
            (status.st_uid, status.st_gid, status.st_mode, status.st_ino)
    assert "HDL101" in result.stdout  # the refused files' findings are still reported
    assert ordinary.read_text() != BLOCKING  # the run went on
    assert sorted(os.listdir(shared_folder)) == ["locked.ipynb", "locked.py", "ordinary.py"]


@pytest.mark.skipif(not IS_ROOT, reason="giving a file to another user needs root")
def test_fix_as_root_keeps_another_users_owner_group_and_mode(tmp_path):
    python_file, notebook_file = tmp_path / "theirs.py", tmp_path / "theirs.ipynb"
    python_file.write_text(BLOCKING)
    notebook_file.write_text(notebook(BLOCKING))
    for path in (python_file, notebook_file):
        os.chown(path, NOBODY, NOBODY)
        path.chmod(0o640)

    result = subprocess.run([sys.executable, "-m", "h2dlint", "check", str(tmp_path), "--fix", "--no-cache"],
                            capture_output=True, text=True, cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert python_file.read_text() == FIXED
    assert "pin_memory=True" in notebook_file.read_text()
    for path in (python_file, notebook_file):
        status = path.stat()
        assert (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (NOBODY, NOBODY, 0o640)


def test_a_group_writable_file_of_another_owner_is_fixed_in_place_keeping_its_owner(shared_folder):
    """The user may write the file (through its group) but cannot give a new file its owner: the file is
    rewritten in place, so its owner, group, mode and inode stay."""
    if not IS_ROOT:
        pytest.skip("needs a file owned by another user, which only root can set up")
    path = shared_folder / "group.py"
    path.write_text(BLOCKING)
    os.chown(path, 0, NOBODY)
    path.chmod(0o664)
    before = path.stat()

    result = run_unprivileged("check", str(path), "--fix", cwd=shared_folder)

    assert result.returncode == 0, result.stdout + result.stderr
    assert path.read_text() == FIXED
    after = path.stat()
    assert (after.st_uid, after.st_gid, after.st_mode, after.st_ino) == \
        (0, NOBODY, before.st_mode, before.st_ino)


def test_hard_links_stay_linked(tmp_path):
    path, link = tmp_path / "a.py", tmp_path / "b.py"
    path.write_text(BLOCKING)
    os.link(path, link)
    write_source_atomically(read_source(path), FIXED)
    assert link.read_text() == FIXED and path.stat().st_ino == link.stat().st_ino


def test_mode_is_kept_on_an_atomic_write(tmp_path):
    path = tmp_path / "script.py"
    path.write_text(BLOCKING)
    path.chmod(0o751)
    write_source_atomically(read_source(path), FIXED)
    assert path.read_text() == FIXED and stat.S_IMODE(path.stat().st_mode) == 0o751


def test_refusal_is_a_not_written_error(tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text(BLOCKING)
    source = read_source(path)
    monkeypatch.setattr("h2dlint.source.may_write", lambda path: False)
    with pytest.raises(NotWrittenError, match="Permission denied"):
        write_source_atomically(source, FIXED)
    assert path.read_text() == BLOCKING

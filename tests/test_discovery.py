"""Which files a walk finds: .gitignore files on the way down (and above, up to the repository's root),
excludes, the folders never walked, and paths however they are spelled."""

import os
from pathlib import Path

import pytest

from h2dlint.discovery import find_python_files


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path, {
        ".gitignore": "/build/\n*_pb2.py\ndocs/**/gen_*.py\n",
        "pkg/.gitignore": "local_*.py\n!local_keep.py\ncache/\n",
        "pkg/a.py": "", "pkg/b.pyi": "", "pkg/nb.ipynb": "{}", "pkg/notes.txt": "",
        "pkg/local_x.py": "", "pkg/local_keep.py": "", "pkg/msg_pb2.py": "",
        "pkg/cache/c.py": "", "pkg/cache.py": "",
        "pkg/sub/build/d.py": "",  # `/build/` is anchored at the root: this one stays
        "build/e.py": "",
        "docs/x/y/gen_z.py": "", "docs/x/y/z.py": "",
        "pkg/__pycache__/f.py": "", "pkg/.venv/g.py": "",
        # Folders Ruff never walks either: notebook checkpoints, installed packages, editor settings.
        "pkg/.ipynb_checkpoints/h.py": "", "env/lib/site-packages/i.py": "", ".vscode/j.py": "",
        ".pytest_cache/k.py": "", ".pyenv/l.py": "",
    })
    return tmp_path


def found(paths, root: Path, **options) -> list[str]:
    return sorted(Path(os.path.abspath(path)).relative_to(root).as_posix()
                  for path in find_python_files(paths, **options))


EXPECTED = ["docs/x/y/z.py", "pkg/a.py", "pkg/b.pyi", "pkg/cache.py", "pkg/local_keep.py", "pkg/nb.ipynb",
            "pkg/sub/build/d.py"]


def test_gitignore_files_and_default_excludes_shape_the_walk(repo):
    assert found([repo], repo) == EXPECTED


def test_a_subfolder_walked_alone_keeps_the_rules_from_above(repo):
    assert found([repo / "pkg"], repo) == [name for name in EXPECTED if name.startswith("pkg/")]


@pytest.mark.parametrize("spelling", [".", "./", "pkg/..", "RELATIVE_ROOT"])
def test_a_root_spelled_relatively_finds_the_same(repo, monkeypatch, spelling):
    monkeypatch.chdir(repo / "pkg" if spelling == "pkg/.." else repo)
    if spelling == "pkg/..":
        spelling = ".."
    elif spelling == "RELATIVE_ROOT":
        monkeypatch.chdir(repo.parent)
        spelling = repo.name
    assert found([Path(spelling)], repo) == EXPECTED


def test_gitignore_can_be_turned_off(repo):
    everything = found([repo], repo, respect_gitignore=False)
    assert "pkg/local_x.py" in everything and "build/e.py" in everything
    assert "pkg/__pycache__/f.py" not in everything  # the default excludes still hold


def test_excludes_match_from_the_walked_folder_and_from_their_base(repo):
    assert found([repo], repo, excludes=("docs",)) == [name for name in EXPECTED if not name.startswith("docs/")]
    assert found([repo / "pkg"], repo, excludes=("pkg/sub",), exclude_base=repo) == [
        "pkg/a.py", "pkg/b.pyi", "pkg/cache.py", "pkg/local_keep.py", "pkg/nb.ipynb"]


def test_symbolic_links_are_not_followed(repo, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    write(outside, {"h.py": ""})
    (repo / "pkg" / "linked").symlink_to(outside, target_is_directory=True)
    (repo / "pkg" / "linked_file.py").symlink_to(outside / "h.py")
    assert found([repo], repo) == EXPECTED

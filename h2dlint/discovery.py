"""Finding the files to check: explicit paths, folders walked with .gitignore respected."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

PYTHON_SUFFIXES = (".py", ".pyi")
DEFAULT_EXCLUDES = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".h2dlint_cache", ".mypy_cache", ".nox",
    ".pants.d", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", "__pycache__", "__pypackages__", "_build",
    "buck-out", "dist", "node_modules", "venv",
)


@dataclass(frozen=True)
class IgnorePattern:
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool


def parse_gitignore(text: str) -> list[IgnorePattern]:
    patterns = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated or line.startswith("\\"):
            line = line[1:]
        directory_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        patterns.append(IgnorePattern(_glob_to_regex(line, anchored), negated, directory_only))
    return patterns


def _glob_to_regex(glob: str, anchored: bool) -> re.Pattern[str]:
    out, index = [], 0
    while index < len(glob):
        char = glob[index]
        if glob.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        if glob.startswith("/**", index) and index + 3 == len(glob):
            out.append("/.*")
            index += 3
            continue
        if glob.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = glob.find("]", index + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = glob[index + 1:end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(prefix + "".join(out) + "$")


class IgnoreRules:
    """The .gitignore files met on the way down a tree, and the user's excludes."""

    def __init__(self, excludes: tuple[str, ...]) -> None:
        self.layers: list[tuple[Path, list[IgnorePattern]]] = []
        self.excludes = [_glob_to_regex(pattern.rstrip("/"), "/" in pattern.rstrip("/")) for pattern in excludes]

    def with_folder(self, folder: Path, respect_gitignore: bool) -> IgnoreRules:
        gitignore = folder / ".gitignore"
        if not respect_gitignore or not gitignore.is_file():
            return self
        try:
            patterns = parse_gitignore(gitignore.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return self
        child = IgnoreRules(())
        child.layers = [*self.layers, (folder, patterns)]
        child.excludes = self.excludes
        return child

    def ignored(self, path: Path, is_dir: bool, root: Path) -> bool:
        if path.name in DEFAULT_EXCLUDES and is_dir:
            return True
        relative_to_root = _relative(path, root)
        if any(regex.match(relative_to_root) or regex.match(path.name) for regex in self.excludes):
            return True
        verdict = False
        for base, patterns in self.layers:
            relative = _relative(path, base)
            for pattern in patterns:
                if pattern.directory_only and not is_dir:
                    continue
                if pattern.regex.match(relative):
                    verdict = not pattern.negated
        return verdict


def _relative(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.name


def find_python_files(paths: list[Path], excludes: tuple[str, ...] = (), respect_gitignore: bool = True,
                      errors: list[str] | None = None) -> list[Path]:
    """Files named explicitly are always kept; folders are walked, skipping ignored entries.

    Symbolic links to folders are not followed, so a walk never loops and never
    leaves the tree it was given. Unreadable folders are reported in `errors`.
    """
    found: dict[Path, None] = {}
    errors = errors if errors is not None else []
    for path in paths:
        if path.is_dir():
            root = path
            rules = IgnoreRules(excludes)
            for parent in _folders_from_git_root(path):
                rules = rules.with_folder(parent, respect_gitignore)
            _walk(path, root, rules.with_folder(path, respect_gitignore), respect_gitignore, found, errors)
        elif path.exists() or path.is_symlink():
            found[path] = None
        else:
            errors.append(f"{path}: no such file or directory")
    return list(found)


def _folders_from_git_root(folder: Path) -> list[Path]:
    """The folders above `folder`, from its repository's root down, whose .gitignore files apply to it."""
    above = list(folder.resolve().parents)
    for index, parent in enumerate(above):
        if (parent / ".git").exists():
            return list(reversed(above[:index + 1]))
    return []


def _walk(folder: Path, root: Path, rules: IgnoreRules, respect_gitignore: bool, found: dict, errors: list) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as error:
        errors.append(f"{folder}: cannot list folder: {error.strerror}")
        return
    for entry in entries:
        path = Path(entry.path)
        is_dir = entry.is_dir(follow_symlinks=False)
        if rules.ignored(path, is_dir, root):
            continue
        if is_dir:
            _walk(path, root, rules.with_folder(path, respect_gitignore), respect_gitignore, found, errors)
        elif entry.name.endswith(PYTHON_SUFFIXES) and not entry.is_symlink() and entry.is_file():
            found[path] = None

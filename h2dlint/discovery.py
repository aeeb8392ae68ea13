"""Finding the files to check: explicit paths, folders walked with .gitignore respected."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")
# Ruff's default excludes (not `build`, which Ruff dropped: a package may be named so), with our cache.
DEFAULT_EXCLUDES = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".h2dlint_cache", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
    "__pycache__", "__pypackages__", "_build", "buck-out", "dist", "node_modules", "site-packages", "venv",
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


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A gitignore-style glob (`*`, `**`, `?`, `[...]`); one with a `/` is anchored at the start."""
    pattern = pattern.rstrip("/")
    return _glob_to_regex(pattern.lstrip("/"), "/" in pattern)


class IgnoreRules:
    """The .gitignore files met on the way down a tree, and the user's excludes."""

    def __init__(self, excludes: tuple[str, ...], exclude_base: Path | None = None) -> None:
        self.layers: list[tuple[Path, list[IgnorePattern]]] = []
        self.excludes = [_glob_to_regex(pattern.rstrip("/"), "/" in pattern.rstrip("/")) for pattern in excludes]
        self.exclude_base = exclude_base  # excludes from a configuration file are relative to its folder

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
        child.exclude_base = self.exclude_base
        return child

    def ignored(self, path: Path, is_dir: bool, root: Path) -> bool:
        if path.name in DEFAULT_EXCLUDES and is_dir:
            return True
        if self.excluded(path, root):
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

    def excluded(self, path: Path, root: Path) -> bool:
        if not self.excludes:
            return False
        names = [_relative(path, root), path.name]
        if self.exclude_base is not None:
            names.append(_relative(Path(os.path.abspath(path)), self.exclude_base))
        return any(regex.match(name) for regex in self.excludes for name in names)


def _relative(path: Path, base: Path) -> str:
    path_text, base_text = str(path), str(base)
    if path_text.startswith(base_text) and path_text[len(base_text):len(base_text) + 1] == os.sep:
        # The common case, several times faster than relative_to: both are normalized, so the path's parts
        # are the base's and then the rest.
        return path_text[len(base_text) + 1:].replace(os.sep, "/")
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.name


def find_python_files(paths: list[Path], excludes: tuple[str, ...] = (), respect_gitignore: bool = True,
                      errors: list[str] | None = None, exclude_base: Path | None = None,
                      force_exclude: bool = False) -> list[Path]:
    """Files named explicitly are kept, unless excluded with `force_exclude`; folders are walked, skipping
    ignored entries.

    Symbolic links to folders are not followed, so a walk never loops and never
    leaves the tree it was given. Unreadable folders are reported in `errors`.
    """
    found: dict[Path, None] = {}
    errors = errors if errors is not None else []
    for path in paths:
        if path.is_dir():
            root = path
            rules = IgnoreRules(excludes, exclude_base)
            for parent in _folders_from_git_root(path):
                rules = rules.with_folder(parent, respect_gitignore)
            _walk(path, root, rules.with_folder(path, respect_gitignore), respect_gitignore, found, errors)
        elif path.exists() or path.is_symlink():
            if not (force_exclude and force_excluded(path, excludes, exclude_base)):
                found[path] = None
        else:
            errors.append(f"{path}: no such file or directory")
    return list(found)


def force_excluded(path: Path, excludes: tuple[str, ...], exclude_base: Path | None) -> bool:
    """For --force-exclude (and the language server): the file, or a folder it is in, matches an exclude
    pattern. The file need not exist: an editor's buffer may not be saved yet."""
    rules = IgnoreRules(excludes, exclude_base)
    absolute = Path(os.path.abspath(path))
    base = rules.exclude_base or Path.cwd()
    return any(rules.excluded(candidate, base) for candidate in (absolute, *absolute.parents)
               if candidate.is_relative_to(base) and candidate != base)


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
        is_dir = entry.is_dir(follow_symlinks=False)
        if not is_dir and not entry.name.endswith(PYTHON_SUFFIXES):
            continue  # never checked, ignored or not
        path = Path(entry.path)
        if rules.ignored(path, is_dir, root):
            continue
        if is_dir:
            _walk(path, root, rules.with_folder(path, respect_gitignore), respect_gitignore, found, errors)
        elif not entry.is_symlink() and entry.is_file():
            found[path] = None

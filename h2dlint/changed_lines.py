"""`--changed-since REF`: which lines of which files a branch added or changed, from `git diff`.

The lines are those of the working tree that differ from the merge base of REF
and HEAD, so on a pull request only the pull request's own lines count, not
what the base branch did since. Files git does not track yet count as new.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from .config import common_folder
from .engine import FileResult
from .model import SYNTAX_ERROR, UNREADABLE, Finding

_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class GitError(Exception):
    """git could not tell what changed; the message says why."""


@dataclass(frozen=True)
class ChangedLines:
    # real path -> the 1-based lines added or changed; None: the whole file is new
    by_file: dict[str, frozenset[int] | None]

    def touches(self, path) -> bool:
        return os.path.realpath(path) in self.by_file

    def reports(self, finding: Finding) -> bool:
        """A finding counts when any of its lines changed; a file h2dlint could not check counts when touched."""
        key = os.path.realpath(finding.path)
        if key not in self.by_file:
            return False
        lines = self.by_file[key]
        if lines is None or finding.code in (SYNTAX_ERROR, UNREADABLE):
            return True
        return any(line in lines for line in range(finding.start.line, finding.end.line + 1))

    def only_changed(self, result: FileResult) -> FileResult:
        return replace(result, findings=tuple(finding for finding in result.findings if self.reports(finding)))


def _git(folder: Path, *args: str) -> str:
    # Options that user configuration could otherwise change in ways the parser below does not expect.
    command = ["git", "-C", str(folder), "--literal-pathspecs", "-c", "core.quotePath=true", *args]
    try:
        completed = subprocess.run(command, capture_output=True)
    except FileNotFoundError as error:
        raise GitError("--changed-since needs git, which is not installed") from error
    if completed.returncode != 0:
        message = completed.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise GitError(f"`git {args[0]}` failed: {message[-1] if message else f'exit {completed.returncode}'}")
    return completed.stdout.decode("utf-8", errors="surrogateescape")


def _shallow(folder: Path) -> bool:
    try:
        return _git(folder, "rev-parse", "--is-shallow-repository").strip() == "true"
    except GitError:
        return False


def changed_lines_since(ref: str, paths: list[Path]) -> ChangedLines:
    """The lines under `paths` added or changed since `ref`; GitError when git cannot tell.

    git runs in the repository of the checked paths (the folder holding them all), not in the current
    folder, which may be another repository or none."""
    folder = common_folder(paths)
    try:
        root = _git(folder, "rev-parse", "--show-toplevel").strip()
    except GitError as error:
        raise GitError(f"--changed-since needs the checked paths to be in a git repository ({folder}): "
                       f"{error}") from error
    shallow = _shallow(folder)
    try:
        commit = _git(folder, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").strip()
    except GitError as error:
        hint = "; shallow clone: fetch more history (fetch-depth: 0)" if shallow else ""
        raise GitError(f"--changed-since: unknown git ref {ref!r}{hint}") from error
    try:
        base = _git(folder, "merge-base", commit, "HEAD").strip()
    except GitError as error:
        if shallow:
            raise GitError(f"--changed-since: {ref!r} and HEAD have no common history in this clone: "
                           "shallow clone: fetch more history (fetch-depth: 0)") from error
        raise GitError(f"--changed-since: {ref!r} and HEAD have no common history") from error
    pathspec = ["--", *(os.path.abspath(path) for path in paths)]
    diff = _git(folder, "diff", "--unified=0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative",
                "--src-prefix=a/", "--dst-prefix=b/", base, *pathspec)
    by_file: dict[str, frozenset[int] | None] = {
        os.path.realpath(os.path.join(root, name)): frozenset(lines) for name, lines in parse_diff(diff).items()}
    untracked = _git(folder, "ls-files", "--others", "--exclude-standard", "--full-name", "-z", *pathspec)
    for name in filter(None, untracked.split("\0")):
        by_file[os.path.realpath(os.path.join(root, name))] = None
    return ChangedLines(by_file)


def parse_diff(diff: str) -> dict[str, set[int]]:
    """From `git diff --unified=0` output: each file's path (from the repository root) -> lines added.

    Hunk bodies are skipped by count, so an added line that itself starts with
    `++ ` is never taken for a file header.
    """
    lines: dict[str, set[int]] = {}
    current: set[int] | None = None
    body_left = 0
    for line in diff.split("\n"):
        if body_left:
            if not line.startswith("\\"):  # "\ No newline at end of file" is not part of the count
                body_left -= 1
            continue
        if line.startswith("+++ "):
            name = _unquote(line[4:].rstrip("\t"))
            current = None if name == "/dev/null" else lines.setdefault(name.removeprefix("b/"), set())
        elif line.startswith("@@ ") and current is not None:
            match = _HUNK.match(line)
            old_count, start, new_count = int(match.group(1) or 1), int(match.group(2)), int(match.group(3) or 1)
            current.update(range(start, start + new_count))
            body_left = old_count + new_count
    return lines


def _unquote(name: str) -> str:
    """git writes unusual file names as C strings ("caf\\303\\251.py"), which a Python bytes literal reads."""
    if name.startswith('"'):
        return os.fsdecode(ast.literal_eval("b" + name))
    return name

"""Sweep h2dlint over real code and check that it never crashes and never damages a file.

For each tree (the installed torch package, the transformers and sglang wheels)
the .py/.pyi files are copied into a temporary folder, then, through the real
engine (discovery, worker processes, atomic writes), on the copies:

1. `check`, then `--fix --unsafe-fixes`: no internal errors;
2. every file the fix changed still compiles, and every other file is byte-identical;
3. a fixed file differs from the original only at the fixed sites: undoing each
   rewrite in its AST (`X(a, pin_memory=G).to(D, non_blocking=True)` back to
   `X(a, device=D)`, `.requires_grad_()` back to `requires_grad=`) gives the
   original's AST (`ast.dump`, both sides normalised alike), and exactly as many
   rewrites are found as fixes were applied;
4. a second `--fix` changes nothing.

    python scripts/sweep.py                    # torch, transformers, sglang, one after the other
    python scripts/sweep.py sglang --jobs 2

The wheels come from /tmp/real/dl when there, else `pip download --no-deps`.
Exit status 0 when every check holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from h2dlint.discovery import PYTHON_SUFFIXES, find_python_files
from h2dlint.engine import Linter
from h2dlint.model import SYNTAX_ERROR, UNREADABLE
from h2dlint.rule import all_rules
from h2dlint.runner import run_files
from h2dlint.settings import Settings

WHEEL_FOLDER = Path("/tmp/real/dl")
TREES = ("torch", "transformers", "sglang")


@dataclass
class Report:
    tree: str
    files: int = 0
    findings: Counter = field(default_factory=Counter)
    fixes_applied: int = 0
    files_fixed: int = 0
    internal_errors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # broken promises: each one is a bug
    seconds_check: float = 0.0
    seconds_fix: float = 0.0
    ast_compared: int = 0  # fixed files whose AST was compared with the original's (HDL101's fixes only)


def copy_python_files(tree: str, into: Path) -> Path:
    """Copy the tree's .py/.pyi files under `into`; returns the copy's root folder."""
    if tree == "torch":
        spec = importlib.util.find_spec("torch")  # finds the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("torch is not installed in this environment")
        source = Path(spec.submodule_search_locations[0])
        shutil.copytree(source, into / "torch", ignore=_keep_python_only)
        return into / "torch"
    wheel = find_wheel(tree, into)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.endswith(PYTHON_SUFFIXES) and member.split("/")[0] == tree:
                archive.extract(member, into)
    return into / tree


def _keep_python_only(folder: str, names: list[str]) -> list[str]:
    return [name for name in names
            if not name.endswith(PYTHON_SUFFIXES) and not (Path(folder) / name).is_dir()]


def find_wheel(tree: str, scratch: Path) -> Path:
    wheels = sorted(WHEEL_FOLDER.glob(f"{tree}-*.whl"), key=lambda path: _version(path.name))
    if wheels:
        return wheels[-1]
    download = scratch / "download"
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                    "-d", str(download), tree], check=True)
    return next(download.glob("*.whl"))


def _version(wheel_name: str) -> tuple[int, ...]:
    version = wheel_name.split("-")[1]
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def sweep(tree: str, jobs: int) -> Report:
    report = Report(tree)
    with tempfile.TemporaryDirectory(prefix=f"h2dlint-sweep-{tree}-") as scratch:
        root = copy_python_files(tree, Path(scratch))
        files = find_python_files([root], respect_gitignore=False)
        originals = {path: path.read_bytes() for path in files}
        report.files = len(files)
        # Every copy the rules can rewrite, hot or not: the sweep tries the rewrites, not the defaults.
        linter = Linter(list(all_rules().values()), Settings(unsafe_fixes=True, copies_outside_hot_code=True))

        started = time.perf_counter()
        checked = run_files(files, linter, "check", jobs)
        report.seconds_check = time.perf_counter() - started
        for result in checked:
            report.findings.update(finding.code for finding in result.findings)
            _note_error(report, result, "check")

        started = time.perf_counter()
        fixed = run_files(files, linter, "fix", jobs)
        report.seconds_fix = time.perf_counter() - started
        for result in fixed:
            _note_error(report, result, "fix")
            path = Path(result.path)
            now = path.read_bytes()
            if result.fixes_applied == 0:
                if now != originals[path]:
                    report.failures.append(f"{path}: changed although no fix was applied")
                continue
            report.fixes_applied += result.fixes_applied
            report.files_fixed += 1
            try:
                compile(now, str(path), "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as error:
                report.failures.append(f"{path}: does not compile after the fix: {error}")
                continue
            if set(result.fixed_codes) <= UNDOABLE_CODES:
                report.ast_compared += 1
                report.failures += [f"{path}: {problem}"
                                    for problem in compare_with_original(originals[path], now, result.fixes_applied)]

        again = run_files(files, linter, "fix", jobs)
        for result in again:
            _note_error(report, result, "second fix")
            if result.fixes_applied:
                report.failures.append(f"{result.path}: a second --fix applied {result.fixes_applied} more fixes")
    return report


def _note_error(report: Report, result, step: str) -> None:
    if result.error and result.error.startswith("internal error"):
        report.internal_errors.append(f"{step}: {result.path}: {result.error}")
    elif result.error:
        report.failures.append(f"{step}: {result.path}: {result.error}")


# The rewrites the Normaliser below can undo. Files that other rules' fixes changed are
# still checked to compile and to be stable under a second --fix, but not compared.
UNDOABLE_CODES = frozenset({"HDL101"})


def compare_with_original(original: bytes, fixed: bytes, fixes_applied: int) -> list[str]:
    """The fixed file's AST must equal the original's once the rewrites are undone.

    Both trees are normalised the same way (rewritten calls undone, keywords in
    name order, any `tensor`/`as_tensor` callee read as `tensor`, top-level
    `import torch` dropped),
    so any change other than the fix shows up as a difference; and exactly
    `fixes_applied` more rewritten calls must be found in the fixed file.
    """
    before, after = Normaliser(), Normaliser()
    before_dump = ast.dump(before.visit(ast.parse(original)))
    after_dump = ast.dump(after.visit(ast.parse(fixed)))
    problems = []
    if before_dump != after_dump:
        problems.append("the AST differs from the original at places other than the fixed calls")
    if after.undone - before.undone != fixes_applied:
        problems.append(f"{fixes_applied} fixes applied, but {after.undone - before.undone} rewritten calls found")
    return problems


class Normaliser(ast.NodeTransformer):
    def __init__(self) -> None:
        self.undone = 0

    def visit_Module(self, node: ast.Module) -> ast.Module:
        node.body = [statement for statement in node.body
                     if ast.dump(statement) != ast.dump(ast.Import([ast.alias("torch")]))]
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.Call:
        undone = undo_rewrite(node)  # outside in: `.requires_grad_()` wraps the `.to(...)` call
        if undone is not node:
            self.undone += 1
        node = self.generic_visit(undone)
        func = node.func
        if _terminal_name(func) in ("tensor", "as_tensor"):  # the fix may turn `as_tensor` into `torch.tensor`
            func = ast.Name("tensor", ast.Load())
        return ast.Call(func, node.args, sorted(node.keywords, key=lambda keyword: keyword.arg or ""))


def _terminal_name(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def undo_rewrite(call: ast.Call) -> ast.Call:
    """`X(a, pin_memory=G).to(D, non_blocking=True)[.requires_grad_(F)]` -> `X(a, device=D[, requires_grad=F])`.

    Returns `call` itself when it is not such a rewrite.
    """
    moved: list[ast.keyword] = []
    node = call
    if isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_" and len(node.args) <= 1 \
            and not node.keywords and isinstance(node.func.value, ast.Call):
        moved.append(ast.keyword("requires_grad", node.args[0] if node.args else ast.Constant(True)))
        node = node.func.value
    non_blocking = [ast.dump(keyword) for keyword in node.keywords] == \
        [ast.dump(ast.keyword("non_blocking", ast.Constant(True)))]
    if not (isinstance(node.func, ast.Attribute) and node.func.attr == "to" and len(node.args) == 1 and non_blocking):
        return call
    inner = node.func.value
    if not isinstance(inner, ast.Call) or [keyword.arg for keyword in inner.keywords].count("pin_memory") != 1:
        return call
    kept = [keyword for keyword in inner.keywords if keyword.arg != "pin_memory"]
    return ast.Call(inner.func, inner.args, [*kept, ast.keyword("device", node.args[0]), *moved])


def print_report(report: Report) -> None:
    rule_findings = sum(count for code, count in report.findings.items() if code not in (SYNTAX_ERROR, UNREADABLE))
    by_code = ", ".join(f"{code} {count}" for code, count in sorted(report.findings.items())) or "none"
    print(f"== {report.tree}")
    print(f"files swept:        {report.files}")
    print(f"findings:           {rule_findings} ({by_code})")
    print(f"fixes applied:      {report.fixes_applied} in {report.files_fixed} files (--fix --unsafe-fixes)")
    print(f"AST compared:       {report.ast_compared} of the {report.files_fixed} fixed files "
          f"(those fixed only by {', '.join(sorted(UNDOABLE_CODES))})")
    print(f"internal errors:    {len(report.internal_errors)}")
    print(f"broken promises:    {len(report.failures)}")
    print(f"time:               check {report.seconds_check:.1f} s, fix {report.seconds_fix:.1f} s")
    for line in (report.internal_errors + report.failures)[:20]:
        print(f"  {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", metavar="TREE", help=f"any of {', '.join(TREES)} (default: all)")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    arguments = parser.parse_args()
    clean = True
    unknown = set(arguments.trees) - set(TREES)
    if unknown:
        parser.error(f"unknown tree(s): {', '.join(sorted(unknown))}")
    for tree in arguments.trees or TREES:
        report = sweep(tree, arguments.jobs)
        print_report(report)
        clean = clean and not report.internal_errors and not report.failures
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())

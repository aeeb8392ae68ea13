"""Would any fix h2dlint writes raise on a CUDA machine? Checked over real trees, without a GPU.

For each tree, `h2dlint check --unsafe-fixes --output-format json` gives every fix that `--fix
--unsafe-fixes` would write. Each fix that pins (`pin_memory=` or `.pin_memory()` in its text) is then:

1. replayed where it can be run: a pinned factory call whose arguments need nothing but torch and
   literals (`torch.tensor([0, 1], pin_memory=G)`) is evaluated with its guard forced true under
   h2dlint.verify.pinning's PinnedBranch, as `h2dlint verify` does; a pin torch refuses is a crash;
2. checked statically otherwise, by a reading of the original file that shares no code with the linter's
   own analysis: the data passed to `torch.tensor(..., pin_memory=...)` and every assignment to its names
   in the enclosing function (and `self.x = ...` in the class) are searched for numpy (`np.`, `numpy`,
   `.numpy()`) and for torch calls and `Tensor` annotations; and the file for a default-device context
   (`torch.set_default_device`, `with torch.device(...)`) whose lines, or whose called functions and
   classes, hold the fix. A *safe* fix with such evidence, or an unsafe one whose message does not say
   what cannot be pinned, or any pin under a default-device context, is flagged.

    python scripts/fix_safety.py /tmp/dl/vllm-0.34.0-*.whl /tmp/trees/sglang ...  # counts per tree
    python scripts/fix_safety.py TREES... --sample 40 --seed 1 > sample.txt   # plus fixes for a hand check
    python scripts/fix_safety.py TREES... --linter /tmp/old/.venv/bin/python  # an older commit's fixes

Exit status 0 when nothing is flagged and no replay crashed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

NUMPY_TEXT = re.compile(r"\bnp\.|\bnumpy\b|\.numpy\(\)")
TENSOR_TEXT = re.compile(r"\btorch\.\w+\(|\bTensor\b|\.(?:cuda|cpu|to|clone|detach|contiguous|view|long|int|float)\(")
DEFAULT_DEVICE_TEXT = re.compile(r"set_default_device\s*\(|\bwith\b[^\n:]*\bdevice\s*\(")
CANNOT_PIN = "cannot pin"


@dataclass
class PinFix:
    tree: str
    path: str
    row: int
    code: str
    unsafe: bool
    message: str
    content: str
    verdict: str = ""  # "replayed", "replay crash", "static: ...", "FLAGGED: ..."
    evidence: list[str] = field(default_factory=list)


@dataclass
class TreeReport:
    tree: str
    findings: int = 0
    fixes: int = 0
    pin_fixes: list[PinFix] = field(default_factory=list)
    verdicts: Counter = field(default_factory=Counter)


def lint(tree: Path, jobs: int, linter: str | None, saved: Path | None) -> list[dict]:
    """The findings of `h2dlint check --unsafe-fixes` on `tree`, by the h2dlint installed for the interpreter
    `linter` (else this one); read from, or written to, `saved` when given."""
    if saved is not None and saved.exists():
        findings = json.loads(saved.read_text())
        for finding in findings:  # saved relative to the tree, which may have been unpacked elsewhere
            finding["filename"] = str(tree.resolve() / finding["filename"])
        return findings
    completed = subprocess.run(
        [linter or sys.executable, "-m", "h2dlint", "check", str(tree.resolve()), "--unsafe-fixes", "--no-cache",
         "--exit-zero", "--output-format", "json", "--jobs", str(jobs)],
        capture_output=True, text=True, check=False, cwd=tree)
    if completed.returncode != 0:
        sys.exit(f"h2dlint failed on {tree}: {completed.stderr[-2000:]}")
    findings = json.loads(completed.stdout)
    if saved is not None:
        saved.write_text(json.dumps([{**finding, "filename": str(Path(finding["filename"]).relative_to(tree.resolve()))}
                                     for finding in findings]))
    return findings


def pinned_calls(content: str) -> list[ast.Call]:
    """The calls of a fix's text that ask for pinned memory: `f(..., pin_memory=...)` and `x.pin_memory()`."""
    try:
        tree = ast.parse(content.strip(), mode="eval")
    except SyntaxError:
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        any(keyword.arg == "pin_memory" for keyword in node.keywords)
        or isinstance(node.func, ast.Attribute) and node.func.attr == "pin_memory")]


def data_of(call: ast.Call) -> ast.expr | None:
    """What `torch.tensor(data, ..., pin_memory=...)` pins; None for other factories (sizes pin anywhere)."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "tensor"
            or isinstance(call.func, ast.Name) and call.func.id == "tensor"):
        return None
    return call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "data"), None)


def is_python_data(node: ast.expr) -> bool:
    """A list or tuple display or comprehension, `[x] * n` / `[a] + rest`, `list(...)`, `sorted(...)`, `range(...)`,
    `.tolist()`, a constant, a Python number (`len(x) - 1`, `int(n)`, `t.item()`): whatever their elements, torch
    pins these (a list of numbers, numpy scalars or 0-d tensors)."""
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp, ast.Constant)):
        return True
    if isinstance(node, ast.BinOp):
        return is_python_data(node.left) and (isinstance(node.op, (ast.Add, ast.Mult)) or is_python_data(node.right))
    if isinstance(node, ast.Call):
        func = node.func
        return isinstance(func, ast.Attribute) and func.attr in ("tolist", "item") or \
            isinstance(func, ast.Name) and func.id in ("list", "tuple", "sorted", "range", "len", "int", "float")
    return False


def replay(call: ast.Call) -> str | None:
    """Runs a pinned factory call that needs only torch and literals, its guard forced true; None when it
    cannot run here, "" when it ran, else the crash."""
    import torch

    from h2dlint.verify.pinning import PinStats, pinned_branch_mode

    forced = ast.Call(call.func, call.args, [ast.keyword("pin_memory", ast.Constant(True)) if k.arg == "pin_memory"
                                             else k for k in call.keywords])
    names = {node.id for node in ast.walk(forced) if isinstance(node, ast.Name)}
    torch_names = {name for name in names if name in ("torch", "th")}
    if names - torch_names or not torch_names and not isinstance(forced.func, ast.Name):
        return None
    expression = compile(ast.fix_missing_locations(ast.Expression(forced)), "<fix>", "eval")
    stats = PinStats()
    try:
        with pinned_branch_mode(stats):
            eval(expression, {name: torch for name in torch_names})
    except Exception as error:
        return "; ".join(map(str, stats.crashes)) or f"(not a pin) {type(error).__name__}: {error}"
    return ""


class FileModel:
    """The original file, read for the static check."""

    def __init__(self, path: Path) -> None:
        self.text = path.read_text(encoding="utf-8", errors="replace")
        self.tree = ast.parse(self.text)
        self.lines = self.text.splitlines()
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.default_device_spans = self._default_device_spans() if DEFAULT_DEVICE_TEXT.search(self.text) else []

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""

    def enclosing(self, row: int, kinds) -> ast.AST | None:
        found = None
        for node in ast.walk(self.tree):
            if isinstance(node, kinds) and node.lineno <= row <= (node.end_lineno or node.lineno):
                if found is None or node.lineno >= found.lineno:
                    found = node
        return found

    def assignments(self, scope: ast.AST, name: str, before: int, attribute: bool = False) -> list[str]:
        """The text of each value bound to `name` (or `self.name`) in `scope` on a line before `before` (in a
        class: anywhere), and of its annotations."""
        values = []
        for node in ast.walk(scope):
            if not attribute and getattr(node, "lineno", 0) >= before:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)) else []
            for target in targets:
                for part in ast.walk(target):
                    named = (isinstance(part, ast.Attribute) and part.attr == name) if attribute else \
                        (isinstance(part, ast.Name) and part.id == name)
                    if named:
                        value = node.iter if isinstance(node, ast.For) else node.value
                        values.append(self.segment(value) if value is not None else "")
                        if isinstance(node, ast.AnnAssign):
                            values.append(self.segment(node.annotation))
            if isinstance(node, ast.arg) and node.arg == name and node.annotation is not None and not attribute:
                values.append(self.segment(node.annotation))
        return values

    def data_evidence(self, data: ast.expr, row: int) -> list[str]:
        """What says the data is numpy or a tensor: its own text and what its names are bound to. A literal
        list or tuple, a comprehension and `.tolist()` are Python data whatever they hold (torch pins a list of
        numbers, numpy scalars or 0-d tensors): no evidence is looked for in them."""
        if is_python_data(data) or self.checked_to_be_a_list(data, row):
            return []
        evidence = []
        texts = [ast.unparse(data)]
        function = self.enclosing(row, (ast.FunctionDef, ast.AsyncFunctionDef))
        cls = self.enclosing(row, ast.ClassDef)
        for node in ast.walk(data):
            if isinstance(node, ast.Name) and function is not None:
                texts.extend(self.assignments(function, node.id, row))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                    and cls is not None:
                texts.extend(self.assignments(cls, node.attr, row, attribute=True))
        for text in texts:
            try:
                value = ast.parse(text.strip(), mode="eval").body
            except SyntaxError:
                value = None
            if value is not None and is_python_data(value):
                continue
            if NUMPY_TEXT.search(text):
                evidence.append(f"numpy: {' '.join(text.split())[:80]}")
            elif TENSOR_TEXT.search(text):
                evidence.append(f"tensor: {' '.join(text.split())[:80]}")
        return evidence

    def checked_to_be_a_list(self, data: ast.expr, row: int) -> bool:
        """`data` is a name an enclosing `if isinstance(data, list):` (or `tuple`) checked."""
        if not isinstance(data, ast.Name):
            return False
        check = re.compile(rf"isinstance\(\s*{re.escape(data.id)}\s*,\s*\(?\s*(?:list|tuple)\b")
        return any(isinstance(node, ast.If) and node.body[0].lineno <= row <= (node.body[-1].end_lineno or row)
                   and check.match(self.segment(node.test)) for node in ast.walk(self.tree))

    def _default_device_spans(self) -> list[tuple[int, int, str]]:
        spans = []
        nodes = list(ast.walk(self.tree))
        defined = [node for node in nodes if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        for node in nodes:
            if isinstance(node, ast.Call) and self.segment(node.func).endswith("set_default_device") and not (
                    node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "cpu"):
                spans.append((1, len(self.lines), f"set_default_device on line {node.lineno}"))
            # `with torch.device(d):` sets the default device; `with torch.cuda.device(d):` only the current one.
            if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                    isinstance(item.context_expr, ast.Call)
                    and self.segment(item.context_expr.func) in ("torch.device", "device")
                    and not self.segment(item.context_expr).endswith(("'cpu')", '"cpu")')) for item in node.items):
                spans.append((node.lineno, node.end_lineno or node.lineno, f"with ... device(...) on line {node.lineno}"))
                for call in (n for statement in node.body for n in ast.walk(statement) if isinstance(n, ast.Call)):
                    name = self.segment(call.func).rsplit(".", 1)[-1]
                    for definition in (found for found in defined if found.name == name):
                        spans.append((definition.lineno, definition.end_lineno or definition.lineno,
                                      f"{name} called under with ... device(...) on line {node.lineno}"))
        return spans

    def default_device(self, row: int) -> str | None:
        return next((why for first, last, why in self.default_device_spans if first <= row <= last), None)


def check_tree(tree: Path, jobs: int, linter: str | None, saved: Path | None) -> TreeReport:
    report = TreeReport(tree.name)
    findings = lint(tree, jobs, linter, saved)
    report.findings = len(findings)
    models: dict[str, FileModel] = {}
    for finding in findings:
        fix = finding.get("fix")
        if not fix:
            continue
        report.fixes += 1
        content = " ".join(edit["content"] for edit in fix["edits"])
        calls = [call for edit in fix["edits"] for call in pinned_calls(edit["content"])]
        if not calls:
            continue
        pin = PinFix(tree.name, finding["filename"], finding["location"]["row"], finding["code"],
                     fix["applicability"] == "unsafe", fix["message"], content)
        report.pin_fixes.append(pin)
        model = models.get(pin.path) or models.setdefault(pin.path, FileModel(Path(pin.path)))
        crashes = [outcome for outcome in map(replay, calls) if outcome]
        if crashes:
            pin.verdict = "replay crash"
            pin.evidence = crashes
            continue
        context = model.default_device(pin.row)
        evidence = []
        for call in calls:
            data = data_of(call)
            if data is not None:
                evidence.extend(model.data_evidence(data, pin.row))
        pin.evidence = ([f"default device: {context}"] if context else []) + evidence
        if context:
            pin.verdict = "FLAGGED: pins under a default-device context"
        elif evidence and not pin.unsafe:
            pin.verdict = "FLAGGED: safe, but the data may be numpy or a tensor"
        elif evidence and CANNOT_PIN not in pin.message:
            pin.verdict = "FLAGGED: unsafe, but the message does not say what cannot be pinned"
        elif all(replay(call) == "" for call in calls):
            pin.verdict = "replayed"
        elif evidence:
            pin.verdict = "static: unsafe, data may be numpy or a tensor (said)"
        elif pin.unsafe and CANNOT_PIN in pin.message:
            pin.verdict = "static: unsafe, data of unknown kind (said)"
        else:
            pin.verdict = "static: no evidence against pinning"
        report.verdicts[pin.verdict] += 1
    for pin in report.pin_fixes:
        if pin.verdict == "replay crash":
            report.verdicts[pin.verdict] += 1
    return report


def show(pin: PinFix) -> str:
    model = FileModel(Path(pin.path))
    function = model.enclosing(pin.row, (ast.FunctionDef, ast.AsyncFunctionDef))
    context = model.lines[max(pin.row - 4, 0):pin.row + 1]
    return "\n".join([
        f"--- {pin.tree}: {pin.path}:{pin.row} {pin.code} {'UNSAFE' if pin.unsafe else 'safe'} [{pin.verdict}]",
        f"    in: {function.name if function else '<module>'}",
        f"    fix message: {pin.message}",
        *(f"    | {line}" for line in context),
        f"    => {pin.content[:300]}",
        *(f"    evidence: {item}" for item in pin.evidence),
    ])


def unpacked(path: Path, into: Path) -> Path:
    """A tree to check: `path` itself when it is a folder, else the .py files of a wheel or sdist unpacked
    into a folder of `into` named after the package (the archive itself is only read)."""
    if path.is_dir():
        return path
    target = into / path.name.split("-")[0]
    if not target.exists():
        if path.suffix == ".whl":
            with zipfile.ZipFile(path) as archive:
                archive.extractall(target, [name for name in archive.namelist() if name.endswith(".py")])
        else:
            with tarfile.open(path) as archive:
                archive.extractall(target, [member for member in archive.getmembers()
                                            if member.isfile() and member.name.endswith(".py")], filter="data")
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path, help="folders, or wheels / sdists to unpack (.py files only)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sample", type=int, default=0, help="print this many pin fixes, at random, to check by hand")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--linter", help="a python with another h2dlint installed (an older commit) to lint with")
    parser.add_argument("--save", type=Path, help="keep each tree's findings in this folder, and reuse them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="h2dlint-fix-safety-") as work:
        args.trees = [unpacked(tree, Path(work)) for tree in args.trees]
        return check_and_print(args)


def check_and_print(args) -> int:
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    reports = [check_tree(tree, args.jobs, args.linter, args.save / f"{tree.name}.json" if args.save else None)
               for tree in args.trees]
    print(f"{'tree':16} {'findings':>8} {'fixes':>6} {'pin fixes':>9}  verdicts")
    for report in reports:
        print(f"{report.tree:16} {report.findings:8} {report.fixes:6} {len(report.pin_fixes):9}  "
              + ", ".join(f"{verdict}: {count}" for verdict, count in sorted(report.verdicts.items())))
    pins = [pin for report in reports for pin in report.pin_fixes]
    totals = Counter(pin.verdict for pin in pins)
    print(f"{'all':16} {sum(r.findings for r in reports):8} {sum(r.fixes for r in reports):6} {len(pins):9}  "
          + ", ".join(f"{verdict}: {count}" for verdict, count in sorted(totals.items())))
    bad = [pin for pin in pins if pin.verdict.startswith("FLAGGED") or pin.verdict == "replay crash"]
    for pin in bad:
        print(show(pin))
    if args.sample:
        print(f"\n=== {args.sample} pin fixes at random (seed {args.seed}), for a hand check")
        for pin in random.Random(args.seed).sample(pins, min(args.sample, len(pins))):
            print(show(pin))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

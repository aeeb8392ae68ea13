"""The mission's real case, end to end: sglang's logits processor just before and just
after its maintainers removed the blocking index-tensor copies (0.5.11 -> 0.5.12).

    python scripts/mission_check.py

Downloads the two wheels with `pip download --no-deps` into a temp folder (nothing is
committed), then checks that h2dlint flags every blocking site of the "before" file,
that `--fix --unsafe-fixes` gives code equivalent to the maintainers' change (their
literal `pin_memory=True` and ours, a guard that is False without CUDA, count as the
same; so does their explicit `dtype=torch.int64`, which is the dtype torch infers for
those integer lists) and touches nothing else, that their fixed file is not reported
as blocking, and that the syncs their fix left behind (`repeat_interleave` without
`output_size`, fixed upstream later) are pointed at.
"""

from __future__ import annotations

import ast
import difflib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

FILE = "sglang/srt/layers/logits_processor.py"


def fetch(version: str, folder: Path) -> str:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"sglang=={version}", "-d",
                    str(folder / version)], check=True)
    wheel = next((folder / version).glob("sglang-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(FILE).decode()


def h2dlint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "h2dlint", "check", "--no-cache", *args],
                          capture_output=True, text=True)


class Normalise(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        kept = []
        for keyword in node.keywords:
            if keyword.arg == "pin_memory":
                keyword.value = ast.Constant(True)
            if keyword.arg == "dtype" and ast.unparse(keyword.value) == "torch.int64":
                continue
            kept.append(keyword)
        node.keywords = kept
        return node


def normalised(source: str) -> str:
    return ast.dump(Normalise().visit(ast.parse(source)))


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        before, after = fetch("0.5.11", folder), fetch("0.5.12", folder)
        ours = folder / "ours.py"
        ours.write_text(before)
        found = json.loads(h2dlint(str(ours), "--output-format", "json").stdout)
        print(f"before (0.5.11): {len(found)} HDL findings: "
              + ", ".join(f"{item['code']} line {item['location']['row']}" for item in found))
        h2dlint(str(ours), "--fix", "--unsafe-fixes", "--select", "HDL101")  # the maintainers' change: HDL101's
        fixed = ours.read_text()
        theirs = folder / "theirs.py"
        theirs.write_text(after)
        theirs_findings = [item for item in json.loads(h2dlint(str(theirs), "--output-format", "json").stdout)
                           if item["code"] == "HDL101"]
    blocking_lines = {item["location"]["row"] for item in found if item["code"] == "HDL101"}
    maintainers_changed = {index + 1 for tag, first, last, _, _ in
                           difflib.SequenceMatcher(None, before.splitlines(), after.splitlines()).get_opcodes()
                           if tag != "equal" for index in range(first, last)}
    ours_changed = {index + 1 for tag, first, last, _, _ in
                    difflib.SequenceMatcher(None, before.splitlines(), fixed.splitlines()).get_opcodes()
                    if tag != "equal" for index in range(first, last)}
    equivalent = normalised(fixed) == normalised(after)
    print("".join(difflib.unified_diff(after.splitlines(True), fixed.splitlines(True), "maintainers (0.5.12)",
                                       "h2dlint --fix --unsafe-fixes")))
    print(f"lines the maintainers changed: {sorted(maintainers_changed)}")
    print(f"lines h2dlint changed:        {sorted(ours_changed)}")
    print(f"equivalent to the maintainers' change (pin guard and inferred int64 aside): {equivalent}")
    print(f"HDL101 findings on the maintainers' fixed file: {len(theirs_findings)}")
    left_behind = sorted(item["location"]["row"] for item in found if item["code"] == "HDL304")
    print(f"syncs the seed fix left behind (repeat_interleave without output_size, HDL304): lines {left_behind}")
    ok = equivalent and ours_changed <= maintainers_changed and not theirs_findings and len(blocking_lines) == 3 \
        and len(left_behind) == 2
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Precision of an opt-in audit rule by the evidence of hotness its findings carry.

    python scripts/audit_by_evidence.py HDL202 VERDICTS.tsv TREE_ROOT FINDINGS.json [VERDICTS.tsv TREE_ROOT FINDINGS.json ...]

Each VERDICTS.tsv is a hand-check file of docs/precision (columns set, site, code, verdict, ...;
sites relative to TREE_ROOT); FINDINGS.json is h2dlint's JSON output on that tree with the rule
selected (`--select HDL202 --output-format json`). A verdict is joined with the finding on its
line (or one or two lines off, where the code moved), and counted under the place the finding's
message names: in a loop, in a function hot by its own name (`forward`, a step), hot through
calls (`hot: A -> B`), or both. Prints one Markdown row per kind, then the verdicts no finding
matches any more (removed since they were read).
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
from collections import Counter, defaultdict


def evidence(message: str) -> str:
    """Where a finding says its code runs: the parenthesis after the read (`(in a loop and in `forward`)`)."""
    found = re.search(r"\((in [^)]*|under [^)]*)\)", message)
    where = found.group(1) if found else ""
    kinds = []
    if "in a loop" in where:
        kinds.append("loop")
    if "hot:" in where:
        kinds.append("hot through calls")
    elif re.search(r"in `[^`]+`", where):
        kinds.append("hot by name")
    return " + ".join(kinds) or "other"


def main(argv: list[str]) -> int:
    code, rest = argv[0], argv[1:]
    if not rest or len(rest) % 3:
        print(__doc__, file=sys.stderr)
        return 2
    table: dict[str, Counter] = defaultdict(Counter)
    gone = Counter()
    for verdicts, root, findings_path in zip(rest[::3], rest[1::3], rest[2::3], strict=True):
        findings = {(os.path.realpath(f["filename"]), f["location"]["row"]): f["message"]
                    for f in json.load(open(findings_path)) if f["code"] == code}
        for row in csv.DictReader(open(verdicts), delimiter="\t"):
            if row["code"] != code:
                continue
            path, line = row["site"].split(":")[:2]
            full = os.path.realpath(os.path.join(root, path))
            message = next((findings[(full, int(line) + off)] for off in (0, -1, 1, -2, 2)
                            if (full, int(line) + off) in findings), None)
            if message is None:
                gone[row["verdict"]] += 1
            else:
                table[evidence(message)][row["verdict"]] += 1
    print("| where | checked | TP | FP | unclear | precision |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for kind in sorted(table, key=lambda kind: -sum(table[kind].values())):
        counts = table[kind]
        total = sum(counts.values())
        print(f"| {kind} | {total} | {counts['TP']} | {counts['FP']} | {counts['unclear']} | "
              f"{counts['TP'] / total:.0%} |")
    print(f"\nverdicts with no {code} finding any more: {dict(gone)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

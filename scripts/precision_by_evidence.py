"""Hand-check verdicts by the evidence of hotness the findings carry now, rule by rule.

    python scripts/precision_by_evidence.py [--codes HDL101,HDL102] [--set default] [--by-rule]
        VERDICTS.tsv TREE_ROOT FINDINGS.json [VERDICTS.tsv TREE_ROOT FINDINGS.json ...]

Each VERDICTS.tsv is a hand-check file of docs/precision (columns set, site, code, verdict, cause, ...; sites
relative to TREE_ROOT); FINDINGS.json is h2dlint's JSON output on that tree now (`--output-format json`, with the
rules whose verdicts are to be joined selected). A verdict is joined with the finding of its rule on its line (or
one or two lines off, where the code moved) and counted under the `hot` evidence that finding carries: hot
through calls (`A.forward -> B.step`), in a loop and in a function hot by its own name, hot by its own name
(`forward`, a step), in a loop, under CUDA graph capture, or none. `--set` keeps the verdicts of one set
(`default` also takes `default sample`); `--codes` those of some rules; `--by-rule` splits the table by rule.

Prints one Markdown row per kind of evidence (and rule), then how many verdicts no finding matches any more
(removed since they were read), by verdict. The question it answers: is there a level of evidence at which a rule
is precise enough to be on by default?
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from collections import Counter, defaultdict

KINDS = ("hot through calls", "in a loop and hot by name", "hot by name", "in a loop", "under graph capture",
         "none")


def evidence_kind(hot: str) -> str:
    """The kind of a finding's `hot` evidence: the call chain when there is one, else the description of where
    the code is (`in a loop and in `forward``)."""
    if not hot:
        return "none"
    if "->" in hot:
        return "hot through calls"
    if hot.startswith("under CUDA graph capture"):
        return "under graph capture"
    named = "in `" in hot
    if "in a loop" in hot:
        return "in a loop and hot by name" if named else "in a loop"
    return "hot by name" if named else "none"


def joined(verdicts: str, root: str, findings_path: str, codes: set[str] | None, wanted_set: str | None):
    """(code, verdict, evidence kind or None when no finding matches) for each verdict kept."""
    with open(findings_path) as stream:
        findings = {(os.path.realpath(found["filename"]), found["location"]["row"], found["code"]): found
                    for found in json.load(stream)}
    with open(verdicts, newline="") as stream:
        for row in csv.DictReader(stream, delimiter="\t"):
            if codes is not None and row["code"] not in codes:
                continue
            if wanted_set is not None and row["set"].split()[0] != wanted_set:
                continue
            path, line = row["site"].split(":")[:2]
            full = os.path.realpath(os.path.join(root, path))
            found = next((findings[key] for offset in (0, -1, 1, -2, 2)
                          if (key := (full, int(line) + offset, row["code"])) in findings), None)
            kind = None if found is None else evidence_kind(found.get("evidence", {}).get("hot", ""))
            yield row["code"], row["verdict"], kind


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--codes", help="comma-separated rule codes whose verdicts are joined (default: all)")
    parser.add_argument("--set", dest="wanted_set", help="only the verdicts of this set (`default`, `optin`)")
    parser.add_argument("--by-rule", action="store_true", help="one row per rule and kind of evidence")
    parser.add_argument("triples", nargs="+", metavar="VERDICTS.tsv TREE_ROOT FINDINGS.json")
    args = parser.parse_args(argv)
    if len(args.triples) % 3:
        parser.error("give VERDICTS.tsv TREE_ROOT FINDINGS.json in threes")
    codes = set(args.codes.split(",")) if args.codes else None
    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    gone: Counter = Counter()
    triples = args.triples
    for verdicts, root, findings_path in zip(triples[::3], triples[1::3], triples[2::3], strict=True):
        for code, verdict, kind in joined(verdicts, root, findings_path, codes, args.wanted_set):
            if kind is None:
                gone[verdict] += 1
            else:
                table[(code if args.by_rule else "", kind)][verdict] += 1
    print("| rule | hot evidence | checked | TP | FP | unclear | precision |" if args.by_rule else
          "| hot evidence | checked | TP | FP | unclear | precision |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |" if args.by_rule else
          "| --- | ---: | ---: | ---: | ---: | ---: |")
    for rule, kind in sorted(table, key=lambda key: (key[0], KINDS.index(key[1]))):
        counts = table[(rule, kind)]
        total = sum(counts.values())
        first = f"| {rule} | {kind} |" if args.by_rule else f"| {kind} |"
        print(f"{first} {total} | {counts['TP']} | {counts['FP']} | {counts['unclear']} | "
              f"{counts['TP'] / total:.0%} |")
    print(f"\nverdicts no finding matches any more: {dict(sorted(gone.items()))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

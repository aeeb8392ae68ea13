"""Tally hand-checked precision verdicts against the findings of a whole tree.

    python scripts/precision_tally.py VERDICTS.tsv DEFAULT.json ALL.json

VERDICTS.tsv has the columns set, site, code, verdict (TP/FP/unclear), cause, reason
(docs/precision/heldout-vllm/verdicts.tsv). Prints, as Markdown, per rule: findings in
the tree, checked, TP, FP, unclear, precision (unclear counted as not TP); then the
overall precision of the sample and weighted by each rule's findings in the tree, for
the default rules and for ALL (default + opt-in).
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter, defaultdict


def main(argv: list[str]) -> int:
    verdicts_path, default_json, all_json = argv
    rows = list(csv.DictReader(open(verdicts_path), delimiter="\t"))
    tree_default = Counter(f["code"] for f in json.load(open(default_json)))
    tree_all = Counter(f["code"] for f in json.load(open(all_json)))
    per = defaultdict(Counter)
    for r in rows:
        per[r["code"]][r["verdict"]] += 1

    def prec(c: Counter) -> float:
        n = sum(c.values())
        return c["TP"] / n if n else float("nan")

    print("| rule | default | in tree (default run) | in tree (ALL run) | checked | TP | FP | unclear | precision |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for code in sorted(tree_all):
        c = per.get(code, Counter())
        on = "on" if code in tree_default else "opt-in"
        p = f"{prec(c):.0%}" if c else "–"
        print(
            f"| {code} | {on} | {tree_default.get(code, 0)} | {tree_all[code]} | {sum(c.values())} "
            f"| {c['TP']} | {c['FP']} | {c['unclear']} | {p} |"
        )
    print()

    def overall(codes: set[str], tree: Counter, label: str) -> None:
        sample = Counter()
        for code in codes:
            sample.update(per.get(code, Counter()))
        n = sum(sample.values())
        weighted_num = sum(tree[c] * prec(per[c]) for c in codes if per.get(c))
        weighted_den = sum(tree[c] for c in codes if per.get(c))
        unsampled = sorted(c for c in codes if not per.get(c))
        if not n:
            print(f"- **{label}**: no finding checked")
            return
        print(
            f"- **{label}**: sample {sample['TP']}/{n} = {sample['TP'] / n:.1%}; weighted by findings in the tree "
            f"{weighted_num / weighted_den:.1%} (over {weighted_den} findings"
            + (f"; rules not sampled: {', '.join(unsampled)}" if unsampled else "")
            + ")"
        )

    default_codes = set(tree_default)
    overall(default_codes, tree_default, "default rules")
    sync = {c for c in default_codes if c[:4] in ("HDL2", "HDL3", "HDL5")}
    overall(sync, tree_default, "default sync rules (HDL2xx/3xx/5xx)")
    overall(default_codes - sync, tree_default, "default copy rules (HDL1xx/4xx)")
    opt = set(tree_all) - default_codes
    overall(opt, tree_all, "opt-in rules")
    overall(set(tree_all), tree_all, "ALL (default + opt-in)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

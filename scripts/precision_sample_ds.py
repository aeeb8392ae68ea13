"""Draw a reproducible, stratified sample of h2dlint findings for a hand precision check.

    python scripts/precision_sample_ds.py FINDINGS.json --seed 20261204 --count 70 \
        --quota HDL301=all --quota HDL101=37 [--codes HDL202,HDL204] [--root PREFIX]

FINDINGS.json is the output of `h2dlint check --output-format json`.  Every code
named by --quota gets that many findings (`all` = every finding of the code); every
other code among the kept findings gets at least one; the rest of --count is filled
at random from what is left.  --codes keeps only those codes (e.g. the opt-in ones
of a `--select ALL` run).  The draw uses random.Random(seed) over findings sorted by
(code, file, row, column), so the same JSON and seed give the same sample.
One line per finding: index, code, file:row:col, placement, hot chain, message.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict


def _key(f: dict) -> tuple:
    return (f["code"], f["filename"], f["location"]["row"], f["location"]["column"])


def sample(findings: list[dict], seed: int, count: int, quotas: dict[str, str]) -> list[dict]:
    rng = random.Random(seed)
    by_code: dict[str, list[dict]] = defaultdict(list)
    for f in sorted(findings, key=_key):
        by_code[f["code"]].append(f)
    picked: list[dict] = []
    rest: list[dict] = []
    for code in sorted(by_code):
        pool = by_code[code][:]
        rng.shuffle(pool)
        q = quotas.get(code)
        n = len(pool) if q == "all" else int(q) if q is not None else 1
        n = min(n, len(pool))
        picked += pool[:n]
        rest += pool[n:]
    rng.shuffle(rest)
    if len(picked) < count:
        picked += rest[: count - len(picked)]
    return sorted(picked, key=_key)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--quota", action="append", default=[], metavar="CODE=N|all")
    p.add_argument("--codes", default="", help="comma-separated codes to keep")
    p.add_argument("--root", default="", help="prefix to strip from file names")
    a = p.parse_args(argv)
    with open(a.json, encoding="utf-8") as fh:
        findings = json.load(fh)
    if a.codes:
        keep = set(a.codes.split(","))
        findings = [f for f in findings if f["code"] in keep]
    quotas = dict(q.split("=", 1) for q in a.quota)
    counts: dict[str, int] = defaultdict(int)
    for f in findings:
        counts[f["code"]] += 1
    chosen = sample(findings, a.seed, a.count, quotas)
    got: dict[str, int] = defaultdict(int)
    for f in chosen:
        got[f["code"]] += 1
    print("# findings per code: " + ", ".join(f"{c}={counts[c]}" for c in sorted(counts)))
    print("# sampled per code:  " + ", ".join(f"{c}={got[c]}" for c in sorted(got)) + f"  (total {len(chosen)})")
    for i, f in enumerate(chosen, 1):
        name = f["filename"].removeprefix(a.root).lstrip("/")
        ev = f.get("evidence") or {}
        extra = ""
        if ev:
            extra = f" [placement={ev.get('placement')}"
            if ev.get("placement_source"):
                extra += f" src={ev['placement_source']}"
            if ev.get("hot"):
                extra += f" hot={ev['hot']}"
            extra += "]"
        loc = f["location"]
        print(f"{i:3d} {f['code']} {name}:{loc['row']}:{loc['column']}{extra} :: {f['message'][:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

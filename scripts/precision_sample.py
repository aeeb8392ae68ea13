"""Draw a reproducible random sample of h2dlint findings for a hand precision check.

    python scripts/precision_sample.py FINDINGS.json --seed 20261204 --count 80 \
        [--quota HDL201=10 --quota HDL301=all ...] [--codes HDL108,HDL202,...] \
        [--sync-share 0.5] [--root /tmp/heldout/vllm] [--format text|json]

FINDINGS.json is `h2dlint check --output-format json` output. The sample is
stratified by rule code: every code with findings gets at least one finding (or
its quota; `all` takes every finding of the code), then, when --sync-share is
given, the sync rules (HDL2xx, HDL3xx, HDL5xx) are topped up to at least that
share of --count (or all of them, when there are fewer), and the rest of --count
is drawn at random from the findings not yet taken. Within a code the draw is
`random.Random(seed)`-driven over findings sorted by (file, row, column, code), so
the same JSON and arguments always give the same sample.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path


def is_sync(code: str) -> bool:
    return code[:4] in ("HDL2", "HDL3", "HDL5")


def key(f: dict) -> tuple:
    return (f["filename"], f["location"]["row"], f["location"]["column"], f["code"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("findings", type=Path)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--quota", action="append", default=[], help="CODE=N or CODE=all")
    p.add_argument("--codes", default="", help="comma-separated codes to sample from (default: all)")
    p.add_argument("--exclude", default="", help="comma-separated codes to leave out")
    p.add_argument("--sync-share", type=float, default=0.0)
    p.add_argument("--root", default="", help="prefix stripped from file names")
    p.add_argument("--format", choices=("text", "json"), default="text")
    a = p.parse_args(argv)

    findings = json.loads(a.findings.read_text())
    codes = {c for c in a.codes.split(",") if c}
    excluded = {c for c in a.exclude.split(",") if c}
    findings = [f for f in findings if (not codes or f["code"] in codes) and f["code"] not in excluded]
    findings.sort(key=key)
    rng = random.Random(a.seed)

    by_code: dict[str, list[dict]] = {}
    for f in findings:
        by_code.setdefault(f["code"], []).append(f)
    for lst in by_code.values():
        rng.shuffle(lst)

    quotas = {}
    for q in a.quota:
        c, _, n = q.partition("=")
        quotas[c] = n

    taken: list[dict] = []
    taken_ids: set[int] = set()

    def take(f: dict) -> None:
        if id(f) not in taken_ids:
            taken_ids.add(id(f))
            taken.append(f)

    for code in sorted(by_code):
        lst = by_code[code]
        q = quotas.get(code, "1")
        n = len(lst) if q == "all" else min(int(q), len(lst))
        for f in lst[:n]:
            take(f)

    if a.sync_share > 0:
        want = int(round(a.sync_share * a.count + 0.4999))
        pool = [f for code in sorted(by_code) if is_sync(code) for f in by_code[code] if id(f) not in taken_ids]
        rng.shuffle(pool)
        have = sum(is_sync(f["code"]) for f in taken)
        for f in pool[: max(0, want - have)]:
            take(f)

    rest = [f for code in sorted(by_code) for f in by_code[code] if id(f) not in taken_ids]
    rng.shuffle(rest)
    for f in rest[: max(0, a.count - len(taken))]:
        take(f)

    taken.sort(key=key)
    total = Counter(f["code"] for f in findings)
    got = Counter(f["code"] for f in taken)
    if a.format == "json":
        json.dump(taken, sys.stdout, indent=1)
        print()
        return 0
    print(f"# {len(findings)} findings, sample {len(taken)} (seed {a.seed})")
    for code in sorted(total):
        print(f"#   {code}: {got[code]} of {total[code]}")
    for i, f in enumerate(taken, 1):
        name = f["filename"]
        if a.root and name.startswith(a.root):
            name = name[len(a.root) :].lstrip("/")
        ev = f.get("evidence") or {}
        extra = ""
        if ev:
            extra = "  | " + "; ".join(f"{k}={v}" for k, v in ev.items())
        print(f"{i:3d} {name}:{f['location']['row']} {f['code']} {f['message']}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

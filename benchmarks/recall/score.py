"""Score h2dlint's recall on real, merged fixes of GPU syncs and blocking copies (cases.toml).

    python benchmarks/recall/score.py                   # fetch what is missing, lint, print the tables
    python benchmarks/recall/score.py --verbose         # also one line per fixed place
    python benchmarks/recall/score.py --json            # the same figures as JSON (for docs)
    python benchmarks/recall/score.py --single-file     # lint each case file alone, without its project

For every case the release before the fix and the first one after it are fetched (fetch.py) and
h2dlint runs on both, once with the default rules and once with `--select ALL`
(`--output-format json --no-cache --exit-zero`, an empty config so no repository's settings leak in).

Per fixed place:
  hit   a finding (any code) whose lines come within 3 lines of the place in the before file;
  gone  no finding within 3 lines of the same code's place in the after file (the case's
        `after_line`/`after_end`, or where a line diff of the two files maps the place).

Two ways to run h2dlint:
  --project-root (default)  h2dlint runs once on each extracted release tree (every .py file of the
                            package, extracted whole with fetch.py --whole-tree) and the findings of
                            the case's file are read from that run: what the project model sees, and
                            what a user's run sees.
  --single-file             h2dlint runs on each case file alone: what a model of one file finds.
                            Far cheaper (docs/recall.md gives both times).
"""

from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fetch  # noqa: E402

KINDS = ("copy", "d2h", "condition", "shape", "sync")
MODES = ("default", "ALL")
WINDOW = 3


def lint(paths: list[Path], select_all: bool, config: Path, jobs: int) -> list[dict]:
    cmd = [sys.executable, "-m", "h2dlint", "check", *map(str, paths), "--config", str(config),
           "--output-format", "json", "--no-cache", "--exit-zero", "--jobs", str(jobs)]
    if select_all:
        cmd += ["--select", "ALL"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"h2dlint failed ({proc.returncode}) on {paths}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


def by_file(findings: list[dict]) -> dict[Path, list[dict]]:
    out: dict[Path, list[dict]] = defaultdict(list)
    for f in findings:
        out[Path(f["filename"]).resolve()].append(f)
    return out


def near(findings: list[dict], lo: int, hi: int, window: int = WINDOW) -> list[dict]:
    return [f for f in findings if f["location"]["row"] <= hi + window and f["end_location"]["row"] >= lo - window]


def map_lines(before: list[str], after: list[str], lo: int, hi: int) -> tuple[int, int]:
    """Where lines lo..hi (1-based) of before are in after, by a line diff of the two files."""
    sm = difflib.SequenceMatcher(None, [s.strip() for s in before], [s.strip() for s in after], autojunk=False)
    out_lo = out_hi = None
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        for i in range(max(i1, lo - 1), min(i2, hi)):
            if tag == "equal":
                j_lo = j_hi = j1 + (i - i1) + 1
            else:  # replaced or deleted: the whole replacement (or the gap) stands for it
                j_lo, j_hi = j1 + 1, max(j2, j1 + 1)
            out_lo = j_lo if out_lo is None else min(out_lo, j_lo)
            out_hi = j_hi if out_hi is None else max(out_hi, j_hi)
    return (out_lo or 1, out_hi or 1)


def places(cases: list[dict]):
    for case in cases:
        for place in case["place"]:
            yield case, place


def run(args) -> dict:
    cache = args.cache.resolve()
    cases = fetch.load_cases(args.cases)
    if args.split:
        cases = [c for c in cases if c.get("split") == args.split]
    if args.only:
        cases = [c for c in cases if any(s in c["id"] or s == c["project"] for s in args.only)]
    t0 = time.time()
    fetch.fetch_all(cache, args.project_root, args.find, cases, quiet=not args.verbose)
    t_fetch = time.time() - t0

    src = cache / "src"
    files = {(p, v, path) for (p, v), paths in fetch.releases(cases).items() for path in paths}
    t1 = time.time()
    if args.project_root:
        jobs = [(mode, src / f"{p}-{v}") for mode in MODES for (p, v) in sorted({(p, v) for p, v, _ in files})]
        per_run_jobs = args.jobs
        pool_size = 1
    else:
        jobs = [(mode, src / f"{p}-{v}" / path) for mode in MODES for (p, v, path) in sorted(files)]
        per_run_jobs = 1
        pool_size = args.jobs

    def one(job):
        mode, path = job
        run_config = config
        if args.project_root:
            # The release's tree is the project the model covers, not a repository it happens to lie in.
            run_config = Path(tempfile.mkdtemp(dir=configs.name)) / "h2dlint.toml"
            run_config.write_text(f"project-root = {json.dumps(str(path))}\n")
        return mode, by_file(lint([path], mode == "ALL", run_config, per_run_jobs))

    merged: dict[str, dict[Path, list[dict]]] = {m: defaultdict(list) for m in MODES}
    configs = tempfile.TemporaryDirectory(prefix="recall-")  # removed when the linting is done
    config = Path(configs.name) / "h2dlint.toml"
    config.write_text("")  # defaults: nothing from any repository's settings
    with configs, ThreadPoolExecutor(pool_size) as pool:
        for mode, found in pool.map(one, jobs):
            for path, fs in found.items():
                merged[mode][path].extend(fs)
    t_lint = time.time() - t1

    rows = []
    for case, place in places(cases):
        before = src / f"{case['package']}-{case['before']}" / case["path"]
        after = src / f"{case['package']}-{case['after']}" / case.get("after_path", case["path"])
        lo, hi = place["line"], place.get("end", place["line"])
        if "after_line" in place:
            a_lo, a_hi = place["after_line"], place.get("after_end", place["after_line"])
        else:
            a_lo, a_hi = map_lines(before.read_text(encoding="utf-8").splitlines(),
                                   after.read_text(encoding="utf-8").splitlines(), lo, hi)
        row = {"case": case["id"], "project": case["project"], "split": case.get("split", ""), "kind": place["kind"],
               "file": case["path"], "line": lo, "end": hi, "after_line": a_lo, "after_end": a_hi,
               "what": place["what"]}
        for mode in MODES:
            hits = near(merged[mode].get(before.resolve(), []), lo, hi)
            left = near(merged[mode].get(after.resolve(), []), a_lo, a_hi)
            row[mode] = {"hit": bool(hits), "gone": not left, "rules": sorted({f["code"] for f in hits}),
                         "hot": sorted({f.get("evidence", {}).get("hot", "") for f in hits}),
                         "on_the_lines": bool(near(hits, lo, hi, 0)),
                         "after_rules": sorted({f["code"] for f in left})}
        rows.append(row)
    return {"mode": "project-root" if args.project_root else "single-file", "rows": rows,
            "seconds": {"fetch": round(t_fetch, 1), "lint": round(t_lint, 1)},
            "releases": len(fetch.releases(cases)), "cases": len(cases)}


def tally(rows: list[dict], key: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        t = out.setdefault(r[key], {"places": 0, "hit_default": 0, "hit_gone_default": 0, "hit_ALL": 0,
                                    "hit_gone_ALL": 0, "on_the_lines_default": 0, "on_the_lines_ALL": 0})
        t["places"] += 1
        for mode in MODES:
            t[f"hit_{mode}"] += r[mode]["hit"]
            t[f"hit_gone_{mode}"] += r[mode]["hit"] and r[mode]["gone"]
            t[f"on_the_lines_{mode}"] += r[mode]["on_the_lines"]
    return out


def table(title: str, counts: dict[str, dict[str, int]], order=None) -> str:
    keys = [k for k in (order or sorted(counts)) if k in counts]
    total = {f: sum(counts[k][f] for k in keys) for f in next(iter(counts.values()))}
    lines = [f"| {title} | places | hit (default) | hit and gone (default) | hit (ALL) | hit and gone (ALL) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for k, t in [(k, counts[k]) for k in keys] + [("**total**", total)]:
        lines.append(f"| {k} | {t['places']} | {t['hit_default']} | {t['hit_gone_default']} | {t['hit_ALL']} "
                     f"| {t['hit_gone_ALL']} |")
    return "\n".join(lines)


def cell(row: dict, mode: str) -> str:
    """The rules that hit the place (`~`: only on a neighbouring line), and what is still reported after the fix."""
    r = row[mode]
    near_only = "~" if r["hit"] and not r["on_the_lines"] else ""
    after = "" if r["gone"] else " (after: " + ",".join(r["after_rules"]) + ")"
    return near_only + (",".join(r["rules"]) or "-") + after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=fetch.DEFAULT_CACHE,
                        help="download and work folder (default: %(default)s)")
    parser.add_argument("--cases", type=Path, default=fetch.CASES, help="the case file (default: %(default)s)")
    parser.add_argument("--find", type=Path, action="append", default=[],
                        help="a folder of already downloaded archives to reuse")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--project-root", dest="project_root", action="store_true", default=True,
                     help="lint each release's whole package tree and read the case file's findings (default)")
    how.add_argument("--single-file", dest="project_root", action="store_false",
                     help="lint each case file on its own, without the rest of its project")
    parser.add_argument("--jobs", type=int, default=2, help="h2dlint worker processes (default: 2)")
    parser.add_argument("--only", action="append", default=[],
                        help="only cases whose id contains this (or of this project)")
    parser.add_argument("--split", choices=("tuning", "held-out"), help="only the cases of this split")
    parser.add_argument("--verbose", "-v", action="store_true", help="one line per fixed place")
    parser.add_argument("--evidence", action="store_true",
                        help="with --verbose: the hot evidence of the default findings that hit each place")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    res = run(args)
    rows = res["rows"]
    res["by_kind"] = tally(rows, "kind")
    res["by_project"] = tally(rows, "project")
    res["by_split"] = tally(rows, "split")
    if args.json:
        print(json.dumps(res, indent=1))
        return
    print(f"{len(rows)} places in {res['cases']} cases from {len(res['by_project'])} projects; "
          f"h2dlint mode: {res['mode']}; fetch {res['seconds']['fetch']} s, lint {res['seconds']['lint']} s\n")
    print(table("kind", res["by_kind"], KINDS) + "\n")
    print(table("project", res["by_project"]) + "\n")
    print(table("split", res["by_split"]) + "\n")
    on = {m: sum(r[m]["on_the_lines"] for r in rows) for m in MODES}
    print(f"hits with a finding on the place's own lines (no window): default {on['default']}, ALL {on['ALL']}\n")
    if args.verbose:
        print("~: hit only by a finding on a neighbouring line (within 3 lines, none on the place's own lines)\n")
        for r in rows:
            print(f"{r['case']:48} {r['line']:>5}-{r['end']:<5} {r['kind']:9} default: {cell(r, 'default'):24} "
                  f"ALL: {cell(r, 'ALL'):30} {r['what']}")
            if args.evidence and r["default"]["hit"]:
                print(f"{'':66} default hit's hot evidence: {' | '.join(r['default']['hot']) or '(none)'}")


if __name__ == "__main__":
    main()

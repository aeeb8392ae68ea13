"""Check that the fast path (prefilters, candidate snippets) and the full path
(every file, whole-module LibCST visit) give identical findings on a real tree.

    python scripts/parity.py PATH [PATH ...] [--sample N] [--select CODES]

--select compares the paths for some rules only (default: ALL): the prefilters and candidate
filters of a selection skip other files and calls than those of every rule together.

Syntax-error findings (HDL001) are left out of the comparison: the fast path
does not parse files that no rule can apply to, by design.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from h2dlint.discovery import find_python_files
from h2dlint.engine import Linter, process_file
from h2dlint.model import SYNTAX_ERROR
from h2dlint.rule import all_rules
from h2dlint.settings import Settings


def findings(files: list[Path], full_parse: bool, select: tuple[str, ...]) -> dict[str, list[tuple]]:
    # Every copy, hot or not: both parse paths must agree on all the sites the rules look at.
    settings = Settings(select=select, full_parse=full_parse, copies_outside_hot_code=True)
    rules = all_rules()
    linter = Linter([rules[code] for code in settings.enabled_codes(rules)], settings)
    report = {}
    for path in files:
        result = process_file(path, linter, "check")
        report[str(path)] = sorted((f.start, f.end, f.code, f.message, f.fix) for f in result.findings
                                   if f.code != SYNTAX_ERROR)
        if result.error:
            report[str(path)].append(("error", result.error))
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--sample", type=int, default=0, help="check every k-th file only, k = files / N")
    parser.add_argument("--select", default="ALL", help="rule codes or prefixes, comma separated (default: ALL)")
    args = parser.parse_args()
    files = find_python_files(args.paths)
    if args.sample and len(files) > args.sample:
        files = files[:: len(files) // args.sample]
    started = time.perf_counter()
    select = tuple(args.select.split(","))
    fast = findings(files, full_parse=False, select=select)
    fast_seconds = time.perf_counter() - started
    started = time.perf_counter()
    full = findings(files, full_parse=True, select=select)
    full_seconds = time.perf_counter() - started
    differing = [name for name in fast if fast[name] != full[name]]
    total = sum(len(items) for items in full.values())
    print(f"{len(files)} files, {total} findings; fast path {fast_seconds:.1f} s, full path {full_seconds:.1f} s; "
          f"{len(differing)} files differ")
    for name in differing[:20]:
        print(f"  {name}\n    fast: {fast[name]}\n    full: {full[name]}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())

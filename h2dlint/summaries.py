"""Reports that count instead of listing: `--statistics` and `--show-fixes` (as Ruff prints them)."""

from __future__ import annotations

import json
from collections import Counter

from rich.console import Console
from rich.text import Text

from .ci_formats import code_name, report_path, write_raw
from .engine import FileResult
from .model import PLACEMENT_LEVELS, Applicability

STATISTICS_FORMATS = ("full", "concise", "json")


def statistics(results: list[FileResult], unsafe_fixes: bool) -> list[dict]:
    """Per code: how many findings remain and whether `--fix` can fix them; most frequent first."""
    counts: Counter[str] = Counter()
    placements: dict[str, Counter[str]] = {}  # per code: how the GPU placement of its findings' tensors is known
    fixable: set[str] = set()
    for result in results:
        for finding in result.findings:
            counts[finding.code] += 1
            level = dict(finding.evidence).get("placement")
            if level:
                placements.setdefault(finding.code, Counter())[level] += 1
            if finding.fix is not None and (finding.fix.applicability is Applicability.SAFE or unsafe_fixes):
                fixable.add(finding.code)
    ordered = sorted(counts, key=lambda code: (-counts[code], code))
    return [{"code": code, "name": code_name(code), "count": counts[code], "fixable": code in fixable,
             **({"placement": {level: placements[code][level] for level in PLACEMENT_LEVELS
                               if placements[code][level]}} if code in placements else {})}
            for code in ordered]


def write_statistics(console: Console, results: list[FileResult], unsafe_fixes: bool, output_format: str) -> None:
    """`count<TAB>code<TAB>[*] name` lines (the fields padded to line up), or with json a list of objects."""
    rows = statistics(results, unsafe_fixes)
    if output_format == "json":
        write_raw(console, [json.dumps(rows, indent=2)])
        return
    count_width = max((len(str(row["count"])) for row in rows), default=0)
    code_width = max((len(row["code"]) for row in rows), default=0)
    any_fixable = any(row["fixable"] for row in rows)
    lines = []
    for row in rows:
        marker = ("[*] " if row["fixable"] else "[ ] ") if any_fixable else ""
        placement = ", ".join(f"{level} {count}" for level, count in row.get("placement", {}).items())
        lines.append(f"{row['count']:>{count_width}}\t{row['code']:<{code_width}}\t{marker}{row['name']}"
                     + (f"\t(on the GPU: {placement})" if placement else ""))
    write_raw(console, lines)


def write_fix_summary(console: Console, results: list[FileResult]) -> None:
    """What `--fix` changed, per file and per code: `Fixed 2 errors:` then `- path:` and `1 × CODE (name)`."""
    fixed = [result for result in results if result.fixed_codes]
    if not fixed:
        return
    total = sum(len(result.fixed_codes) for result in fixed)
    console.print(Text(f"Fixed {total} error{'s' * (total != 1)}:", style="bold green"))
    for result in sorted(fixed, key=lambda result: result.path):
        console.print(Text.assemble(("- ", "cyan"), (report_path(result.path), "bold"), (":", "cyan")))
        counts = Counter(result.fixed_codes)
        width = max(len(str(count)) for count in counts.values())
        for code in sorted(counts):
            console.print(Text.assemble(f"    {counts[code]:>{width}} × ", (code, "bold red"), f" ({code_name(code)})"))
    console.print()

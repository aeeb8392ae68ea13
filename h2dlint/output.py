"""Reporting findings: one function per output format."""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

from rich.console import Console
from rich.control import strip_control_codes
from rich.text import Text

from .ci_formats import code_name, github_annotations, gitlab_report, junit_report, rdjson_report, sarif_log, write_raw
from .engine import FileResult, apply_edits
from .model import Applicability, Finding
from .rule import all_rules
from .source import LineIndex, read_source
from .summaries import write_fix_summary


def _json_location(position) -> dict:
    return {"column": position.column + 1, "row": position.line}


def location(finding: Finding) -> str:
    """`path:line:column` (1-based column), or `path:cell N:line:column` in a notebook."""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{finding.path}:{cell}{finding.start.line}:{finding.start.column + 1}:"


def finding_to_json(finding: Finding) -> dict:
    """A finding in the shape of Ruff's JSON output: the same keys, in the same (sorted) order."""
    fix = None
    if finding.fix is not None:
        fix = {
            "applicability": finding.fix.applicability.value,
            "edits": [{"content": edit.content, "end_location": _json_location(edit.end),
                       "location": _json_location(edit.start)} for edit in finding.fix.edits],
            "message": finding.fix.message,
        }
    # h2dlint's own key, `evidence` (why the code is hot; how a sync finding knows its tensor is on the GPU),
    # joins Ruff's keys in their sorted order, only where there is some.
    evidence = {"evidence": dict(finding.evidence)} if finding.evidence else {}
    return {
        "cell": finding.cell,
        "code": finding.code,
        "end_location": _json_location(finding.end),
        **evidence,
        "filename": os.path.abspath(finding.path),
        "fix": fix,
        "location": _json_location(finding.start),
        "message": finding.message,
        "name": code_name(finding.code),
        "noqa_row": finding.start.line,  # where --add-noqa writes its comment (a finding's first line)
        "severity": "error",
        "url": rule_url(finding.code),
    }


def rule_url(code: str) -> str | None:
    """Where the rule's docs are: the module that defines it, whose docstring `h2dlint rule CODE` prints;
    None for the input problems (HDL001, HDL002), which no rule reports."""
    rule = all_rules().get(code)
    return None if rule is None else Path(inspect.getfile(rule)).resolve().as_uri()


def write_json(console: Console, results: list[FileResult], options) -> None:
    findings = [finding_to_json(finding) for result in results for finding in result.findings]
    write_raw(console, [json.dumps(findings, indent=2)])


def write_json_lines(console: Console, results: list[FileResult], options) -> None:
    write_raw(console, [json.dumps(finding_to_json(finding), separators=(",", ":")) for finding in _all(results)])


def write_github(console: Console, results: list[FileResult], options) -> None:
    """Annotations, then the concise report: GitHub shows only the first few annotations of a step."""
    write_raw(console, github_annotations(results))
    write_concise(console, results, options)


def write_sarif(console: Console, results: list[FileResult], options) -> None:
    write_raw(console, [json.dumps(sarif_log(results), indent=2)])


def write_gitlab(console: Console, results: list[FileResult], options) -> None:
    write_raw(console, [json.dumps(gitlab_report(results), indent=2)])


def write_rdjson(console: Console, results: list[FileResult], options) -> None:
    write_raw(console, [json.dumps(rdjson_report(results, options.unsafe_fixes), indent=2)])


def write_junit(console: Console, results: list[FileResult], options) -> None:
    write_raw(console, [junit_report(results)])


def write_concise(console: Console, results: list[FileResult], options) -> None:
    lines = []
    for finding in _all(results):
        marker = "[*] " if _fixable(finding, options.unsafe_fixes) else ""
        lines.append(_headline(finding, marker))
    _print_lines(console, lines)
    _summary(console, results, options)


def write_full(console: Console, results: list[FileResult], options) -> None:
    texts: dict[tuple[str, int | None], LineIndex | None] = {}
    lines: list[Line] = []
    for finding in _all(results):
        key = (finding.path, finding.cell)
        if key not in texts:
            texts[key] = _line_index(finding, getattr(options, "texts", {}))
        index = texts[key]
        lines.append(_headline(finding))
        if index is not None and finding.start.line <= index.line_count:
            lines += _frame(index, finding)
            if finding.fix is not None:
                lines += _proposed_fix(index, finding)
        lines.append(())
    _print_lines(console, lines)
    _summary(console, results, options)


# A report line: its pieces of text, each with the Rich style it is shown in ("" for none).
Line = tuple[tuple[str, str], ...]


def _headline(finding: Finding, marker: str = "") -> Line:
    return (location(finding), "bold"), (" ", ""), (finding.code, "bold red"), (f" {marker}{finding.message}", "")


def _print_lines(console: Console, lines: list[Line]) -> None:
    """The report's lines, written at once. Where nothing is styled or wrapped (a pipe, a file) the text Rich
    would print is written directly: Rich's work per line was most of a long report's cost."""
    if not lines:
        return
    if console.color_system is None and console.soft_wrap and not console.record:
        plain = strip_control_codes("\n".join("".join(text for text, _ in line) for line in lines))
        if "\t" in plain:
            plain = "\n".join(_expand_tabs(line, console.tab_size) if "\t" in line else line
                              for line in plain.split("\n"))
        console.file.write(plain + "\n")
        console.file.flush()
        return
    console.print(Text("\n").join(Text.assemble(*line) for line in lines))


def _expand_tabs(line: str, tab_size: int) -> str:
    """Tabs expanded as Rich expands them: to tab stops counted in terminal cells (a CJK character takes two)."""
    text = Text(line)
    text.expand_tabs(tab_size)
    return text.plain


def _line_index(finding: Finding, in_memory: dict[str, str]) -> LineIndex | None:
    """The text a finding points into: read from stdin, a notebook's cell, or the file."""
    try:
        if finding.path in in_memory:
            return LineIndex(in_memory[finding.path])
        if finding.cell is not None:
            from .notebook import cell_text

            return LineIndex(cell_text(Path(finding.path), finding.cell))
        return LineIndex(read_source(Path(finding.path)).text)
    except Exception:
        return None


def _frame(index: LineIndex, finding: Finding) -> list[Line]:
    first = max(1, finding.start.line - 1)
    last = min(index.line_count, finding.end.line + 1)
    width = len(str(last))
    lines = []
    for line in range(first, last + 1):
        text = index.line_text(line).expandtabs(1)
        lines.append(((f"{line:>{width}} | ", "blue"), (text, "")))
        if finding.start.line == finding.end.line == line:
            start, end = finding.start.column, max(finding.end.column, finding.start.column + 1)
            lines.append(((f"{'':>{width}} | ", "blue"), (" " * start, ""), ("^" * (end - start), "red")))
    return lines


def _proposed_fix(index: LineIndex, finding: Finding) -> list[Line]:
    fix = finding.fix
    label = "Safe fix" if fix.applicability is Applicability.SAFE else "Unsafe fix"
    first = min(edit.start.line for edit in fix.edits)
    last = max(edit.end.line for edit in fix.edits)
    end_offset = index.starts[last] if last < len(index.starts) else len(index.text)
    before = index.text[index.starts[first - 1]:end_offset]
    shifted = [type(edit)(type(edit.start)(edit.start.line - first + 1, edit.start.column),
                          type(edit.end)(edit.end.line - first + 1, edit.end.column), edit.content)
               for edit in fix.edits]
    after = apply_edits(before, shifted)
    return [((f"{label}: {fix.message}", "italic cyan"),),
            *(((f"  - {line}", "red"),) for line in before.splitlines()),
            *(((f"  + {line}", "green"),) for line in after.splitlines())]


def _summary(console: Console, results: list[FileResult], options) -> None:
    if options.quiet:  # the findings only
        return
    if options.show_fixes:
        write_fix_summary(console, results)
    findings = list(_all(results))
    fixed = sum(result.fixes_applied for result in results)
    if not findings:
        if fixed:
            console.print(f"Found {fixed} error{'s' * (fixed != 1)} ({fixed} fixed, 0 remaining).")
        elif not options.problems:
            console.print("All checks passed!")
        return
    total = len(findings) + fixed
    noun = "error" if total == 1 else "errors"
    if fixed:
        console.print(f"Found {total} {noun} ({fixed} fixed, {len(findings)} remaining).")
    else:
        console.print(f"Found {total} {noun}.")
    safe = sum(1 for finding in findings if _fixable(finding, options.unsafe_fixes))
    hidden = sum(1 for finding in findings if finding.fix is not None and not _fixable(finding, options.unsafe_fixes))
    if safe:
        console.print(f"[*] {safe} fixable with the `--fix` option"
                      + (" and `--unsafe-fixes`." if options.unsafe_fixes else "."), markup=False)
    if hidden:
        console.print(f"{hidden} hidden fix{'es' * (hidden != 1)} can be enabled with the `--unsafe-fixes` option.",
                      markup=False)


def _fixable(finding: Finding, unsafe_fixes: bool) -> bool:
    return finding.fix is not None and (finding.fix.applicability is Applicability.SAFE or unsafe_fixes)


def _all(results: list[FileResult]):
    for result in results:
        yield from result.findings


FORMATS = {"full": write_full, "concise": write_concise, "json": write_json, "json-lines": write_json_lines,
           "github": write_github, "sarif": write_sarif, "gitlab": write_gitlab, "rdjson": write_rdjson,
           "junit": write_junit}

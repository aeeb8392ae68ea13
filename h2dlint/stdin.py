"""`h2dlint check - --stdin-filename NAME`: one file's source read from standard input."""

from __future__ import annotations

from pathlib import Path

from .engine import FileResult, Linter, unified_diff
from .source import SourceError, decode_source


def process_stdin(raw: bytes, name: str, linter: Linter, mode: str) -> tuple[FileResult, bytes]:
    """The result for the source in `raw`, and its bytes after the fixes `mode` asks for ("check": unchanged)."""
    try:
        source = decode_source(raw, Path(name))
    except SourceError as error:
        return FileResult(name, (), error=str(error)), raw
    findings = linter.lint(source)
    if mode == "check" or not any(linter.applicable(finding.fix) for finding in findings):
        return FileResult(name, tuple(findings)), raw
    new_text, remaining, applied = linter.fix(source, findings)
    diff = unified_diff(source.text, new_text, name) if mode == "diff" else ""
    return (FileResult(name, tuple(remaining), len(applied), diff=diff, fixed_codes=applied),
            source.encode(new_text))

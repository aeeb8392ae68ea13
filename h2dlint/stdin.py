"""`h2dlint check - --stdin-filename NAME`: one file's source read from standard input."""

from __future__ import annotations

from pathlib import Path

from .engine import FileResult, Linter, fix_in_memory, internal_error
from .source import SourceError, decode_source


def process_stdin(raw: bytes, name: str, linter: Linter, mode: str) -> tuple[FileResult, bytes]:
    """The result for the source in `raw`, and its bytes after the fixes `mode` asks for ("check": unchanged)."""
    try:
        source = decode_source(raw, Path(name))
    except SourceError as error:
        return FileResult(name, (), error=str(error)), raw
    try:
        result, new_text = fix_in_memory(source, linter.lint(source), linter, mode)
    except Exception as error:  # an h2dlint bug must not lose the input: it is passed through unchanged
        return FileResult(name, (), error=internal_error(error)), raw
    return result, raw if new_text is None else source.encode(new_text)

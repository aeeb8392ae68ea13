"""Suppression: the one place that decides whether a finding is reported.

A finding is not reported when a `# noqa` or `# noqa: CODES` comment on its
first or last line covers its code, when a line `# h2dlint: noqa` exempts the
whole file, or when the settings' per-file-ignores cover the file and code.
Only real comments count: text that looks like one inside a string does not.
This module also finds `# noqa` codes that suppress nothing (HDL003) and
writes `# noqa` comments for findings (`--add-noqa`).
"""

from __future__ import annotations

import functools
import io
import os
import re
import tokenize
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .discovery import compile_glob
from .model import SYNTAX_ERROR, UNREADABLE, Applicability, Edit, Finding, Fix, Position
from .settings import Settings
from .source import LineIndex

UNUSED_NOQA = "HDL003"
# Codes reported about the input itself, which a noqa may name though no rule has them.
INPUT_CODES = frozenset({SYNTAX_ERROR, UNREADABLE})

_CODE = r"[A-Z]+[0-9]+"
_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODE}(?:(?:\s*,\s*|\s+){_CODE})*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"#\s*h2dlint:\s*noqa", re.IGNORECASE)
_MAYBE_FILE_NOQA = re.compile(r"h2dlint:\s*noqa", re.IGNORECASE)
# What lowering the text to find "h2dlint" needs (no character but ASCII ones lowers to those letters, and the one
# that lowers to two, U+0130, puts no "n" after its "i"), searched from its literal "2": much faster than
# lowering every file.
_H2DLINT_IN_ANY_CASE = re.compile(r"2[dD][lL][iI][nN][tT]")


@dataclass(frozen=True)
class Noqa:
    """One `# noqa` directive in a comment."""

    line: int
    start: int  # column of its "#"
    end: int  # column just after it (after its last code)
    codes: tuple[str, ...] | None  # None: a blanket noqa comment

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


def comments(text: str) -> dict[int, tuple[int, str]]:
    """Each line's comment: line -> (column, text). Lines that do not tokenize fall back to their first `#`."""
    found: dict[int, tuple[int, str]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                found[token.start[0]] = (token.start[1], token.string)
    except (tokenize.TokenError, SyntaxError):
        index = LineIndex(text)
        for line in range(1, index.line_count + 1):
            if line not in found and "#" in (line_text := index.line_text(line)):
                found[line] = (line_text.index("#"), line_text[line_text.index("#"):])
    return found


@functools.lru_cache(maxsize=2)  # both tests below ask about the same text in turn
def _lowered(text: str) -> str:
    return text.lower()  # `in` on it is several times faster than a case-insensitive regex search


def noqa_directives(text: str) -> dict[int, list[Noqa]]:
    if "noqa" not in _lowered(text):
        return {}
    directives: dict[int, list[Noqa]] = {}
    for line, (column, comment) in comments(text).items():
        for match in _NOQA.finditer(comment):
            codes = match.group("codes")
            directives.setdefault(line, []).append(Noqa(
                line, column + match.start(), column + match.end(),
                tuple(re.split(r"[\s,]+", codes.upper())) if codes else None))
    return directives


def is_file_exempt(text: str) -> bool:
    if not _H2DLINT_IN_ANY_CASE.search(text) or not _MAYBE_FILE_NOQA.search(text):
        return False
    line_index = LineIndex(text)
    return any(_FILE_NOQA.fullmatch(comment.strip()) and not line_index.line_text(line)[:column].strip()
               for line, (column, comment) in comments(text).items())


def per_file_ignored(path: str, settings: Settings) -> tuple[str, ...]:
    """The code prefixes the settings' per-file-ignores exempt `path` from."""
    if not settings.per_file_ignores:
        return ()
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, os.path.abspath(settings.project_root)).replace(os.sep, "/")
    name = Path(absolute).name
    return tuple(code for pattern, codes in settings.per_file_ignores
                 if _glob(pattern).match(relative) or _glob(pattern).match(name) for code in codes)


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    return compile_glob(pattern)


def suppress(findings: list[Finding], text: str, path: str, settings: Settings,
             enabled: frozenset[str], known: frozenset[str]) -> list[Finding]:
    """The findings left to report, with HDL003 findings for unused noqa codes when it is enabled.

    `enabled` are the codes this run checks, `known` every code h2dlint has.
    """
    if not findings and UNUSED_NOQA not in enabled:
        return []  # most files: nothing to suppress, and no noqa comment to report
    if is_file_exempt(text):
        return []
    directives = noqa_directives(text) if UNUSED_NOQA in enabled or _noqa_on_lines(text, findings) else {}
    used: set[tuple[Noqa, str]] = set()
    kept = []
    for finding in findings:
        covering = [noqa for line in {finding.start.line, finding.end.line}
                    for noqa in directives.get(line, ()) if noqa.covers(finding.code)]
        used.update((noqa, finding.code) for noqa in covering)
        if not covering:
            kept.append(finding)
    if UNUSED_NOQA in enabled:
        for noqa in (noqa for line_directives in directives.values() for noqa in line_directives):
            unused = _unused_codes(noqa, used, enabled | INPUT_CODES, known | INPUT_CODES)
            if unused:
                kept.append(_unused_finding(path, text, noqa, unused))
    ignored = per_file_ignored(path, settings)
    return sorted((finding for finding in kept if not finding.code.startswith(ignored)),
                  key=lambda finding: finding.sort_key)


def _noqa_on_lines(text: str, findings: list[Finding]) -> bool:
    """Whether a line of some finding mentions noqa: only then can a directive cover it (tokenizing the
    file to find its comments costs more than all of this)."""
    if not findings or "noqa" not in _lowered(text):
        return False
    line_index = LineIndex(text)
    return any("noqa" in line_index.line_text(line).lower()
               for finding in findings for line in {finding.start.line, finding.end.line})


def _unused_codes(noqa: Noqa, used, enabled, known) -> dict[str, str]:
    """code -> why it is unused, for the h2dlint codes of `noqa` that suppressed nothing."""
    unused = {}
    for code in noqa.codes or ():
        if not code.startswith("HDL") or code == UNUSED_NOQA or (noqa, code) in used:
            continue
        unused[code] = "unused" if code in enabled else "non-enabled" if code in known else "unknown"
    return unused


def _unused_finding(path: str, text: str, noqa: Noqa, unused: dict[str, str]) -> Finding:
    line_text = LineIndex(text).line_text(noqa.line)
    kept = [code for code in noqa.codes if code not in unused]
    if kept:
        edit = Edit(Position(noqa.line, noqa.start), Position(noqa.line, noqa.end), f"# noqa: {', '.join(kept)}")
    elif line_text[noqa.end:].strip() == "":
        # remove the whole directive, with the blanks before it
        start = len(line_text[:noqa.start].rstrip())
        edit = Edit(Position(noqa.line, start), Position(noqa.line, len(line_text)), "")
    else:
        edit = None  # text follows the directive in the comment; removing it could leave a stray phrase
    described = ", ".join(f"{code} ({why})" for code, why in unused.items())
    fix = Fix((edit,), Applicability.SAFE, "Remove the unused codes") if edit else None
    return Finding(path=path, start=Position(noqa.line, noqa.start), end=Position(noqa.line, noqa.end),
                   code=UNUSED_NOQA, message=f"Unused `noqa` directive: {described}", fix=fix)


def add_noqa_edits(findings: list[Finding], text: str) -> tuple[list[Edit], list[Finding]]:
    """Edits writing `# noqa: CODE` for every finding, into existing noqa comments where there are some;
    and the findings that cannot be suppressed so (syntax errors, a finding whose lines end inside a string)."""
    codes_by_line: dict[int, list[str]] = {}
    left = []
    unplaceable = _lines_that_cannot_end_in_a_comment(text)
    for finding in findings:
        line = next((line for line in (finding.start.line, finding.end.line) if line not in unplaceable), None)
        if finding.code in INPUT_CODES or finding.code == UNUSED_NOQA or line is None:
            left.append(finding)
        elif finding.code not in codes_by_line.setdefault(line, []):
            codes_by_line[line].append(finding.code)
    directives = noqa_directives(text)
    line_index = LineIndex(text)
    edits = []
    for line, codes in sorted(codes_by_line.items()):
        existing = next((noqa for noqa in directives.get(line, ()) if noqa.codes), None)
        if existing is not None:
            new_codes = [code for code in codes if code not in existing.codes]
            at = Position(line, existing.end)
            edits.append(Edit(at, at, "".join(f", {code}" for code in new_codes)))
            continue
        line_text = line_index.line_text(line)
        end = len(line_text.rstrip())
        edits.append(Edit(Position(line, end), Position(line, len(line_text)), f"  # noqa: {', '.join(codes)}"))
    return [edit for edit in edits if edit.content], left


def _lines_that_cannot_end_in_a_comment(text: str) -> set[int]:
    """Lines that end inside a string or with a backslash continuation."""
    lines = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                lines.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return set(range(1, LineIndex(text).line_count + 1))
    line_index = LineIndex(text)
    lines.update(line for line in range(1, line_index.line_count + 1) if line_index.line_text(line).endswith("\\"))
    return lines

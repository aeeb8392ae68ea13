"""The pipeline for one file: read -> prefilter -> parse -> analyse -> suppress -> fix.

Each file is processed on its own, from its bytes and the run's settings, so
files can be spread over worker processes and results cached by content.
"""

from __future__ import annotations

import ast
import difflib
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper

from .facts import FileFacts
from .model import SYNTAX_ERROR, UNREADABLE, Applicability, Edit, Finding, Fix, Position
from .rule import Rule, RuleContext
from .settings import Settings
from .source import FileChangedError, LineIndex, SourceError, SourceFile, read_source, write_source_atomically
from .suppression import is_file_exempt, suppressed

MAX_FIX_ROUNDS = 10


@dataclass(frozen=True)
class FileResult:
    path: str
    findings: tuple[Finding, ...]  # what remains to report, after any fixes
    fixes_applied: int = 0
    diff: str = ""  # with --diff: what --fix would change
    error: str | None = None  # a problem that stopped h2dlint from doing its job on this file


class Linter:
    """The rules a run checks, and how to check and fix one file's text with them."""

    def __init__(self, rules: list[type[Rule]], settings: Settings) -> None:
        self.rules = rules
        self.settings = settings
        self.call_names = frozenset().union(*(rule.call_names for rule in rules))

    def lint(self, source: SourceFile) -> list[Finding]:
        text = source.text
        if is_file_exempt(text):
            return []
        active = [rule for rule in self.rules if rule.prefilter.search(text)]
        if not active:
            return []
        path = str(source.path)
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError) as error:
            return [_syntax_finding(path, error)]
        except (RecursionError, MemoryError) as error:  # how Python's own parser gives up on deep nesting
            return [Finding(path, Position(1, 0), Position(1, 0), SYNTAX_ERROR,
                            f"code nested too deeply for Python's parser ({type(error).__name__}); "
                            "the file is not checked or changed")]
        line_index = LineIndex(text)
        facts = FileFacts(tree, text, frozenset().union(*(rule.call_names for rule in active)), line_index)
        if not facts.sites and not self.settings.full_parse:
            return []
        findings: list[Finding] = []
        for code, origin in self._units(text, line_index, facts):
            try:
                module = cst.parse_module(code)
                context = RuleContext(source, line_index, facts, self.settings, module, origin)
                MetadataWrapper(module, unsafe_skip_copy=True).visit_batched([rule(context) for rule in active])
            except (RecursionError, cst.ParserSyntaxError) as error:
                # Valid Python that LibCST cannot handle: say so for this piece, check the rest.
                why = "nested too deeply" if isinstance(error, RecursionError) else "not parsed by LibCST"
                findings.append(Finding(path, origin, origin, UNREADABLE,
                                        f"code {why} ({type(error).__name__}); h2dlint does not check or change it"))
                continue
            findings.extend(context.findings)
        return sorted((finding for finding in findings if not suppressed(finding, line_index)),
                      key=lambda finding: finding.sort_key)

    def _units(self, text: str, line_index: LineIndex, facts: FileFacts):
        """The pieces of code LibCST parses (the whole file, or each outermost candidate call), and where."""
        if self.settings.full_parse:
            yield text, Position(1, 0)
            return
        covered_until = (0, 0)
        for site in sorted(facts.sites.values(), key=lambda site: (site.line, site.column)):
            if (site.line, site.column) < covered_until:
                continue  # inside a candidate call already parsed
            covered_until = (site.end_line, site.end_column)
            snippet = text[line_index.offset(site.line, site.column):line_index.offset(site.end_line,
                                                                                        site.end_column)]
            yield snippet, Position(site.line, site.column)

    def fix(self, source: SourceFile, findings: list[Finding]) -> tuple[str, list[Finding], int]:
        """Apply every applicable fix, in rounds until none is left; returns (text, remaining, applied)."""
        text, applied = source.text, 0
        for _ in range(MAX_FIX_ROUNDS):
            chosen = _non_overlapping([finding.fix for finding in findings if self.applicable(finding.fix)])
            if not chosen:
                break
            new_text = apply_edits(text, [edit for fix in chosen for edit in fix.edits])
            ast.parse(new_text)  # a fix that breaks the file is a bug: let the caller report it
            text, applied = new_text, applied + len(chosen)
            source = SourceFile(path=source.path, raw=source.raw, text=text, encoding=source.encoding)
            findings = self.lint(source)
        return text, findings, applied

    def applicable(self, fix: Fix | None) -> bool:
        return fix is not None and (fix.applicability is Applicability.SAFE or self.settings.unsafe_fixes)


def _syntax_finding(path: str, error: Exception) -> Finding:
    line = getattr(error, "lineno", None) or 1
    column = max((getattr(error, "offset", None) or 1) - 1, 0)
    message = getattr(error, "msg", None) or str(error)
    at = Position(line, column)
    return Finding(path=path, start=at, end=at, code=SYNTAX_ERROR,
                   message=f"SyntaxError: {message}; the file is not checked or changed")


def _non_overlapping(fixes: list[Fix]) -> list[Fix]:
    """Fixes whose edits do not touch each other's; the rest wait for the next round."""
    chosen: list[Fix] = []
    taken: list[Edit] = []  # pairwise non-overlapping, sorted by (start, end), so their ends never decrease
    for fix in sorted(fixes, key=lambda fix: fix.edits[0].start):
        new_edits = [edit for edit in set(fix.edits) if not _contains(taken, edit)]
        if not any(_overlaps_taken(taken, edit) for edit in new_edits):
            chosen.append(fix)
            for edit in new_edits:
                insort(taken, edit)
    return chosen


def _contains(taken: list[Edit], edit: Edit) -> bool:
    index = bisect_left(taken, edit)
    return index < len(taken) and taken[index] == edit


def _overlaps_taken(taken: list[Edit], edit: Edit) -> bool:
    """Whether `edit` overlaps a taken edit; only those starting at or before its end can."""
    index = bisect_right(taken, edit.end, key=lambda other: other.start) - 1
    while index >= 0 and taken[index].end >= edit.start:
        if _overlap(edit, taken[index]):
            return True
        index -= 1
    return False


def _overlap(first: Edit, second: Edit) -> bool:
    if first.start == first.end and second.start == second.end:
        return first.start == second.start
    return first.start < second.end and second.start < first.end or \
        (first.start == first.end and second.start < first.start < second.end) or \
        (second.start == second.end and first.start < second.start < first.end)


def apply_edits(text: str, edits: list[Edit]) -> str:
    index = LineIndex(text)
    pieces, cursor = [], 0
    for edit in sorted(set(edits), key=lambda edit: (edit.start, edit.end)):
        start, end = index.offset(edit.start.line, edit.start.column), index.offset(edit.end.line, edit.end.column)
        pieces += [text[cursor:start], edit.content]
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def process_file(path, linter: Linter, mode: str) -> FileResult:
    """Lint one file and, with mode "fix" or "diff", fix it. Never raises."""
    name = str(path)
    try:
        source = read_source(path)
    except SourceError as error:
        return FileResult(name, (Finding(name, Position(1, 0), Position(1, 0), UNREADABLE, str(error)),))
    try:
        findings = linter.lint(source)
        if mode == "check" or not any(linter.applicable(finding.fix) for finding in findings):
            return FileResult(name, tuple(findings))
        new_text, remaining, applied = linter.fix(source, findings)
        if mode == "diff":
            diff = "".join(difflib.unified_diff(source.text.splitlines(keepends=True),
                                                new_text.splitlines(keepends=True), name, name))
            return FileResult(name, tuple(remaining), applied, diff=diff)
        write_source_atomically(source, new_text)
        return FileResult(name, tuple(remaining), applied)
    except FileChangedError as error:
        return FileResult(name, tuple(findings), error=str(error))
    except Exception as error:  # an h2dlint bug must not stop the run or touch the file
        return FileResult(name, (), error=f"internal error: {type(error).__name__}: {error}")

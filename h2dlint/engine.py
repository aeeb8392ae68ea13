"""The pipeline for one file: read -> prefilter -> parse -> analyse -> suppress -> fix.

Each file is processed on its own, from its bytes and the run's settings, so
files can be spread over worker processes and results cached by content.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .facts import OPEN_GATE, FileFacts, FileGate, Site, is_other_accelerator_path, word_gate
from .hotness import is_hot_function, is_off_the_step_path
from .model import SYNTAX_ERROR, UNREADABLE, Applicability, Edit, Finding, Fix, Position
from .newer_syntax import parse_python
from .rule import Rule, RuleContext
from .settings import Settings
from .source import LineIndex, NotWrittenError, SourceError, SourceFile, read_source, write_source_atomically
from .suppression import add_noqa_edits, is_file_exempt, suppress
from .textdiff import unified_diff

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from .project import FileView, Project
else:
    from .deferred import libcst as cst

MAX_FIX_ROUNDS = 10


Known = tuple[str, tuple[Finding, ...]]  # a file's content digest, and its findings from the cache


@dataclass(frozen=True)
class FileResult:
    path: str
    findings: tuple[Finding, ...]  # what remains to report, after any fixes
    fixes_applied: int = 0
    diff: str = ""  # with --diff: what --fix would change
    noqa_added: int = 0  # with --add-noqa: the lines given noqa codes
    error: str | None = None  # a problem that stopped h2dlint from doing its job on this file
    # (size, mtime_ns, digest) of the unchanged file the findings describe; None when not cacheable
    stamp: tuple[int, int, str] | None = None
    fixed_codes: tuple[str, ...] = ()  # the code of each fix applied (for --show-fixes)
    # The questions the file's rules asked the project model about values (see FileView.asked); None when the
    # file was not linted (its findings came from the cache).
    asked: tuple | None = None
    # What the file's view asked the project model, with the answers (see FileView.journal): kept for the next run
    # by the process that owns the cache; None when the file was not linted.
    journal: dict | None = None


class Linter:
    """The rules a run checks, and how to check and fix one file's text with them."""

    def __init__(self, rules: list[type[Rule]], settings: Settings, project: Project | None = None) -> None:
        self.rules = rules
        self.settings = settings
        self.project = project  # the Project (h2dlint.project) the rules ask about other files; None: none
        self.last_view: FileView | None = None  # the project model's view of the file checked last
        self.enabled_codes = frozenset(rule.code for rule in rules)
        self.known_codes = frozenset(Rule.registry)
        self._tested_on_parsed_files = [rule for rule in rules if not rule.text_test_spares_only_parsing]
        self._tested_before_parsing = [rule for rule in rules if rule.text_test_spares_only_parsing]

    def lint(self, source: SourceFile) -> list[Finding]:
        """The findings to report for `source`: every rule's, less those suppressed."""
        findings = self._rule_findings(source)
        return suppress(findings, source.text, str(source.path), self.settings, self.enabled_codes, self.known_codes)

    def _rule_findings(self, source: SourceFile) -> list[Finding]:
        text = source.text
        if is_file_exempt(text):
            return []
        view = self.project.view(str(source.path)) if self.project is not None else None
        self.last_view = view
        summarized = view.gate(self.settings, text) if view is not None else None
        active = self._active_rules(text, view.opened_for() if view is not None else frozenset(),
                                    summarized or word_gate(text, self.settings))
        if not active:
            return []
        path = str(source.path)
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError) as error:
            return [_syntax_finding(path, error)]
        except (RecursionError, MemoryError) as error:  # how Python's own parser gives up on deep nesting
            return [Finding(path, Position(1, 0), Position(1, 0), SYNTAX_ERROR,
                            f"code nested too deeply for Python's parser ({type(error).__name__}); "
                            "the file is not checked or changed")]
        line_index = LineIndex(text)
        facts = FileFacts(tree, line_index)
        facts.project = view
        facts.hot_functions = frozenset(self.settings.hot_functions)
        facts.gpu_device_names = self.settings.gpu_device_names
        if summarized is None:
            # The word gate let the file through: the tree's own evidence, as the summary would have, decides now.
            gate = FileGate(gpu=facts.gpu_evidence, hot_names=any(is_hot_function(name, facts.hot_functions)
                                                                  for name in facts.evidence.defined))
            active = [rule for rule in active if rule.text_test_spares_only_parsing
                      or rule.may_apply(text, self.settings, gate)]
        facts.active_codes = frozenset(rule.code for rule in active)
        # By the path from the project root (the model's, else the configuration's folder), not as spelled on the
        # command line: the cache keys files by their absolute path, so the answer must not change with the
        # spelling, nor with the folders above the project.
        root = self.project.root if self.project is not None else self.settings.project_root
        from_root = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
        facts.off_step_module = is_off_the_step_path(from_root)
        facts.other_accelerator_path = is_other_accelerator_path(from_root)
        for rule in active:
            for node in rule.candidates(facts):
                facts.add_site(node, rule.code)
        if not facts.sites and not self.settings.full_parse:
            return []
        findings: list[Finding] = []
        for code, origin, codes in self._units(text, line_index, facts, active):
            try:
                module, origin = _parse_unit(code, origin, snippet=not self.settings.full_parse)
                context = RuleContext(source, line_index, facts, self.settings, module, origin)
                wrapper = _wrapper_class()(module, unsafe_skip_copy=True)
                for rule in active:
                    if rule.code in codes:
                        wrapper.visit(rule.visitor()(context))
            except (RecursionError, cst.ParserSyntaxError) as error:
                # Valid Python that LibCST cannot handle: say so for this piece, check the rest.
                why = "nested too deeply" if isinstance(error, RecursionError) else "not parsed by LibCST"
                findings.append(Finding(path, origin, origin, UNREADABLE,
                                        f"code {why} ({type(error).__name__}); h2dlint does not check or change it"))
                continue
            findings.extend(context.findings)
        return findings

    def prepare_visitors(self) -> None:
        """Make the rules' LibCST visitors now, importing LibCST, before worker processes are forked: they then
        start with them, shared, instead of each importing LibCST on its own."""
        _wrapper_class()
        for rule in self.rules:
            rule.visitor()

    def model_key(self, path: str | os.PathLike[str], asked: tuple = ()) -> str:
        """What the findings of the file at `path` depend on in the project model (see FileView.key), with the
        answers to the questions about values its rules `asked`."""
        return self.project.key(path, asked) if self.project is not None else ""

    def asked(self, path: str | os.PathLike[str]) -> tuple:
        """The questions about values the rules asked the project model when they last checked the file at
        `path` in this process (see FileView.asked)."""
        view = self.last_view
        if view is None or view.path != os.path.abspath(path):
            return ()
        return tuple(sorted(view.asked))

    def journal(self, path: str | os.PathLike[str]) -> dict | None:
        """What the view of the file at `path` asked the project model in this process, with the answers (see
        FileView.journal); None when it was not the last file checked."""
        view = self.last_view
        return view.journal if view is not None and view.path == os.path.abspath(path) else None

    def _active_rules(self, text: str, model_facts: frozenset[str] = frozenset(),
                      gate: FileGate = OPEN_GATE) -> list[type[Rule]]:
        """The rules that may report in `text`, in catalogue order; none when the file need not be parsed.

        Most words a text test looks for are absent, so most tests read the whole text. The tests of the rules
        whose test only spares parsing (see `Rule.text_test_spares_only_parsing`) are skipped once another
        rule's test sends the file to the parser, where the candidate search on the `ast` answers at less cost."""
        if self.settings.full_parse:
            return self.rules
        # Where the model knows of hot code or GPU tensors that the text cannot show, the rules that ask for those
        # facts need only pass their word tests.
        opened = {rule for rule in self.rules
                  if rule.MODEL_DEPENDENCIES & model_facts and rule.prefilter_matches(text)}
        passed = {rule for rule in self._tested_on_parsed_files
                  if rule in opened or rule.may_apply(text, self.settings, gate)}
        if passed or any(rule in opened or rule.may_apply(text, self.settings, gate)
                         for rule in self._tested_before_parsing):
            passed.update(self._tested_before_parsing)
        return [rule for rule in self.rules if rule in passed]

    def _units(self, text: str, line_index: LineIndex, facts: FileFacts,
               active: list[type[Rule]]) -> Iterator[tuple[str, Position, set[str]]]:
        """The pieces of code LibCST parses, each with the codes of the rules that visit it: the whole
        file for every rule, or each outermost candidate expression for the rules that named a
        candidate inside it."""
        if self.settings.full_parse:
            yield text, Position(1, 0), {rule.code for rule in active}
            return
        groups: list[tuple[Site, set[str]]] = []
        for site in sorted(facts.sites.values(), key=lambda site: (site.line, site.column, -site.end_line,
                                                                   -site.end_column)):
            if groups and (site.end_line, site.end_column) <= (groups[-1][0].end_line, groups[-1][0].end_column):
                groups[-1][1].update(site.rules)  # inside a candidate already parsed
            else:
                groups.append((site, set(site.rules)))
        for site, codes in groups:
            snippet = text[line_index.offset(site.line, site.column):line_index.offset(site.end_line,
                                                                                        site.end_column)]
            yield snippet, Position(site.line, site.column), codes

    def fix(self, source: SourceFile, findings: list[Finding]) -> tuple[str, list[Finding], tuple[str, ...]]:
        """Apply every applicable fix, in rounds until none is left.

        Returns (text, remaining findings, the code of each fix applied).
        """
        applied: tuple[str, ...] = ()
        text = source.text
        for _ in range(MAX_FIX_ROUNDS):
            codes = {finding.fix: finding.code for finding in findings
                     if finding.fix is not None and self.applicable(finding.fix)}
            chosen = _non_overlapping(list(codes))
            if not chosen:
                break
            new_text = apply_edits(text, [edit for fix in chosen for edit in fix.edits])
            parse_python(new_text)  # a fix that breaks the file is a bug: let the caller report it
            text, applied = new_text, applied + tuple(codes[fix] for fix in chosen)
            source = SourceFile(path=source.path, raw=source.raw, text=text, encoding=source.encoding)
            findings = self.lint(source)
        return text, findings, applied

    def applicable(self, fix: Fix | None) -> bool:
        return fix is not None and (fix.applicability is Applicability.SAFE or self.settings.unsafe_fixes)


@functools.cache
def _wrapper_class() -> type[MetadataWrapper]:
    """LibCST resolves metadata in rounds, and each round walks the whole module for the batchable providers
    among those asked for, even when there are none, as with the positions the rules ask for. That empty walk
    (a sizeable part of a snippet's visit) is skipped. (A class made at first use: defining it imports LibCST.)"""

    class Wrapper(cst.metadata.MetadataWrapper):
        def visit_batched(self, visitors: Any, before_visit: Any = None, after_leave: Any = None) -> Any:
            if isinstance(visitors, (list, tuple)) and not visitors:
                return self.module
            return super().visit_batched(visitors, before_visit, after_leave)

    return Wrapper


def _parse_unit(code: str, origin: Position, snippet: bool) -> tuple[cst.Module, Position]:
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError:
        if not snippet:
            raise
        module = None
    if module is not None and (not snippet or _one_expression(module)):
        return module, origin
    # An expression spanning lines may be valid, or one expression, only inside the parentheses around it:
    # `f\n()` alone is two statements.
    return cst.parse_module(f"({code})"), Position(origin.line, origin.column - 1)


def _one_expression(module: cst.Module | None) -> bool:
    return module is not None and len(module.body) == 1 and isinstance(module.body[0], cst.SimpleStatementLine) \
        and len(module.body[0].body) == 1 and isinstance(module.body[0].body[0], cst.Expr)


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


def process_file(path: Path, linter: Linter, mode: str, known: Known | None = None,
                 stamped: bool = True) -> FileResult:
    """Lint one file and, with mode "fix" or "diff", fix it; with "add-noqa", suppress its findings. Never raises.

    `known` is (content digest, findings) from the cache: when the file still has that digest, its findings
    are taken from there instead of linting it again. Without `stamped` (no cache to store the result in),
    the result has no stamp, and the file's content is not hashed."""
    if str(path).endswith(".ipynb"):
        from .notebook import process_notebook

        return process_notebook(path, linter, mode)
    name = str(path)
    try:
        status = path.stat()
        source = read_source(path)
    except OSError as error:
        source_error = f"cannot read: {error.strerror or error}"
        return unreadable(name, source_error)
    except SourceError as error:
        return unreadable(name, str(error))
    try:
        if known is not None and known[0] == source.digest:
            findings, asked, journal = list(known[1]), None, None
        else:
            findings = linter.lint(source)
            asked, journal = linter.asked(path), linter.journal(path)
        if mode == "add-noqa":
            edits, left = add_noqa_edits(findings, source.text)
            if edits:
                write_source_atomically(source, apply_edits(source.text, edits))
            return FileResult(name, tuple(left), noqa_added=len(edits))
        result, new_text = fix_in_memory(source, findings, linter, mode)
        if new_text is None:
            return dataclasses.replace(result, stamp=(status.st_size, status.st_mtime_ns, source.digest),
                                       asked=asked, journal=journal) if stamped else result
        if mode == "fix":
            write_source_atomically(source, new_text)
        return result
    except NotWrittenError as error:
        return FileResult(name, tuple(findings), error=str(error))
    except Exception as error:  # an h2dlint bug must not stop the run or touch the file
        return FileResult(name, (), error=internal_error(error))


def fix_in_memory(source: SourceFile, findings: list[Finding], linter: Linter,
                  mode: str) -> tuple[FileResult, str | None]:
    """What `mode` ("check", "fix" or "diff") gives for `source` and its findings, and the fixed text
    (None when nothing was fixed). Writes nothing."""
    name = str(source.path)
    if mode == "check" or not any(linter.applicable(finding.fix) for finding in findings):
        return FileResult(name, tuple(findings)), None
    new_text, remaining, applied = linter.fix(source, findings)
    diff = unified_diff(source.text, new_text, name) if mode == "diff" else ""
    return FileResult(name, tuple(remaining), len(applied), diff=diff, fixed_codes=applied), new_text


def unreadable(name: str, why: str) -> FileResult:
    """The result for a file h2dlint cannot read or decode: one HDL002 finding, nothing changed."""
    return FileResult(name, (Finding(name, Position(1, 0), Position(1, 0), UNREADABLE, why),))


def internal_error(error: Exception) -> str:
    return f"internal error: {type(error).__name__}: {error}"

"""Reports for CI systems: GitHub annotations, SARIF, GitLab Code Quality, reviewdog, JUnit.

Findings carry 1-based lines and 0-based code point columns; each format
converts them to what its consumer counts (see `Columns`). Paths are written
relative to the current folder with forward slashes, as CI systems resolve
them against the repository root the job runs in.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import re
from pathlib import Path
from urllib.parse import quote

from rich.console import Console

from . import __version__
from .engine import FileResult
from .model import SYNTAX_ERROR, UNREADABLE, Applicability, Finding, Position
from .rule import all_rules
from .source import LineIndex, SourceError, read_source

# Codes reported for problems with the input rather than by a rule: (name, description).
INPUT_PROBLEMS = {
    SYNTAX_ERROR: ("syntax-error", "The file is not valid Python, so it is neither checked nor changed."),
    UNREADABLE: ("unreadable-file", "The file cannot be read or decoded, so it is neither checked nor changed."),
}

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def code_name(code: str) -> str:
    """The kebab-case name of a rule code (`blocking-tensor-copy`) or of an input problem."""
    if code in INPUT_PROBLEMS:
        return INPUT_PROBLEMS[code][0]
    rule = all_rules().get(code)
    return rule.name if rule is not None else code


def report_path(path: str) -> str:
    """`path` relative to the current folder, with forward slashes; absolute when outside it."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_posix()


class SourceLines:
    """The lines of each reported file, read once, for formats that need more than positions."""

    def __init__(self) -> None:
        self._indexes: dict[str, LineIndex | None] = {}

    def line(self, path: str, line: int) -> str | None:
        if path not in self._indexes:
            try:
                self._indexes[path] = LineIndex(read_source(Path(path)).text)
            except SourceError:
                self._indexes[path] = None
        index = self._indexes[path]
        if index is None or not 1 <= line <= len(index.starts):
            return None
        return index.line_text(line)

    def utf8_column(self, path: str, position: Position) -> int:
        """The 1-based UTF-8 byte column of `position` (reviewdog counts bytes)."""
        text = self.line(path, position.line)
        if text is None:
            return position.column + 1
        return len(text[:position.column].encode("utf-8", errors="surrogatepass")) + 1


def write_raw(console: Console, lines: list[str]) -> None:
    """Write lines exactly as given: Rich would expand tabs and drop control characters."""
    console.file.write("".join(line + "\n" for line in lines))
    console.file.flush()


def _findings(results: list[FileResult]):
    for result in results:
        yield from result.findings


# GitHub workflow commands -------------------------------------------------------------------------------------

def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(finding: Finding) -> str:
    """One `::error ...::message` line; GitHub rejects columns on a range spanning lines."""
    properties = [("file", report_path(finding.path)), ("line", finding.start.line),
                  ("endLine", finding.end.line)]
    if finding.start.line == finding.end.line:
        properties += [("col", finding.start.column + 1), ("endColumn", finding.end.column + 1)]
    properties.append(("title", f"h2dlint ({finding.code})"))
    rendered = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties)
    return f"::error {rendered}::{_escape_data(f'{finding.code} {finding.message}')}"


def github_annotations(results: list[FileResult]) -> list[str]:
    return [github_annotation(finding) for finding in _findings(results)]


# SARIF 2.1.0 ---------------------------------------------------------------------------------------------------

def _docs_section(docs: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", docs, re.MULTILINE | re.DOTALL)
    return " ".join(match.group(1).split()) if match else ""


def _sarif_rules() -> list[dict]:
    descriptors = []
    for code, rule in all_rules().items():
        docs = inspect.cleandoc(rule.__doc__ or "")
        descriptors.append({
            "id": code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": _docs_section(docs, "What it does") or rule.summary},
            "help": {"text": docs, "markdown": f"# {rule.name} ({code})\n\n{docs}"},
            "defaultConfiguration": {"level": "error"},
        })
    for code, (name, description) in INPUT_PROBLEMS.items():
        descriptors.append({"id": code, "name": name, "shortDescription": {"text": description},
                            "fullDescription": {"text": description},
                            "help": {"text": description, "markdown": description},
                            "defaultConfiguration": {"level": "error"}})
    return descriptors


def _sarif_artifact(path: str) -> dict:
    shown = report_path(path)
    if Path(shown).is_absolute():
        return {"uri": Path(shown).as_uri()}
    return {"uri": quote(shown, safe="/"), "uriBaseId": "%SRCROOT%"}


def _sarif_region(start: Position, end: Position) -> dict:
    return {"startLine": start.line, "startColumn": start.column + 1,
            "endLine": end.line, "endColumn": end.column + 1}


SARIF_RANKS = {"proven": 90.0, "inferred": 70.0, "assumed": 40.0}


def _sarif_result(finding: Finding, rule_index: dict[str, int]) -> dict:
    artifact = _sarif_artifact(finding.path)
    result = {
        "ruleId": finding.code,
        "ruleIndex": rule_index[finding.code],
        "level": "error",
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": {"artifactLocation": artifact,
                                            "region": _sarif_region(finding.start, finding.end)}}],
    }
    if finding.evidence:
        # Code scanning orders results by rank (0-100): a tensor proven to be on the GPU before one inferred
        # through the project model, before one only assumed to be.
        evidence = dict(finding.evidence)
        result["rank"] = SARIF_RANKS.get(evidence.get("placement", ""), 50.0)
        result["properties"] = {f"h2dlint/{key}": value for key, value in evidence.items()}
    if finding.fix is not None:
        result["fixes"] = [{
            "description": {"text": finding.fix.message},
            "artifactChanges": [{
                "artifactLocation": artifact,
                "replacements": [{"deletedRegion": _sarif_region(edit.start, edit.end),
                                  "insertedContent": {"text": edit.content}} for edit in finding.fix.edits],
            }],
            "properties": {"applicability": finding.fix.applicability.value},
        }]
    return result


def sarif_log(results: list[FileResult]) -> dict:
    rules = _sarif_rules()
    rule_index = {rule["id"]: index for index, rule in enumerate(rules)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "h2dlint", "version": __version__, "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": [_sarif_result(finding, rule_index) for finding in _findings(results)],
        }],
    }


# GitLab Code Quality -------------------------------------------------------------------------------------------

def gitlab_report(results: list[FileResult]) -> list[dict]:
    """Code Quality issues. The fingerprint hashes path, code and the line's text (not its number),
    so an issue keeps its identity when code above it moves; equal ones are told apart by occurrence."""
    lines = SourceLines()
    seen: dict[tuple[str, str, str], int] = {}
    issues = []
    for finding in _findings(results):
        path = report_path(finding.path)
        line_text = (lines.line(finding.path, finding.start.line) or "").strip()
        key = (path, finding.code, line_text)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        fingerprint = hashlib.sha256("\0".join((*key, str(occurrence))).encode("utf-8", "surrogatepass"))
        issues.append({
            "type": "issue",
            "description": f"{finding.code} {finding.message}",
            "check_name": finding.code,
            "fingerprint": fingerprint.hexdigest(),
            "severity": "major",
            "location": {"path": path, "lines": {"begin": finding.start.line, "end": finding.end.line}},
        })
    return issues


# reviewdog rdjson ----------------------------------------------------------------------------------------------

def rdjson_report(results: list[FileResult], unsafe_fixes: bool) -> dict:
    """Diagnostics with the fixes `--fix` would apply as suggestions; columns in UTF-8 bytes."""
    lines = SourceLines()

    def byte_range(path: str, start: Position, end: Position) -> dict:
        return {"start": {"line": start.line, "column": lines.utf8_column(path, start)},
                "end": {"line": end.line, "column": lines.utf8_column(path, end)}}

    diagnostics = []
    for finding in _findings(results):
        diagnostic = {
            "message": finding.message,
            "location": {"path": report_path(finding.path),
                         "range": byte_range(finding.path, finding.start, finding.end)},
            "severity": "ERROR",
            "code": {"value": finding.code},
        }
        if finding.fix is not None and (finding.fix.applicability is Applicability.SAFE or unsafe_fixes):
            diagnostic["suggestions"] = [{"range": byte_range(finding.path, edit.start, edit.end),
                                          "text": edit.content} for edit in finding.fix.edits]
        diagnostics.append(diagnostic)
    return {"source": {"name": "h2dlint"}, "severity": "ERROR", "diagnostics": diagnostics}


# JUnit XML -----------------------------------------------------------------------------------------------------

@functools.cache
def _not_xml() -> re.Pattern[str]:
    """Characters XML 1.0 cannot hold at all, even escaped. Compiled on first use: its wide character ranges
    are slow to compile, slower than the rest of h2dlint's patterns together, and most runs never need it."""
    return re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _not_xml().sub("\ufffd", text)


def junit_report(results: list[FileResult]) -> str:
    """One test case per checked file, one failure per finding in it."""
    import xml.etree.ElementTree as ElementTree  # only for this format

    failures = sum(len(result.findings) for result in results)
    suites = ElementTree.Element("testsuites", name="h2dlint", tests=str(len(results)), failures=str(failures))
    suite = ElementTree.SubElement(suites, "testsuite", name="h2dlint", tests=str(len(results)),
                                   failures=str(failures), errors="0")
    for result in results:
        path = _xml_text(report_path(result.path))
        case = ElementTree.SubElement(suite, "testcase", name=path, classname="h2dlint", file=path)
        for finding in result.findings:
            failure = ElementTree.SubElement(case, "failure", type=finding.code,
                                             message=_xml_text(f"{finding.code} {finding.message}"))
            failure.text = _xml_text(f"{path}:{finding.start.line}:{finding.start.column + 1}: "
                                     f"{finding.code} {finding.message}")
    ElementTree.indent(suites)
    return ElementTree.tostring(suites, encoding="unicode", xml_declaration=True)

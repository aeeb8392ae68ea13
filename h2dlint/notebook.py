"""Jupyter notebooks: their code cells are checked together, as one Python file.

The code cells are joined into one text (so an `import torch` in the first cell
is known in the others), separated by a marker comment line. Cells that start
with a `%%` cell magic are left out; lines starting with `%` or `!` (IPython
magics and shell commands) are replaced by a placeholder statement, so the text
parses, and put back when the cells are written. Findings are reported per
cell: `cell` is the cell's 1-based number among all cells of the notebook, and
lines and columns count within the cell.

`--fix` replaces only the `source` values of the cells that changed, in the
file's own text: every other byte of the file (outputs, metadata, key order,
indentation, the final newline) stays as it was.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from .engine import FileResult, Linter, apply_edits, internal_error, unreadable
from .model import Edit, Finding, Position
from .source import NotWrittenError, SourceError, SourceFile, write_source_atomically
from .suppression import add_noqa_edits

CELL_BOUNDARY = "# h2dlint: cell boundary"
_MAGIC = re.compile(r"^([ \t]*)[%!]")
_PLACEHOLDER = re.compile(r"^[ \t]*pass  # h2dlint: magic (\d+)(?=\r?$)", re.MULTILINE)
_BOUNDARY_LINE = re.compile(rf"^{re.escape(CELL_BOUNDARY)}\n", re.MULTILINE)
_WHITESPACE = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based, among all cells
    source_span: tuple[int, int] | None  # where its `source` value is in the file's text; None without a file
    source_is_list: bool
    text: str  # the cell's code as in the file
    first_line: int  # its first line in the joined Python text


@dataclass(frozen=True)
class Notebook:
    file: SourceFile | None  # the .ipynb file itself (JSON text); None for an editor's notebook
    cells: tuple[Cell, ...]  # the code cells that are checked
    python: SourceFile  # the joined code cells, as linted
    magics: tuple[str, ...]  # the lines the placeholders stand for

    def cell_at(self, line: int) -> Cell:
        return next(cell for cell in reversed(self.cells) if cell.first_line <= line)

    def locate(self, finding: Finding) -> Finding:
        """`finding` with its positions (and its fix's) counted within its cell."""
        cell = self.cell_at(finding.start.line)

        def within(position: Position) -> Position:
            return Position(position.line - cell.first_line + 1, position.column)

        fix = finding.fix
        if fix is not None:
            fix = replace(fix, edits=tuple(Edit(within(edit.start), within(edit.end), edit.content)
                                           for edit in fix.edits))
        return replace(finding, start=within(finding.start), end=within(finding.end), fix=fix, cell=cell.number)

    def cell_texts(self, python_text: str) -> list[str]:
        """The code of each checked cell, taken from a (fixed) joined text."""
        pieces = _BOUNDARY_LINE.split(python_text)[:-1]  # the text ends with a boundary line
        texts = []
        for cell, piece in zip(self.cells, pieces, strict=True):
            piece = _PLACEHOLDER.sub(lambda match: self.magics[int(match.group(1))], piece)
            texts.append(piece if cell.text.endswith("\n") or not piece.endswith("\n") else piece[:-1])
        return texts

    def render(self, python_text: str) -> str:
        """The notebook's JSON text with the cells' code taken from `python_text`."""
        text = self.file.text
        indent = _detect_indent(text)
        ensure_ascii = text.isascii()
        pieces, cursor = [], 0
        for cell, new in zip(self.cells, self.cell_texts(python_text), strict=True):
            if new == cell.text:
                continue
            start, end = cell.source_span
            value = new.splitlines(keepends=True) if cell.source_is_list else new
            line_start = text.rfind("\n", 0, start) + 1
            base_indent = text[line_start:_WHITESPACE.match(text, line_start).end()].lstrip("\n\r")
            rendered = json.dumps(value, indent=indent, ensure_ascii=ensure_ascii).replace("\n", "\n" + base_indent)
            pieces += [text[cursor:start], rendered]
            cursor = end
        pieces.append(text[cursor:])
        return "".join(pieces)

    def diff(self, python_text: str) -> str:
        name = str(self.file.path)
        return "".join(
            "".join(difflib.unified_diff(_lines(cell.text), _lines(new),
                                         f"{name}:cell {cell.number}", f"{name}:cell {cell.number}"))
            for cell, new in zip(self.cells, self.cell_texts(python_text), strict=True) if new != cell.text)


def _lines(cell_text: str) -> list[str]:
    """A cell's lines for a diff; its last line may lack a newline, which the diff does not show."""
    return [line if line.endswith("\n") else line + "\n" for line in cell_text.splitlines(keepends=True)]


def read_notebook(path: Path) -> Notebook:
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
        document = json.loads(text)
        spans = _cell_source_spans(text)
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from error
    except (UnicodeDecodeError, ValueError, KeyError, IndexError) as error:
        raise SourceError(f"not a readable notebook: {error}") from error
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise SourceError("not a readable notebook: no list of cells")
    code_cells = []
    for index, cell in enumerate(document["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        code = "".join(source) if isinstance(source, list) else source
        if isinstance(code, str) and index in spans:  # without a `source`, a cell is blank
            code_cells.append((index + 1, spans[index], isinstance(source, list), code))
    file = SourceFile(path=path, raw=raw, text=text, encoding="utf-8-sig" if raw.startswith(b"\xef\xbb\xbf")
                      else "utf-8")
    return join_cells(path, code_cells, file)


def join_cells(path: Path, code_cells: list[tuple[int, tuple[int, int] | None, bool, str]],
               file: SourceFile | None = None) -> Notebook:
    """The notebook whose code cells are `code_cells`: (number, where its `source` is in the file, whether the
    source is a list, code). Cells that are blank or start with a `%%` magic are left out. Without a file (an
    editor's notebook: no spans), the notebook cannot be rendered back into one."""
    cells, pieces, magics = [], [], []
    line = 1
    for number, span, source_is_list, code in code_cells:
        if not code.strip() or code.lstrip().startswith("%%"):
            continue
        masked = []
        for code_line in code.splitlines(keepends=True):
            magic = _MAGIC.match(code_line)
            if magic:
                ending = code_line[len(code_line.rstrip("\r\n")):]
                masked.append(f"{magic.group(1)}pass  # h2dlint: magic {len(magics)}{ending}")
                magics.append(code_line.rstrip("\r\n"))
            else:
                masked.append(code_line)
        piece = "".join(masked)
        piece += "" if not piece or piece.endswith("\n") else "\n"
        cells.append(Cell(number, span, source_is_list, code, line))
        pieces.append(piece)
        line += piece.count("\n") + 1  # the boundary line
    python_text = "".join(piece + CELL_BOUNDARY + "\n" for piece in pieces)
    python = SourceFile(path=path, raw=python_text.encode("utf-8", "surrogatepass"), text=python_text,
                        encoding="utf-8")
    return Notebook(file, tuple(cells), python, tuple(magics))


def process_notebook(path: Path, linter: Linter, mode: str) -> FileResult:
    """What engine.process_file does for a Python file, for a notebook. Never raises."""
    name = str(path)
    try:
        notebook = read_notebook(path)
    except SourceError as error:
        return unreadable(name, str(error))
    findings = []
    try:
        findings = linter.lint(notebook.python)
        if mode == "add-noqa":
            edits, left = add_noqa_edits(findings, notebook.python.text)
            if edits:
                write_source_atomically(notebook.file, notebook.render(apply_edits(notebook.python.text, edits)))
            return FileResult(name, tuple(map(notebook.locate, left)), noqa_added=len(edits))
        if mode == "check" or not any(linter.applicable(finding.fix) for finding in findings):
            return FileResult(name, tuple(map(notebook.locate, findings)))
        new_text, remaining, applied = linter.fix(notebook.python, findings)
        remaining = tuple(map(notebook.locate, remaining))
        if mode == "diff":
            return FileResult(name, remaining, len(applied), diff=notebook.diff(new_text), fixed_codes=applied)
        write_source_atomically(notebook.file, notebook.render(new_text))
        return FileResult(name, remaining, len(applied), fixed_codes=applied)
    except NotWrittenError as error:
        return FileResult(name, tuple(map(notebook.locate, findings)), error=str(error))
    except Exception as error:  # an h2dlint bug must not stop the run or touch the file
        return FileResult(name, (), error=internal_error(error))


def cell_text(path: Path, number: int) -> str:
    """The code of cell `number` (1-based) as it is on disk now."""
    cell = json.loads(path.read_bytes().decode("utf-8-sig"))["cells"][number - 1]
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _detect_indent(text: str) -> int | None:
    """The indentation of the file's first nested line (Jupyter writes 1), None for one-line JSON."""
    match = re.search(r"\n( *)\S", text)
    return len(match.group(1)) if match else None


def _cell_source_spans(text: str) -> dict[int, tuple[int, int]]:
    """Where each cell's `source` value is in the notebook's JSON text, by the cell's index."""
    decoder = json.JSONDecoder()

    def skip(index: int) -> int:
        return _WHITESPACE.match(text, index).end()

    def members(index: int):  # `index` at "{": yields (key, value start, value end)
        index = skip(index + 1)
        while text[index] != "}":
            key, index = json.decoder.scanstring(text, index + 1)
            index = skip(skip(index) + 1)  # past the colon
            _, end = decoder.raw_decode(text, index)
            yield key, index, end
            index = skip(end)
            index = skip(index + 1) if text[index] == "," else index

    def elements(index: int):  # `index` at "[": yields (element start, element end)
        index = skip(index + 1)
        while text[index] != "]":
            _, end = decoder.raw_decode(text, index)
            yield index, end
            index = skip(end)
            index = skip(index + 1) if text[index] == "," else index

    spans = {}
    for key, start, _ in members(skip(0)):
        if key == "cells":
            for cell_index, (cell_start, _) in enumerate(elements(start)):
                for cell_key, value_start, value_end in members(cell_start):
                    if cell_key == "source":
                        spans[cell_index] = (value_start, value_end)
    return spans

"""`h2dlint server`: a language server (LSP over stdio) for editors.

It lints the editor's buffer, never the file on disk, with the settings `h2dlint PATH` would use for that
file (the closest configuration, its per-file-ignores and excludes, `# noqa` comments), and offers each fix
as a quick fix, all safe fixes of a file as `source.fixAll.h2dlint`, a `# noqa: CODE` comment per finding,
and the rule's docs on hover. Nothing the client sends may stop it: an internal error is logged to the
client (window/logMessage) and the server goes on.

Only `h2dlint server` imports this module, so the linter itself never needs pygls.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from . import __version__
from .cache import CACHE_DIR_NAME
from .config import resolve_settings
from .discovery import force_excluded
from .engine import Linter
from .model import SYNTAX_ERROR, Applicability, Edit, Finding, Position
from .notebook import Notebook, join_cells
from .output import rule_url
from .project import find_project_root, project_model_for
from .rule import all_rules, rule_help
from .settings import Settings, SettingsError
from .source import LineIndex, SourceFile
from .suppression import INPUT_CODES, UNUSED_NOQA, add_noqa_edits

# Changes arriving closer together than this are linted once, after the last one.
DEBOUNCE_SECONDS = 0.05
FIX_ALL_KIND = "source.fixAll.h2dlint"
SOURCE = "h2dlint"

# The code is wrong, not only slow: a file that does not parse, a race that reads or overwrites data too early,
# a sync that makes CUDA graph capture fail.
ERROR_CODES = frozenset({SYNTAX_ERROR, "HDL401", "HDL402", "HDL501"})
# The audits: a sync that may not be one, or may not run every step.
INFORMATION_CODES = frozenset({"HDL108", "HDL202", "HDL204"})

# Linted once at start-up, so that the first file opened does not pay for importing and warming up LibCST.
WARM_UP_SOURCE = "import torch\n\ndef step(ids, x):\n    return torch.tensor(ids, device=x.device)\n"


@dataclass(frozen=True)
class LintedNotebook:
    """A notebook's code cells, linted together as one Python text (as `h2dlint demo.ipynb` does)."""

    cell_uris: tuple[str, ...]  # its code cells, in order
    texts: tuple[str, ...]
    linter: Linter | None
    joined: Notebook
    findings: tuple[Finding, ...]  # in the joined text


@dataclass(frozen=True)
class Linted:
    """A buffer's text (a file's, or a notebook cell's) and what linting it found."""

    text: str
    linter: Linter | None  # None: the file is excluded, or its configuration is broken
    findings: tuple[Finding, ...]  # for a cell, counted within the cell
    notebook: LintedNotebook | None = None  # the notebook a cell is in


class H2dlintServer(LanguageServer):
    def __init__(self) -> None:
        # Full syncs: pygls splits a buffer into lines as str.splitlines does (at form feeds too), unlike the
        # protocol, so applying incremental changes could garble a file with such characters.
        super().__init__("h2dlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full,
                         notebook_document_sync=types.NotebookDocumentSyncOptions(notebook_selector=[
                             types.NotebookDocumentFilterWithCells(
                                 notebook="*", cells=[types.NotebookCellLanguage(language="python")])], save=True))
        self.rules = all_rules()
        self.linters: dict[tuple[Settings, tuple[str, ...], Path | None], Linter] = {}
        self.open_uris: set[str] = set()
        self.linted: dict[str, Linted] = {}
        self.open_notebooks: set[str] = set()
        self.linted_notebooks: dict[str, LintedNotebook] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.last_change: dict[str, float] = {}  # when each document last changed (time.monotonic)
        self.settings_errors: dict[str, str] = {}  # the last configuration error logged, per document

    # -- logging

    def log(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=f"h2dlint: {message}"))

    def log_internal_error(self, where: str, error: Exception) -> None:
        self.log(f"internal error in {where}: {type(error).__name__}: {error}\n{traceback.format_exc()}")

    def report_server_error(self, error: Exception, source) -> None:
        """Errors pygls catches itself (a change to a document never opened, a message it cannot read): logged,
        where pygls would show them in a pop-up."""
        self.log(f"internal error: {type(error).__name__}: {error}")

    # -- linting

    def warm_up(self) -> None:
        linter = Linter([rule for rule in self.rules.values() if rule.default_enabled], Settings())
        linter.lint(SourceFile(Path("warm_up.py"), WARM_UP_SOURCE.encode(), WARM_UP_SOURCE, "utf-8"))
        gc.freeze()  # what lives for the whole session (modules, rules) need not be traversed by collections

    def path(self, uri: str) -> Path:
        """The file a document is, or would be saved as; for an untitled buffer, a name in the current folder
        (so the configuration found from there applies)."""
        path = to_fs_path(uri) if uri.startswith("file:") else None
        return Path(path) if path else Path.cwd() / "untitled.py"

    def linter_for(self, uri: str, path: Path) -> Linter | None:
        """The linter `h2dlint PATH` would use for the file; None when its configuration excludes it or cannot
        be read (the error is logged once, not at every keystroke)."""
        try:
            settings = resolve_settings([path], self.rules)
            enabled = settings.enabled_codes(self.rules)
        except SettingsError as error:
            if self.settings_errors.get(uri) != str(error):
                self.settings_errors[uri] = str(error)
                self.log(f"{path}: configuration error: {error}")
            return None
        self.settings_errors.pop(uri, None)
        if force_excluded(path, settings.exclude, Path(settings.project_root)):
            return None
        # One linter per project: what the other files of a project say (hot call chains, where tensors are made)
        # is asked as the CLI asks it; the summaries are cached on disk, so only a project's first build costs much.
        root = find_project_root([path], settings) if settings.project_model else None
        key = (settings, enabled, root)
        if key not in self.linters:
            self.linters[key] = Linter([self.rules[code] for code in enabled], settings)
        linter = self.linters[key]
        if linter.project is None and root is not None:
            linter.project = project_model_for([path], settings, root / CACHE_DIR_NAME, 1)
        return linter

    def forget_projects(self) -> None:
        """A saved file may change what the project says of the others: each model is built again, from the
        cached summaries of the unchanged files, at the next lint."""
        for linter in self.linters.values():
            linter.project = None
        self.linted.clear()

    def lint(self, uri: str) -> Linted | None:
        """What linting the open document `uri` (a file, or a notebook's cell) finds now; None for a document
        that is not open."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is not None and notebook.uri in self.open_notebooks:
            linted = self.lint_notebook(notebook.uri)
            return self.linted.get(uri) if linted is not None else None
        if uri not in self.open_uris:
            return None
        text = self.workspace.get_text_document(uri).source
        path = self.path(uri)
        linter = self.linter_for(uri, path)
        known = self.linted.get(uri)
        if known is not None and known.text == text and known.linter is linter:
            return known
        source = SourceFile(path, text.encode("utf-8", "surrogatepass"), text, "utf-8")
        self.linted[uri] = Linted(text, linter, self.findings(linter, source))
        return self.linted[uri]

    def findings(self, linter: Linter | None, source: SourceFile) -> tuple[Finding, ...]:
        if linter is None:
            return ()
        # Linting allocates many objects that die with it (by reference counting); the cyclic collector, which
        # those allocations trigger, would traverse them for nothing. It is paused meanwhile (as the CLI does).
        collecting = gc.isenabled()
        gc.disable()
        try:
            return tuple(linter.lint(source))
        except Exception as error:  # a bug in a rule: no findings for this text, and the server goes on
            self.log_internal_error(str(source.path), error)
            return ()
        finally:
            if collecting:
                gc.enable()

    def lint_notebook(self, uri: str) -> LintedNotebook | None:
        """Lint the open notebook `uri`'s code cells together, and keep each cell's findings for its cell."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None or uri not in self.open_notebooks:
            return None
        cell_uris = tuple(cell.document for cell in notebook.cells if cell.kind == types.NotebookCellKind.Code)
        texts = tuple(self.workspace.get_text_document(cell_uri).source for cell_uri in cell_uris)
        path = self.path(uri)
        linter = self.linter_for(uri, path)
        known = self.linted_notebooks.get(uri)
        if known is not None and (known.cell_uris, known.texts) == (cell_uris, texts) and known.linter is linter:
            return known
        joined = join_cells(path, [(number, None, False, text) for number, text in enumerate(texts, 1)])
        findings = self.findings(linter, joined.python)
        linted = LintedNotebook(cell_uris, texts, linter, joined, findings)
        by_cell: dict[str, list[Finding]] = {cell_uri: [] for cell_uri in cell_uris}
        for finding in map(joined.locate, findings):
            by_cell[cell_uris[finding.cell - 1]].append(finding)
        for cell_uri, text in zip(cell_uris, texts, strict=False):
            self.linted[cell_uri] = Linted(text, linter, tuple(by_cell[cell_uri]), linted)
        self.linted_notebooks[uri] = linted
        return linted

    def publish(self, uri: str) -> None:
        """Lint a document, or every cell of a notebook, and publish the diagnostics."""
        self.cancel_pending(uri)
        if uri in self.open_notebooks:
            before = self.linted_notebooks.get(uri)
            linted_notebook = self.lint_notebook(uri)
            if linted_notebook is None:
                return
            for gone in set(before.cell_uris if before else ()) - set(linted_notebook.cell_uris):
                self.linted.pop(gone, None)
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=gone, diagnostics=[]))
            uris = linted_notebook.cell_uris
        else:
            uris = (uri,)
        for each in uris:
            linted = self.lint(each)
            if linted is None:
                continue
            index = LineIndex(linted.text)
            diagnostics = [self.diagnostic(index, finding) for finding in linted.findings]
            version = self.workspace.get_text_document(each).version
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=each, version=version, diagnostics=diagnostics))

    def close(self, uri: str) -> None:
        """Forget a closed document or notebook, and clear its diagnostics (each cell's, for a notebook)."""
        self.cancel_pending(uri)
        self.open_uris.discard(uri)
        self.open_notebooks.discard(uri)
        self.last_change.pop(uri, None)
        self.settings_errors.pop(uri, None)
        notebook = self.linted_notebooks.pop(uri, None)
        for closed in notebook.cell_uris if notebook is not None else (uri,):
            self.linted.pop(closed, None)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=closed, diagnostics=[]))

    def publish_later(self, uri: str) -> None:
        """Lint after a change: at once when it follows a quiet spell, else when no other change has come for
        DEBOUNCE_SECONDS. So a single edit is linted without waiting, and a burst of changes (fast typing, or
        the changes that queued up while a lint ran) is linted once, after its last change."""
        self.cancel_pending(uri)
        now = time.monotonic()
        quiet = now - self.last_change.get(uri, float("-inf")) >= DEBOUNCE_SECONDS
        self.last_change[uri] = now
        delay = 0 if quiet else DEBOUNCE_SECONDS
        self.pending[uri] = asyncio.get_running_loop().call_later(delay, self.publish_logged, uri)

    def publish_logged(self, uri: str) -> None:
        """`publish`, for a timer: an error there would reach no one."""
        try:
            self.publish(uri)
        except Exception as error:
            self.log_internal_error("publish", error)

    def cancel_pending(self, uri: str) -> None:
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()

    # -- positions: h2dlint counts columns in code points, the client in the units it negotiated (UTF-16 unless
    # it asked for another)

    def position(self, index: LineIndex, position: Position) -> types.Position:
        if position.line > len(index.starts):  # just past the last line
            return types.Position(line=position.line - 1, character=0)
        prefix = index.line_text(position.line)[:position.column]
        return types.Position(line=position.line - 1,
                              character=self.workspace.position_codec.client_num_units(prefix))

    def range(self, index: LineIndex, start: Position, end: Position) -> types.Range:
        return types.Range(start=self.position(index, start), end=self.position(index, end))

    def diagnostic(self, index: LineIndex, finding: Finding) -> types.Diagnostic:
        url = rule_url(finding.code)
        return types.Diagnostic(
            range=self.range(index, finding.start, finding.end),
            message=finding.message,
            severity=_severity(finding.code),
            code=finding.code,
            code_description=types.CodeDescription(href=url) if url else None,
            source=SOURCE,
            tags=[types.DiagnosticTag.Unnecessary] if finding.code == UNUSED_NOQA else None,
        )

    def text_edits(self, index: LineIndex, edits) -> list[types.TextEdit]:
        return [types.TextEdit(range=self.range(index, edit.start, edit.end), new_text=edit.content)
                for edit in edits]

    def workspace_edit(self, uri: str, text_edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        return self.workspace_edits({uri: text_edits})

    def workspace_edits(self, text_edits: dict[str, list[types.TextEdit]]) -> types.WorkspaceEdit:
        """Edits to documents (by URI), tied to each document's version where the client can check it (so it
        refuses them once the buffer has changed)."""
        capabilities = self.client_capabilities.workspace
        if capabilities and capabilities.workspace_edit and capabilities.workspace_edit.document_changes:
            return types.WorkspaceEdit(document_changes=[
                types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=self.workspace.get_text_document(uri).version), edits=edits)
                for uri, edits in text_edits.items()])
        return types.WorkspaceEdit(changes=text_edits)

    # -- code actions and hover

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        linted = self.lint(uri)
        if linted is None:
            return None
        only = params.context.only

        def wanted(kind: str) -> bool:
            return not only or any(kind == asked or kind.startswith(f"{asked}.") for asked in only)

        index = LineIndex(linted.text)
        actions, unresolved = [], []
        for finding in linted.findings:
            diagnostic = self.diagnostic(index, finding)
            if not _touches(diagnostic.range, params.range) or not wanted(types.CodeActionKind.QuickFix):
                continue
            if finding.fix is not None:
                safe = finding.fix.applicability is Applicability.SAFE
                actions.append(types.CodeAction(
                    title=f"{finding.fix.message} ({finding.code}){'' if safe else ' (unsafe)'}",
                    kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic], is_preferred=safe,
                    edit=self.workspace_edit(uri, self.text_edits(index, finding.fix.edits))))
            if finding.code not in INPUT_CODES and finding.code != UNUSED_NOQA:
                unresolved.append(types.CodeAction(
                    title=f"Suppress with `# noqa: {finding.code}`", kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    data={"uri": uri, "noqa": [finding.code, finding.start.line, finding.start.column]}))
        every_finding = linted.notebook.findings if linted.notebook is not None else linted.findings
        if wanted(FIX_ALL_KIND) and linted.linter is not None and \
                any(linted.linter.applicable(finding.fix) for finding in every_finding):
            unresolved.append(types.CodeAction(title=_fix_all_title(linted.linter), kind=FIX_ALL_KIND,
                                               data={"uri": uri, "fix_all": True}))
        # The edits of these take the whole file's tokens, or a lint per round of fixes: a client that can
        # resolve an action asks for them only when the user picks the action, not at every move of the cursor.
        return actions + (unresolved if self.resolves_edits() else [self.resolve(action) for action in unresolved])

    def resolves_edits(self) -> bool:
        code_action = self.client_capabilities.text_document and self.client_capabilities.text_document.code_action
        return bool(code_action and code_action.resolve_support and "edit" in code_action.resolve_support.properties)

    def resolve(self, action: types.CodeAction) -> types.CodeAction:
        """`action` with its edit, made for the buffer as it is now: the noqa comment for its finding, or what
        `h2dlint --fix` would apply to the whole buffer. Without an edit when there is none to make, or when
        making it failed (logged): then picking the action does nothing."""
        try:
            self.add_edit(action)
        except Exception as error:
            self.log_internal_error("resolve", error)
        return action

    def add_edit(self, action: types.CodeAction) -> None:
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        linted = self.lint(uri) if isinstance(uri, str) else None
        if linted is None or linted.linter is None:
            return
        if data.get("fix_all") and linted.notebook is not None:
            notebook = linted.notebook
            new_text, _, applied = linted.linter.fix(notebook.joined.python, list(notebook.findings))
            new_texts = dict(zip((cell.number for cell in notebook.joined.cells),
                                 notebook.joined.cell_texts(new_text), strict=False))
            replaced = {cell_uri: self.replace_all(text, new_texts[number])
                        for number, (cell_uri, text) in enumerate(zip(notebook.cell_uris, notebook.texts, strict=False), 1)
                        if number in new_texts and new_texts[number] != text}
            if applied and replaced:
                action.edit = self.workspace_edits(replaced)
        elif data.get("fix_all"):
            source = SourceFile(self.path(uri), b"", linted.text, "utf-8")
            new_text, _, applied = linted.linter.fix(source, list(linted.findings))
            if applied:
                action.edit = self.workspace_edit(uri, self.replace_all(linted.text, new_text))
        elif "noqa" in data:
            findings = [finding for finding in linted.findings
                        if [finding.code, finding.start.line, finding.start.column] == data["noqa"]]
            edits = add_noqa_edits(findings, linted.text)[0] if findings else []
            if edits:
                action.edit = self.workspace_edit(uri, self.text_edits(LineIndex(linted.text), edits))

    def replace_all(self, text: str, new_text: str) -> list[types.TextEdit]:
        """One edit replacing the whole of `text` with `new_text`."""
        index = LineIndex(text)
        last = len(index.starts)
        return self.text_edits(index, [Edit(Position(1, 0), Position(last, len(index.line_text(last))), new_text)])

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        """The docs of the rules reported where the cursor is, as `h2dlint rule CODE` prints them."""
        linted = self.lint(params.text_document.uri)
        if linted is None:
            return None
        index = LineIndex(linted.text)
        at = (params.position.line, params.position.character)
        codes, ranges = [], []
        for finding in linted.findings:
            found = self.range(index, finding.start, finding.end)
            if (found.start.line, found.start.character) <= at <= (found.end.line, found.end.character) \
                    and finding.code in self.rules and finding.code not in codes:
                codes.append(finding.code)
                ranges.append(found)
        if not codes:
            return None
        text = "\n\n---\n\n".join(rule_help(self.rules[code]) for code in codes)
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text), range=ranges[0])


def _severity(code: str) -> types.DiagnosticSeverity:
    if code in ERROR_CODES:
        return types.DiagnosticSeverity.Error
    if code in INFORMATION_CODES:
        return types.DiagnosticSeverity.Information
    return types.DiagnosticSeverity.Warning


def _touches(found: types.Range, asked: types.Range) -> bool:
    """Whether two ranges overlap or meet (a cursor at either end of a finding counts)."""
    return (found.start.line, found.start.character) <= (asked.end.line, asked.end.character) and \
        (asked.start.line, asked.start.character) <= (found.end.line, found.end.character)


def _fix_all_title(linter: Linter) -> str:
    return "h2dlint: fix all" + (" fixes, unsafe ones included" if linter.settings.unsafe_fixes else " safe fixes")


def _document_uri(params) -> str:
    """The document a notification is about: a notebook, or a text document."""
    notebook = getattr(params, "notebook_document", None)
    return notebook.uri if notebook is not None else params.text_document.uri


def _logged(handler):
    """A handler that logs an internal error and answers nothing, instead of failing the request."""
    @functools.wraps(handler)
    def logged(ls: H2dlintServer, params):
        try:
            return handler(ls, params)
        except Exception as error:
            ls.log_internal_error(handler.__name__, error)
            return None
    return logged


def create_server() -> H2dlintServer:
    server = H2dlintServer()

    @server.feature(types.INITIALIZED)
    @_logged
    def initialized(ls: H2dlintServer, params: types.InitializedParams) -> None:
        ls.warm_up()

    # A notebook's notifications are handled as a file's: its cells are linted together.

    @_logged
    def did_open(ls: H2dlintServer, params) -> None:
        uri = _document_uri(params)
        (ls.open_notebooks if hasattr(params, "notebook_document") else ls.open_uris).add(uri)
        ls.publish(uri)

    @_logged
    def did_change(ls: H2dlintServer, params) -> None:
        uri = _document_uri(params)
        if uri in ls.open_uris or uri in ls.open_notebooks:
            ls.publish_later(uri)

    @_logged
    def did_save(ls: H2dlintServer, params) -> None:
        ls.forget_projects()
        ls.publish(_document_uri(params))

    @_logged
    def did_close(ls: H2dlintServer, params) -> None:
        ls.close(_document_uri(params))

    for handler, methods in ((did_open, (types.TEXT_DOCUMENT_DID_OPEN, types.NOTEBOOK_DOCUMENT_DID_OPEN)),
                             (did_change, (types.TEXT_DOCUMENT_DID_CHANGE, types.NOTEBOOK_DOCUMENT_DID_CHANGE)),
                             (did_save, (types.TEXT_DOCUMENT_DID_SAVE, types.NOTEBOOK_DOCUMENT_DID_SAVE)),
                             (did_close, (types.TEXT_DOCUMENT_DID_CLOSE, types.NOTEBOOK_DOCUMENT_DID_CLOSE))):
        for method in methods:
            server.feature(method)(handler)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=True))
    @_logged
    def code_action(ls: H2dlintServer, params: types.CodeActionParams):
        return ls.code_actions(params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    def resolve_code_action(ls: H2dlintServer, action: types.CodeAction) -> types.CodeAction:
        return ls.resolve(action)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @_logged
    def hover(ls: H2dlintServer, params: types.HoverParams):
        return ls.hover(params)

    return server


def serve() -> None:
    """Run the server on standard input and output until the client says exit."""
    create_server().start_io()

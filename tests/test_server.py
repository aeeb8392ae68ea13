"""`h2dlint server` end to end: pygls's LanguageClient drives the real server, a subprocess, over stdio."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from h2dlint.output import rule_url
from h2dlint.rule import all_rules, rule_help

from .helpers import COPIES_ANYWHERE

WAIT_SECONDS = 20

# Two safe HDL101 findings; the second one's fix pins with a literal `pin_memory=True`.
SAFE = ("import torch\n\n\n"
        "def step(n, states):\n"
        "    ids = [i * 2 for i in range(n)]\n"
        "    return torch.tensor(ids, device=states.device)\n\n"
        "for step_index in range(3):\n"
        "    CONSTANTS = torch.tensor([1, 2], device='cuda')\n")
# One HDL101 finding whose fix is unsafe.
UNSAFE = ("import torch\n\n\n"
          "def forward(indices, states):\n"
          "    return torch.tensor(indices, device=states.device, dtype=torch.int64)\n")

SERVER = (sys.executable, "-m", "h2dlint", "server")
# The server with a bug in HDL101: it raises on every file the rule's text test lets through.
SERVER_WITH_A_BROKEN_RULE = (sys.executable, "-c", "from h2dlint.rule import all_rules\n"
                             "def broken(cls, facts):\n    raise RuntimeError('a bug in HDL101')\n"
                             "all_rules()['HDL101'].candidates = classmethod(broken)\n"
                             "from h2dlint.server import serve\nserve()\n")

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "server.py"
# What VS Code declares (it resolves code action edits, and takes edits tied to a version), as the benchmark has it.
_spec = importlib.util.spec_from_file_location("server_benchmark", BENCHMARK)
_benchmark = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_benchmark)
EDITOR_CAPABILITIES = _benchmark.EDITOR_CAPABILITIES


class Editor:
    """An editor's side of a session: it keeps the documents it opened and what the server published."""

    def __init__(self) -> None:
        self.client = LanguageClient("h2dlint-tests", "1")
        self.published: dict[str, asyncio.Queue] = {}
        self.logs: list[str] = []
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            self.queue(params.uri).put_nowait(params)

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def logged(params: types.LogMessageParams) -> None:
            self.logs.append(params.message)

    def queue(self, uri: str) -> asyncio.Queue:
        return self.published.setdefault(uri, asyncio.Queue())

    async def start(self, folder: Path, capabilities=EDITOR_CAPABILITIES, command=SERVER) -> types.InitializeResult:
        await self.client.start_io(*command, cwd=str(folder))
        result = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            capabilities=capabilities, root_uri=from_fs_path(str(folder)))), WAIT_SECONDS)
        self.client.initialized(types.InitializedParams())
        return result

    async def stop(self) -> None:
        """Shut the server down as an editor does; it must exit cleanly, so it must still be running."""
        await asyncio.wait_for(self.client.shutdown_async(None), WAIT_SECONDS)
        self.client.exit(None)
        server = self.client._server
        await asyncio.wait_for(server.wait(), WAIT_SECONDS)
        await self.client.stop()
        assert server.returncode == 0

    async def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        """The next diagnostics published for `uri`."""
        params = await asyncio.wait_for(self.queue(uri).get(), WAIT_SECONDS)
        if uri in self.versions:
            assert params.version == self.versions[uri]
        return list(params.diagnostics)

    async def open(self, path: Path, text: str) -> tuple[str, list[types.Diagnostic]]:
        uri = from_fs_path(str(path))
        self.texts[uri], self.versions[uri] = text, 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        return uri, await self.diagnostics(uri)

    async def change(self, uri: str, text: str) -> list[types.Diagnostic]:
        self.texts[uri] = text
        self.versions[uri] += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        return await self.diagnostics(uri)

    async def code_actions(self, uri: str, at: types.Range, only=None) -> list[types.CodeAction]:
        context = types.CodeActionContext(diagnostics=[], only=only)
        return await asyncio.wait_for(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=at, context=context)), WAIT_SECONDS)

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        return await asyncio.wait_for(self.client.code_action_resolve_async(action), WAIT_SECONDS)

    async def hover(self, uri: str, line: int, character: int) -> types.Hover | None:
        return await asyncio.wait_for(self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character))), WAIT_SECONDS)

    async def apply(self, edit: types.WorkspaceEdit) -> list[types.Diagnostic]:
        """Apply a workspace edit to the buffer as an editor does, and send the change."""
        (document_edit,) = edit.document_changes
        uri = document_edit.text_document.uri
        assert document_edit.text_document.version == self.versions[uri]
        return await self.change(uri, apply_text_edits(self.texts[uri], document_edit.edits))


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """`edits` applied to `text`, positions counted in UTF-16 code units as the protocol does by default."""
    lines = text.splitlines(keepends=True) + [""]

    def offset(position: types.Position) -> int:
        line = lines[position.line]
        units, column = 0, 0
        while units < position.character:
            units += 2 if ord(line[column]) > 0xFFFF else 1
            column += 1
        return sum(map(len, lines[:position.line])) + column

    for edit in sorted(edits, key=lambda edit: (edit.range.start.line, edit.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


class Server:
    """A server subprocess and the editor driving it, on an event loop in a thread of its own, so that tests can
    share one server (starting one takes a while: lsprotocol's types alone take most of a second to import)."""

    def __init__(self, folder: Path, capabilities=EDITOR_CAPABILITIES, command=SERVER) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.editor = self.wait(self._start(folder, capabilities, command))

    @staticmethod
    async def _start(folder: Path, capabilities, command) -> Editor:
        editor = Editor()
        await editor.start(folder, capabilities, command)
        return editor

    def wait(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=4 * WAIT_SECONDS)

    def run(self, scenario):
        """Run `scenario(editor)` against this server."""
        return self.wait(scenario(self.editor))

    def close(self) -> None:
        try:
            self.wait(self.editor.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
            self.loop.close()


def session(folder: Path, scenario, capabilities=EDITOR_CAPABILITIES, command=SERVER):
    """Run `scenario(editor)` against a server of its own, started in `folder`, then shut it down cleanly."""
    server = Server(folder, capabilities, command)
    try:
        return server.run(scenario)
    finally:
        server.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the tests that need nothing special; each test opens files of its own."""
    server = Server(tmp_path_factory.mktemp("server"))
    yield server
    server.close()


def whole_line(line: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line + 1, character=0))


def test_fix_as_a_quick_fix_clears_the_diagnostic(server, tmp_path):
    async def scenario(editor: Editor):
        uri, diagnostics = await editor.open(tmp_path / "model.py", SAFE)
        assert [(d.code, d.source, d.range.start.line, d.severity) for d in diagnostics] == \
            [("HDL101", "h2dlint", 5, types.DiagnosticSeverity.Warning),
             ("HDL101", "h2dlint", 8, types.DiagnosticSeverity.Warning)]
        assert diagnostics[0].range == types.Range(start=types.Position(line=5, character=11),
                                                   end=types.Position(line=5, character=50))
        assert "blocking copy" in diagnostics[0].message
        url = rule_url("HDL101")  # the JSON output's: a link to the docs where there is one
        assert diagnostics[0].code_description == (types.CodeDescription(href=url) if url else None)
        actions = await editor.code_actions(uri, whole_line(5), only=[types.CodeActionKind.QuickFix])
        fix, noqa = actions
        assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred and "(unsafe)" not in fix.title
        assert fix.title.endswith("(HDL101)") and fix.diagnostics[0].code == "HDL101"
        diagnostics = await editor.apply(fix.edit)
        assert "torch.tensor(ids, pin_memory=torch.cuda.is_available()).to(states.device, non_blocking=True)" \
            in editor.texts[uri]
        assert [d.range.start.line for d in diagnostics] == [8]

    server.run(scenario)


def test_unsafe_fix_is_labelled_and_not_preferred(server, tmp_path):
    async def scenario(editor: Editor):
        uri, diagnostics = await editor.open(tmp_path / "model.py", UNSAFE)
        assert [d.code for d in diagnostics] == ["HDL101"]
        actions = await editor.code_actions(uri, diagnostics[0].range)
        fix = next(action for action in actions if action.kind == types.CodeActionKind.QuickFix
                   and "noqa" not in action.title)
        assert fix.title.endswith("(HDL101) (unsafe)") and not fix.is_preferred
        # Fix all applies what `h2dlint --fix` would: safe fixes only, and here there are none.
        assert not any(action.kind == "source.fixAll.h2dlint" for action in actions)

    server.run(scenario)


def test_fix_all_applies_every_safe_fix_and_is_resolved_lazily(server, tmp_path):
    async def scenario(editor: Editor):
        uri, diagnostics = await editor.open(tmp_path / "model.py", SAFE)
        assert len(diagnostics) == 2
        (action,) = await editor.code_actions(uri, whole_line(0), only=[types.CodeActionKind.SourceFixAll])
        assert action.kind == "source.fixAll.h2dlint" and action.title == "h2dlint: fix all safe fixes"
        assert action.edit is None  # this client resolves actions: the edit comes when it is picked
        action = await editor.resolve(action)
        assert await editor.apply(action.edit) == []
        assert editor.texts[uri].count("non_blocking=True") == 2

    server.run(scenario)


def test_a_client_without_resolve_or_versioned_edits_counting_utf8(tmp_path):
    """The actions come with their edits, unversioned; and columns count UTF-8 bytes, as the client asked."""
    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=False)),
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8]))

    async def scenario(editor: Editor):
        wide = "import torch\nfor _ in range(2):\n    \u00e9 = torch.tensor([1, 2], device='cuda')\n"
        _, (diagnostic,) = await editor.open(tmp_path / "wide.py", wide)
        assert diagnostic.range.start == types.Position(line=2, character=9)  # "é = " is 5 bytes, 4 code points
        uri, _ = await editor.open(tmp_path / "model.py", SAFE)
        (action,) = await editor.code_actions(uri, whole_line(0), only=[types.CodeActionKind.Source])
        (edits,) = action.edit.changes.values()  # no versioned document changes: the client has none
        assert apply_text_edits(SAFE, edits).count("non_blocking=True") == 2
        fix, noqa = await editor.code_actions(uri, whole_line(8), only=[types.CodeActionKind.QuickFix])
        (edits,) = noqa.edit.changes.values()
        assert apply_text_edits(SAFE, edits).splitlines()[8].endswith("device='cuda')  # noqa: HDL101")

    session(tmp_path, scenario, capabilities)


def test_noqa_action_suppresses_the_finding(server, tmp_path):
    async def scenario(editor: Editor):
        uri, _ = await editor.open(tmp_path / "model.py", SAFE)
        actions = await editor.code_actions(uri, whole_line(8))
        (noqa,) = [action for action in actions if "noqa" in action.title]
        assert noqa.title == "Suppress with `# noqa: HDL101`" and not noqa.is_preferred
        assert noqa.edit is None  # made when the action is picked
        noqa = await editor.resolve(noqa)
        diagnostics = await editor.apply(noqa.edit)
        assert editor.texts[uri].splitlines()[8] == "    CONSTANTS = torch.tensor([1, 2], device='cuda')  # noqa: HDL101"
        assert [d.range.start.line for d in diagnostics] == [5]

    server.run(scenario)


def test_hover_shows_the_rule_docs(server, tmp_path):
    async def scenario(editor: Editor):
        uri, _ = await editor.open(tmp_path / "model.py", SAFE)
        hover = await editor.hover(uri, 5, 20)
        assert hover.contents.kind == types.MarkupKind.Markdown
        assert hover.contents.value == rule_help(all_rules()["HDL101"])
        assert hover.range.start == types.Position(line=5, character=11)
        assert await editor.hover(uri, 0, 3) is None  # no finding under `import`

    server.run(scenario)


def test_hover_text_is_what_the_rule_command_prints():
    printed = subprocess.run([sys.executable, "-m", "h2dlint", "rule", "HDL101"], capture_output=True, text=True,
                             check=True).stdout
    assert printed.strip() == rule_help(all_rules()["HDL101"])


def test_columns_are_utf16_code_units(server, tmp_path):
    """A character outside the BMP before a finding is one code point but two UTF-16 code units."""
    text = ("import torch\n\n\ndef step(ids, states):\n"
            "    s = '\U0001F600'; return torch.tensor(ids, device=states.device)\n")

    async def scenario(editor: Editor):
        uri, (diagnostic,) = await editor.open(tmp_path / "model.py", text)
        line = text.splitlines()[4]
        code_points = line.index("torch.tensor")
        assert diagnostic.range.start == types.Position(line=4, character=code_points + 1)
        assert diagnostic.range.end == types.Position(line=4, character=len(line) + 1)
        (fix, _) = await editor.code_actions(uri, diagnostic.range)
        await editor.apply(fix.edit)
        assert editor.texts[uri].splitlines()[4] == (
            "    s = '\U0001F600'; return torch.tensor(ids, pin_memory=torch.cuda.is_available())"
            ".to(states.device, non_blocking=True)")

    server.run(scenario)


def test_configuration_of_the_file_applies(server, tmp_path):
    """The closest configuration is found from the file, as `h2dlint FILE` finds it (the server runs in another
    folder): a per-file-ignore for scripts/ and an exclude in a pyproject.toml above the files."""
    (tmp_path / "pyproject.toml").write_text('[tool.h2dlint]\nper-file-ignores = { "scripts/**" = ["HDL101"] }\n'
                                             'exclude = ["generated/"]\n')
    for folder in ("scripts", "src", "generated"):
        (tmp_path / folder).mkdir()

    async def scenario(editor: Editor):
        _, ignored = await editor.open(tmp_path / "scripts" / "run_model.py", SAFE)
        _, excluded = await editor.open(tmp_path / "generated" / "model.py", SAFE)
        _, reported = await editor.open(tmp_path / "src" / "model.py", SAFE)
        assert (ignored, excluded, [d.code for d in reported]) == ([], [], ["HDL101", "HDL101"])

    server.run(scenario)


def test_facts_from_other_files_of_the_project_reach_the_editor(server, tmp_path):
    """The project model, as the CLI builds it: the read is hot because another file's `forward` calls it, and
    the tensor is on the GPU because a third file's class is made there."""
    (tmp_path / "pyproject.toml").write_text("")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "batch.py").write_text("import torch\n\n\nclass Batch:\n    def __init__(self, n):\n"
                                      "        self.seq_lens = torch.zeros(n, device='cuda')\n")
    (package / "runner.py").write_text("import torch\nfrom pkg.backend import plan\n\n\n"
                                       "class Runner(torch.nn.Module):\n    def forward(self, batch):\n"
                                       "        return plan(batch)\n")
    backend = "def plan(batch):\n    return batch.seq_lens.max().item()\n"
    (package / "backend.py").write_text(backend)

    async def scenario(editor: Editor):
        _, diagnostics = await editor.open(package / "backend.py", backend)
        assert [d.code for d in diagnostics] == ["HDL201"]
        assert "hot: Runner.forward -> plan" in diagnostics[0].message
        assert "`Batch.seq_lens` (pkg.batch)" in diagnostics[0].message

    server.run(scenario)


def test_lints_the_buffer_not_the_file(server, tmp_path):
    path = tmp_path / "model.py"
    path.write_text("print('nothing here')\n")

    async def scenario(editor: Editor):
        uri, diagnostics = await editor.open(path, SAFE)
        assert len(diagnostics) == 2
        editor.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert len(await editor.diagnostics(uri)) == 2  # linted again on save: still the buffer

    server.run(scenario)
    assert path.read_text() == "print('nothing here')\n"


def test_a_burst_of_changes_is_linted_less_often_ending_with_the_last(server, tmp_path):
    async def scenario(editor: Editor):
        uri, _ = await editor.open(tmp_path / "model.py", SAFE)
        text = SAFE
        for version in range(2, 12):  # ten changes sent at once, as fast typing or a paste replay sends them
            text += f"for _ in range(2): x{version} = torch.tensor([{version}, 0], device='cuda')\n"
            editor.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        published = []
        while not published or published[-1].version != 11:
            published.append(await asyncio.wait_for(editor.queue(uri).get(), WAIT_SECONDS))
        assert len(published) < 10
        assert len(published[-1].diagnostics) == 2 + 10
        await asyncio.sleep(0.2)  # nothing stale comes after the last version's
        assert editor.queue(uri).empty()

    server.run(scenario)


def test_bad_input_does_not_stop_the_server(server, tmp_path):
    async def scenario(editor: Editor):
        broken = "import torch\nx = torch.tensor([1], device='cuda')\ndef f(:\n"
        uri, (syntax_error,) = await editor.open(tmp_path / "broken.py", broken)
        assert (syntax_error.code, syntax_error.range.start.line) == ("HDL001", 2)
        assert syntax_error.severity == types.DiagnosticSeverity.Error
        (null_byte,) = await editor.change(uri, broken + "\x00\udcff garbage ((((\n")
        assert null_byte.code == "HDL001" and null_byte.severity == types.DiagnosticSeverity.Error
        # A document never opened: no answer, no crash; a change to it is logged.
        unknown = from_fs_path(str(tmp_path / "never_opened.py"))
        assert await editor.code_actions(unknown, whole_line(0)) is None
        assert await editor.hover(unknown, 0, 0) is None
        editor.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=unknown, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="x = 1\n")]))
        # A stale version, then the server still lints the last text it was sent.
        editor.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=1),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=SAFE)]))
        editor.versions[uri] = 1
        assert len(await editor.diagnostics(uri)) == 2
        assert any("internal error" in message for message in editor.logs)

    server.run(scenario)


def test_internal_error_in_a_rule_is_logged_and_the_server_goes_on(tmp_path):
    async def scenario(editor: Editor):
        uri, diagnostics = await editor.open(tmp_path / "model.py", SAFE)
        assert diagnostics == []
        assert any("RuntimeError: a bug in HDL101" in message for message in editor.logs)
        # A file that does not parse never reaches the rule: it is still reported, and requests answered.
        _, diagnostics = await editor.open(tmp_path / "other.py", "import torch\nx = torch.tensor([1], device=\n")
        assert [d.code for d in diagnostics] == ["HDL001"]
        assert await editor.hover(uri, 5, 20) is None

    session(tmp_path, scenario, command=SERVER_WITH_A_BROKEN_RULE)


def test_configuration_error_is_logged_and_the_server_goes_on(server, tmp_path):
    (tmp_path / "h2dlint.toml").write_text("select = 3\n")

    async def scenario(editor: Editor):
        _, diagnostics = await editor.open(tmp_path / "model.py", SAFE)
        assert diagnostics == []
        (tmp_path / "h2dlint.toml").write_text("select = ['HDL1']\n")
        _, diagnostics = await editor.open(tmp_path / "other.py", SAFE)
        assert len(diagnostics) == 2
        assert any("`select` must be a list of strings" in message for message in editor.logs)

    server.run(scenario)


def test_notebook_cells_are_checked_together(server, tmp_path):
    """The code cells of a notebook the editor opens as one are linted together (the import is in another
    cell); diagnostics and fixes count lines within their cell; fix all fixes every cell."""
    notebook = from_fs_path(str(tmp_path / "demo.ipynb"))
    shutil.copy(COPIES_ANYWHERE, tmp_path / "h2dlint.toml")  # the cells' top-level copies are findings
    cells = {f"{notebook}#cell{number}": text for number, text in enumerate(
        ["import torch\n", "# Notes\n", "%matplotlib inline\nx = torch.tensor([1, 2], device='cuda')\n",
         "y = torch.tensor([3, 4], device='cuda')"], 1)}
    uris = list(cells)
    kinds = [types.NotebookCellKind.Code, types.NotebookCellKind.Markup, types.NotebookCellKind.Code,
             types.NotebookCellKind.Code]

    def change_cell(editor: Editor, uri: str, text: str, version: int) -> None:
        editor.texts[uri], editor.versions[uri] = text, version
        editor.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=version, uri=notebook),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    changes=[types.TextDocumentContentChangeWholeDocument(text=text)])]))))

    async def scenario(editor: Editor):
        for uri, text in cells.items():
            editor.texts[uri], editor.versions[uri] = text, 1
        languages = ["python" if kind == types.NotebookCellKind.Code else "markdown" for kind in kinds]
        editor.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook, notebook_type="jupyter-notebook", version=1,
                cells=[types.NotebookCell(kind=kind, document=uri) for kind, uri in zip(kinds, uris, strict=False)]),
            cell_text_documents=[types.TextDocumentItem(uri=uri, language_id=language, version=1, text=cells[uri])
                                 for language, uri in zip(languages, uris, strict=False)]))
        published = {uri: await editor.diagnostics(uri) for uri in (uris[0], uris[2], uris[3])}
        assert published[uris[0]] == []
        (third,) = published[uris[2]]
        assert (third.code, third.range.start) == ("HDL101", types.Position(line=1, character=4))
        assert [d.code for d in published[uris[3]]] == ["HDL101"]

        fix, _ = await editor.code_actions(uris[2], third.range, only=[types.CodeActionKind.QuickFix])
        (cell_edit,) = fix.edit.document_changes
        assert cell_edit.text_document.uri == uris[2]
        change_cell(editor, uris[2], apply_text_edits(cells[uris[2]], cell_edit.edits), 2)
        assert await editor.diagnostics(uris[2]) == []
        assert editor.texts[uris[2]].startswith("%matplotlib inline\nx = torch.tensor([1, 2], pin_memory=True)")

        (fix_all,) = await editor.code_actions(uris[0], whole_line(0), only=[types.CodeActionKind.SourceFixAll])
        fix_all = await editor.resolve(fix_all)
        (cell_edit,) = fix_all.edit.document_changes  # only the cell left to fix
        assert cell_edit.text_document.uri == uris[3]
        assert apply_text_edits(cells[uris[3]], cell_edit.edits) == \
            "y = torch.tensor([3, 4], pin_memory=True).to('cuda', non_blocking=True)"

        editor.client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=notebook),
            cell_text_documents=[types.TextDocumentIdentifier(uri=uri) for uri in uris]))
        assert await editor.hover(uris[3], 0, 8) is None

    server.run(scenario)


def test_importing_the_cli_does_not_import_pygls():
    code = "import sys, h2dlint.cli; assert not [m for m in sys.modules if m.startswith(('pygls', 'lsprotocol'))]"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_pygls_the_command_says_what_to_install():
    code = "import sys; sys.modules['pygls'] = None; from h2dlint.cli import main; main(['server'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2 and "pip install 'h2dlint[server]'" in done.stderr


def test_benchmark_drives_the_server(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(SAFE)
    report = subprocess.run([sys.executable, str(BENCHMARK), str(path), "--rounds", "1", "--edits", "2"],
                            capture_output=True, text=True, check=True).stdout
    assert f"({SAFE.count(chr(10))} lines, 2 findings)" in report
    assert "re-lint, didChange -> publishDiagnostics: median" in report and "n=2)" in report

"""How fast `h2dlint server` answers an editor, measured over stdio with a real LSP client (pygls's).

    python benchmarks/server.py [FILE] [--rounds 5] [--edits 10]

Without FILE it uses sglang 0.5.23's `srt/layers/attention/triton_backend.py` (2,902 lines), from the tree
benchmarks/bench.py downloads. Each round starts a fresh server, initializes it, opens the file and times:

- first diagnostics: from sending didOpen to receiving publishDiagnostics (and from starting the process);
- re-lint: from sending didChange (a line typed at the end of the file, a new finding) to receiving the
  publishDiagnostics of that version, the server's debounce included; the edits are spaced out so that
  each is linted on its own;
- code action: a codeAction request on the first finding's range, to its answer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import byte_compile_h2dlint, default_tree  # noqa: E402  (the sibling script, not a package)

DEFAULT_FILE = Path("layers") / "attention" / "triton_backend.py"
WAIT_SECONDS = 60
PAUSE_SECONDS = 0.3  # between edits: longer than the debounce, so no two edits are linted together

# What VS Code tells a server: it resolves a code action's edit when the user picks it, and applies edits
# tied to a document version.
EDITOR_CAPABILITIES = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)),
    text_document=types.TextDocumentClientCapabilities(
        code_action=types.CodeActionClientCapabilities(
            resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]))))


class Session:
    def __init__(self) -> None:
        self.client = LanguageClient("h2dlint-benchmark", "1")
        self.published: asyncio.Queue = asyncio.Queue()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait((time.perf_counter(), params))

    async def diagnostics_of(self, version: int) -> tuple[float, list[types.Diagnostic]]:
        """When the diagnostics of `version` arrived, and what they are."""
        while True:
            arrived, params = await asyncio.wait_for(self.published.get(), WAIT_SECONDS)
            if params.version == version:
                return arrived, list(params.diagnostics)


async def one_round(path: Path, text: str, edits: int) -> dict[str, list[float]]:
    session = Session()
    client = session.client
    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "h2dlint", "server", cwd=str(path.parent))
    await client.initialize_async(types.InitializeParams(capabilities=EDITOR_CAPABILITIES,
                                                         root_uri=from_fs_path(str(path.parent))))
    client.initialized(types.InitializedParams())
    uri = from_fs_path(str(path))
    sent = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    arrived, diagnostics = await session.diagnostics_of(1)
    times = {"first": [arrived - sent], "from start": [arrived - started], "re-lint": [], "code action": [],
             "findings": [len(diagnostics)]}

    for version in range(2, edits + 2):
        await asyncio.sleep(PAUSE_SECONDS)
        text += f"for _ in range(2): _typed_{version} = torch.tensor([{version}], device='cuda')\n"
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        arrived, new_diagnostics = await session.diagnostics_of(version)
        times["re-lint"].append(arrived - sent)
        if len(new_diagnostics) != len(diagnostics) + version - 1:
            raise SystemExit(f"edit {version - 1}: expected one more finding, got {len(new_diagnostics)}")

        if diagnostics:
            sent = time.perf_counter()
            await client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostics[0].range,
                context=types.CodeActionContext(diagnostics=[])))
            times["code action"].append(time.perf_counter() - sent)

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return times


def describe(seconds: list[float]) -> str:
    milliseconds = sorted(value * 1000 for value in seconds)
    return (f"median {statistics.median(milliseconds):.0f} ms (min {milliseconds[0]:.0f}, "
            f"max {milliseconds[-1]:.0f}, n={len(milliseconds)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", type=Path, help="the Python file to open (default: sglang's)")
    parser.add_argument("--rounds", type=int, default=5, help="fresh servers, one after the other")
    parser.add_argument("--edits", type=int, default=10, help="edits per round")
    args = parser.parse_args()
    path = (args.file or default_tree() / DEFAULT_FILE).resolve()
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        text += "\n"
    if "import torch" not in text:
        text = "import torch\n" + text

    byte_compile_h2dlint()
    load_before = os.getloadavg()[0]
    results: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, values in asyncio.run(one_round(path, text, args.edits)).items():
            results.setdefault(name, []).extend(values)

    print(f"file: {path} ({text.count(chr(10)):,} lines, {int(results['findings'][0])} findings)")
    print(f"python: {sys.version.split()[0]}; {args.rounds} rounds, {args.edits} edits each; "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores")
    print(f"first diagnostics after didOpen:        {describe(results['first'])}")
    print(f"  from starting the server process:     {describe(results['from start'])}")
    print(f"re-lint, didChange -> publishDiagnostics: {describe(results['re-lint'])}")
    if results["code action"]:
        print(f"code actions at a finding:              {describe(results['code action'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

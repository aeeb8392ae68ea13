"""A content-keyed cache of findings, so an unchanged tree is checked in a blink.

One JSON file per (h2dlint build, settings) under `.h2dlint_cache/`, mapping each
file's absolute path to its size, mtime, content digest and findings. A file whose
size and mtime match is not even read; one whose content digest matches is not
parsed. JSON rather than pickle: a cache file is data and is read as data.

The cache stays bounded: saving drops the entries of files that no longer exist, and
deletes the cache files no run has used for STALE_AFTER_SECONDS (those of earlier
h2dlint versions, or of settings no longer run), the project model's among them (a run
that reads one touches it). `h2dlint clean` deletes it all.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from . import __version__
from .model import Applicability, Edit, Finding, Fix, Position

CACHE_DIR_NAME = ".h2dlint_cache"
_CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                 "# This file is a cache directory tag created by h2dlint.\n"
                 "# For information about cache directory tags see https://bford.info/cachedir/\n")
# A cache file's modification time is its last use: loading it touches it.
STALE_AFTER_SECONDS = 7 * 24 * 3600
# What h2dlint writes there, all that pruning deletes: the findings (save()), temporary files, and the project
# model's summaries and state (project.SummaryCache, project.Project), of this and earlier formats and versions.
_CACHE_FILE_NAME = re.compile(r"[0-9a-f]{32}\.json|tmp\w+\.tmp|summaries-[0-9a-f]{16}(?:-\d{2})?\.marshal"
                              r"|model-[\w.+]+?(?:-hot|-journal)?\.marshal")


@functools.cache
def code_fingerprint() -> str:
    """Changes whenever h2dlint's own code does (the engine and the rules): what every cache built from that code,
    findings and the project model's answers alike, must be keyed by, as a development build keeps its version."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(__version__.encode())
    from . import rules as catalogue

    folders = [Path(__file__).parent, *map(Path, catalogue.__path__)]
    for source in sorted(source for folder in folders for source in folder.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()


def build_fingerprint(settings, enabled_codes: tuple[str, ...]) -> str:
    """Changes whenever a finding could change: h2dlint's own code, the rules run, the settings."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(code_fingerprint().encode())
    digest.update(repr((enabled_codes, settings.cache_key())).encode())
    return digest.hexdigest()


class FindingsCache:
    def __init__(self, root: Path, fingerprint: str) -> None:
        self.folder = root / CACHE_DIR_NAME
        self.file = self.folder / f"{fingerprint}.json"
        self.entries: dict[str, list] = {}
        self.changed = False
        self.seen: set[str] = set()  # the keys of the files looked up this run: they exist
        try:
            self.entries = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        with contextlib.suppress(OSError):  # a cache that cannot be touched (read-only) still serves
            os.utime(self.file)

    def lookup(self, path: Path, model_key: str = "") -> tuple[Finding, ...] | None:
        """The cached findings when the file, and what the project model says of it (`model_key`), are unchanged
        since they were cached; else None."""
        key = os.path.abspath(path)
        self.seen.add(key)
        entry = self.entries.get(key)
        if entry is None or len(entry) != 6 or entry[4] != model_key:
            return None
        size, mtime_ns, digest, findings, _, _ = entry
        try:
            status = path.stat()
        except OSError:
            return None
        if (status.st_size, status.st_mtime_ns) != (size, mtime_ns):
            from .source import content_digest

            try:
                if content_digest(path.read_bytes()) != digest:
                    return None
            except OSError:
                return None
            entry[1] = status.st_mtime_ns
            self.changed = True
        return tuple(finding_from_json(item, str(path)) for item in findings)

    def digest(self, path: Path) -> str:
        """The content digest cached for `path` (after a successful lookup: that of the file now)."""
        return self.entries[os.path.abspath(path)][2]

    def store(self, path: Path, digest: str, size: int, mtime_ns: int, findings, model_key: str = "",
              asked: tuple = ()) -> None:
        self.entries[os.path.abspath(path)] = [size, mtime_ns, digest, [finding_to_json(f) for f in findings],
                                              model_key, [list(question) for question in asked]]
        self.changed = True

    def asked(self, path: Path) -> tuple:
        """The questions about values the file's rules asked the project model when its findings were cached."""
        entry = self.entries.get(os.path.abspath(path))
        if entry is None or len(entry) != 6:
            return ()
        return tuple(tuple(question) for question in entry[5])

    def save(self) -> None:
        if not self.changed:
            return
        for key in [key for key in self.entries if key not in self.seen and not os.path.exists(key)]:
            del self.entries[key]
        self._delete_stale_files()
        try:
            make_cache_folder(self.folder)
            handle, temp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                # dumps, not dump: only a one-shot encoding takes the C encoder.
                out.write(json.dumps(self.entries, separators=(",", ":")))
            os.replace(temp, self.file)
        except OSError:
            pass  # a cache that cannot be written only costs time next run

    def _delete_stale_files(self) -> None:
        """Delete the other cache files (and temporary files a killed run left) unused for STALE_AFTER_SECONDS.
        Only files named as h2dlint names them, and never through a symbolic link to a folder elsewhere."""
        try:
            if self.folder.is_symlink():
                return
            others = [entry for entry in os.scandir(self.folder)
                      if _CACHE_FILE_NAME.fullmatch(entry.name) and entry.path != str(self.file)
                      and entry.is_file(follow_symlinks=False)]
        except OSError:
            return
        stale_before = time.time() - STALE_AFTER_SECONDS
        for entry in others:
            with contextlib.suppress(OSError):  # another run's file, already gone
                if entry.stat(follow_symlinks=False).st_mtime < stale_before:
                    os.unlink(entry.path)


def make_cache_folder(folder: Path) -> None:
    """The cache folder, made if missing, tagged as a cache and ignored by git (whatever writes into it first:
    the findings, or the project model's summaries). Raises OSError when it cannot."""
    folder.mkdir(exist_ok=True)
    tag = folder / "CACHEDIR.TAG"
    if not tag.exists():
        tag.write_text(_CACHEDIR_TAG)
        (folder / ".gitignore").write_text("*\n")


def remove_cache(root: Path) -> bool:
    """Delete the cache folder under `root`; False when there was none. Raises OSError when it cannot."""
    folder = root / CACHE_DIR_NAME
    if not folder.exists() and not folder.is_symlink():
        return False
    shutil.rmtree(folder)  # refuses a symbolic link: what it points to is not h2dlint's to delete
    return True


def finding_to_json(finding: Finding) -> list:
    fix = None
    if finding.fix is not None:
        fix = [finding.fix.applicability.value, finding.fix.message,
               [[*_position(edit.start), *_position(edit.end), edit.content] for edit in finding.fix.edits]]
    return [*_position(finding.start), *_position(finding.end), finding.code, finding.message, fix,
            [list(pair) for pair in finding.evidence]]


def finding_from_json(item: list, path: str) -> Finding:
    start_line, start_column, end_line, end_column, code, message, fix, evidence = item
    if fix is not None:
        applicability, fix_message, edits = fix
        fix = Fix(edits=tuple(Edit(Position(a, b), Position(c, d), content) for a, b, c, d, content in edits),
                  applicability=Applicability(applicability), message=fix_message)
    return Finding(path=path, start=Position(start_line, start_column), end=Position(end_line, end_column),
                   code=code, message=message, fix=fix, evidence=tuple(tuple(pair) for pair in evidence))


def _position(position: Position) -> list[int]:
    return [position.line, position.column]

"""Reading and writing Python source files without losing a byte.

A file is read as bytes, decoded with the encoding Python itself would use
(BOM, PEP 263 cookie, else UTF-8) and written back with the same encoding,
BOM and line endings. Writes keep the file's mode, owner and group, are atomic
where that can keep them, refuse a file this process may not write, and refuse
to clobber a file that changed on disk since it was read.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import io
import os
import re
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

_NEWLINE = re.compile(r"\r\n|\r|\n")


class SourceError(Exception):
    """A file that cannot be read or decoded; the message says why."""


class NotWrittenError(Exception):
    """A fix or noqa comment h2dlint did not write, and why; the file is left as it was."""


class FileChangedError(NotWrittenError):
    """The file on disk is no longer the one that was read."""


@dataclass(frozen=True)
class SourceFile:
    path: Path
    raw: bytes
    text: str
    encoding: str  # as returned by tokenize.detect_encoding, e.g. "utf-8-sig"

    @property
    def digest(self) -> str:
        return content_digest(self.raw)

    @property
    def newline(self) -> str:
        """The file's first line ending, used for any line a fix inserts."""
        match = _NEWLINE.search(self.text)
        return match.group() if match else "\n"

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)


def content_digest(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def decode_source(raw: bytes, path: Path) -> SourceFile:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as error:
        raise SourceError(f"cannot decode: {error}") from error
    return SourceFile(path=path, raw=raw, text=text, encoding=encoding)


def read_source(path: Path) -> SourceFile:
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # reading a FIFO or a device could block forever
            raise SourceError("not a regular file; not read")
        raw = path.read_bytes()
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from error
    return decode_source(raw, path)


def may_write(path: Path) -> bool:
    """Whether this process may write `path`, as the kernel would decide for its effective user."""
    return os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids)


def write_source_atomically(original: SourceFile, new_text: str) -> None:
    """Replace `original.path` with `new_text`, or raise NotWrittenError (FileChangedError when the file
    changed or went away).

    A file this process may not write is refused, as the shell and other tools refuse it: replacing it by a
    rename would only need the folder to be writable. The new content goes to a temporary file in the same
    folder, given the target's permission bits, owner and group, which then replaces the target in one
    rename. Where that cannot keep the file as it was (the owner or group cannot be given to another user's
    file, the folder is not writable, the file has other hard links), the file is rewritten in place instead.
    Just before writing, the target is read again: if it no longer holds the bytes that were linted, nothing
    is written.
    """
    data = original.encode(new_text)
    target = original.path
    if target.is_symlink():
        raise FileChangedError(f"{target} is a symbolic link; not rewritten (fix the file it points to)")
    try:
        status = target.stat()
    except OSError as error:
        raise FileChangedError(f"{target} is gone: {error.strerror}") from error
    if not may_write(target):
        raise NotWrittenError(f"cannot write: {os.strerror(errno.EACCES)}; the file is not changed")
    try:
        handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".h2dlint", dir=target.parent)
    except OSError:  # the folder is not writable, though the file is
        _write_in_place(original, data)
        return
    try:
        with os.fdopen(handle, "wb") as temp:
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())
        if status.st_nlink > 1 or not _take_owner_and_mode(temp_name, status):
            _write_in_place(original, data)
            return
        if _unchanged_on_disk(original, data):
            os.replace(temp_name, target)
    finally:
        if os.path.exists(temp_name):
            os.unlink(temp_name)


def _take_owner_and_mode(temp_name: str, status: os.stat_result) -> bool:
    """Give the temporary file the target's owner, group and permission bits; False where not permitted."""
    temp_status = os.stat(temp_name)
    if (temp_status.st_uid, temp_status.st_gid) != (status.st_uid, status.st_gid):
        try:
            os.chown(temp_name, status.st_uid, status.st_gid)
        except OSError:
            return False
    os.chmod(temp_name, stat.S_IMODE(status.st_mode))  # after chown, which may clear set-user-ID bits
    return True


def _unchanged_on_disk(original: SourceFile, data: bytes) -> bool:
    """Whether `data` is still to be written: the file holds what was read (FileChangedError if it holds
    something else); False when it already holds `data` (another run wrote the same fix meanwhile)."""
    target = original.path
    try:
        current = target.read_bytes()
    except OSError as error:
        raise FileChangedError(f"{target} is gone: {error.strerror}") from error
    if current == data:
        return False
    if current != original.raw:
        raise FileChangedError(f"{target} changed on disk since it was read; not overwritten")
    return True


def _write_in_place(original: SourceFile, data: bytes) -> None:
    """Overwrite the file's content, keeping the file itself (owner, group, mode, links)."""
    if not _unchanged_on_disk(original, data):
        return
    try:
        with open(original.path, "r+b") as handle:
            handle.write(data)
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as error:
        raise NotWrittenError(f"cannot write: {error.strerror or error}") from error


class LineIndex:
    """Converts between (1-based line, 0-based code point column) and offsets.

    Lines end at \\r\\n, \\r or \\n, as Python's tokenizer (and so `ast` and
    LibCST) counts them; form feeds and other characters that
    str.splitlines() treats as breaks are not line ends.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._utf8_lines: dict[int, bytes | int] = {}  # by line: its UTF-8 bytes, or the length of an ASCII line

    @functools.cached_property
    def starts(self) -> list[int]:
        """Where each line starts; computed on first use (nearly half the files parsed never need it)."""
        text = self.text
        if "\r" in text:
            return [0] + [match.end() for match in _NEWLINE.finditer(text)]
        # The common case, and faster: each line starts after the previous line and its "\n".
        starts = [0, *accumulate(map((1).__add__, map(len, text.split("\n"))))]
        starts.pop()  # the "start" after the last line
        return starts

    @property
    def line_count(self) -> int:
        """Lines with content; a final line ending does not start another line."""
        return len(self.starts) - (1 if self.starts[-1] == len(self.text) and len(self.starts) > 1 else 0)

    def offset(self, line: int, column: int) -> int:
        return self.starts[line - 1] + column

    def line_text(self, line: int) -> str:
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def column_from_utf8(self, line: int, byte_column: int) -> int:
        """`ast` reports columns in UTF-8 bytes; the rest of h2dlint in code points."""
        if line not in self._utf8_lines:
            # Kept per line: a long line holding many calls would otherwise be encoded again for each.
            text = self.line_text(line)
            self._utf8_lines[line] = len(text) if text.isascii() else text.encode("utf-8")
        encoded = self._utf8_lines[line]
        if isinstance(encoded, int):  # one byte per code point
            return min(byte_column, encoded)
        return len(encoded[:byte_column].decode("utf-8", errors="ignore"))

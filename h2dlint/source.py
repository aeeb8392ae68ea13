"""Reading and writing Python source files without losing a byte.

A file is read as bytes, decoded with the encoding Python itself would use
(BOM, PEP 263 cookie, else UTF-8) and written back with the same encoding,
BOM and line endings. Writes are atomic and refuse to clobber a file that
changed on disk since it was read.
"""

from __future__ import annotations

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


class FileChangedError(Exception):
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


def write_source_atomically(original: SourceFile, new_text: str) -> None:
    """Replace `original.path` with `new_text`, or raise FileChangedError.

    The new content goes to a temporary file in the same folder, which then
    replaces the target in one rename; the target's permission bits are kept.
    Just before the rename the target is read again: if it no longer holds the
    bytes that were linted, nothing is written.
    """
    data = original.encode(new_text)
    target = original.path
    if target.is_symlink():
        raise FileChangedError(f"{target} is a symbolic link; not rewritten (fix the file it points to)")
    try:
        mode = target.stat().st_mode & 0o7777
    except OSError as error:
        raise FileChangedError(f"{target} is gone: {error.strerror}") from error
    handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".h2dlint", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as temp:
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())
        os.chmod(temp_name, mode)
        try:
            current = target.read_bytes()
        except OSError as error:
            raise FileChangedError(f"{target} is gone: {error.strerror}") from error
        if current != data:  # equal: another run wrote the same fix meanwhile
            if current != original.raw:
                raise FileChangedError(f"{target} changed on disk since it was read; not overwritten")
            os.replace(temp_name, target)
    finally:
        if os.path.exists(temp_name):
            os.unlink(temp_name)


class LineIndex:
    """Converts between (1-based line, 0-based code point column) and offsets.

    Lines end at \\r\\n, \\r or \\n, as Python's tokenizer (and so `ast` and
    LibCST) counts them; form feeds and other characters that
    str.splitlines() treats as breaks are not line ends.
    """

    def __init__(self, text: str) -> None:
        self.text = text

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
        prefix = self.line_text(line).encode("utf-8")[:byte_column]
        return len(prefix.decode("utf-8", errors="ignore"))

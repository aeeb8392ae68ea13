"""The results h2dlint produces: findings, fixes and the edits they are made of."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Applicability(enum.Enum):
    SAFE = "safe"  # keeps behaviour: applied by --fix
    UNSAFE = "unsafe"  # may change behaviour: applied only with --unsafe-fixes


@dataclass(frozen=True, order=True)
class Position:
    line: int  # 1-based
    column: int  # 0-based, in code points


@dataclass(frozen=True, order=True)
class Edit:
    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    edits: tuple[Edit, ...]
    applicability: Applicability
    message: str


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    start: Position
    end: Position
    code: str
    message: str
    fix: Fix | None = None
    cell: int | None = None  # in a notebook: the cell's 1-based number; lines and columns count within it

    @property
    def sort_key(self) -> tuple[str, int, Position, str]:
        return (self.path, self.cell or 0, self.start, self.code)


# Codes for problems with the input itself rather than with the code in it.
SYNTAX_ERROR = "HDL001"
UNREADABLE = "HDL002"  # cannot be read, decoded, or analysed by h2dlint

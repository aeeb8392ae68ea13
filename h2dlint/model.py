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
    # How h2dlint knows what the finding claims, as (key, value) pairs (see EVIDENCE_KEYS); empty for most rules.
    evidence: tuple[tuple[str, str], ...] = ()

    @property
    def sort_key(self) -> tuple[str, int, Position, str]:
        return (self.path, self.cell or 0, self.start, self.code)


# What a finding says of its tensor and its code: "hot" why the code runs every step (any finding), and for a sync
# "placement", how the tensor is known to be on the GPU ("proven" in this file, "inferred" through the project
# model, or "assumed": it may be), "placement_source" the definition the model inferred it from.
EVIDENCE_KEYS = ("placement", "placement_source", "hot")
PLACEMENT_LEVELS = ("proven", "inferred", "assumed")

# Codes for problems with the input itself rather than with the code in it.
SYNTAX_ERROR = "HDL001"
UNREADABLE = "HDL002"  # cannot be read, decoded, or analysed by h2dlint

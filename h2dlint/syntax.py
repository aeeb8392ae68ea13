"""Names in the `ast`: the small helpers every analysis module reads code with."""

from __future__ import annotations

import ast
import re


def name_words(name: str) -> list[str]:
    """The lower-case words of a (dotted) name: `self.log_stats` -> ["self", "log", "stats"]."""
    return [word for word in re.split(r"[._]", name.lower()) if word]


def dotted_name(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def terminal_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None

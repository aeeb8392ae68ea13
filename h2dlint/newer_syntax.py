"""Files written for a newer Python than the one h2dlint runs on.

h2dlint's analysis reads Python's own `ast`, which only knows the syntax of the running interpreter: on
Python 3.11, `def f[T](x: T)`, `type X = int` and the f-strings of PEP 701 (`f"{d["key"]}"`) are syntax
errors. LibCST's parser knows them. Where it reads a file that `ast` cannot, the file is analysed through a
stand-in text of the same length, lines and columns, in which each newer construct is replaced by older
syntax that means nothing to the rules: type parameter lists by blanks (and a backslash before each line
break inside one), `type X = ...` by `X = ...`, and an
f-string only the newer Python reads by a blank string of the same shape (calls inside such an f-string
are not checked). Findings and fixes are positions in the real text, where LibCST parses the code they
touch. When no stand-in parses, the syntax error says which Python the file needs and which one runs.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from .source import LineIndex

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange
else:
    from .deferred import libcst as cst

# The constructs replaced in a stand-in text, with the Python that introduced them.
TYPE_PARAMETERS = "type parameter lists"
TYPE_ALIAS = "type alias statements"
NEW_FSTRINGS = "f-strings with nested quotes, backslashes or comments"
INTRODUCED = {TYPE_PARAMETERS: (3, 12), TYPE_ALIAS: (3, 12), NEW_FSTRINGS: (3, 12)}


def parse_python(text: str) -> ast.Module:
    """`ast.parse(text)`; for syntax newer than this Python, the tree of a stand-in text (see the module's
    docs). Raises SyntaxError (its message naming the Python needed, where it is the reason) or what
    `ast.parse` raises."""
    try:
        return ast.parse(text)
    except SyntaxError as error:
        if sys.version_info >= (3, 12):
            raise
        original = error
    stand_in, features = _stand_in(text)
    if stand_in is not None:
        try:
            return ast.parse(stand_in)
        except SyntaxError:
            pass
    if features:
        needed = max(INTRODUCED[feature] for feature in features)
        raise SyntaxError(f"uses syntax of Python {needed[0]}.{needed[1]} ({', '.join(sorted(features))}); "
                          f"h2dlint runs on Python {sys.version_info.major}.{sys.version_info.minor}",
                          (None, original.lineno, original.offset, None)) from original
    raise original


def _stand_in(text: str) -> tuple[str | None, set[str]]:
    """The stand-in text (None where LibCST cannot read `text` either, or it has nothing to replace), and the
    newer constructs found."""
    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return None, set()
    finder = _newer_constructs()(module)
    cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True).visit(finder)
    if not finder.replacements:
        return None, finder.features
    index = LineIndex(text)
    pieces, cursor = [], 0
    for where, replace in sorted(finder.replacements, key=lambda item: (item[0].start.line, item[0].start.column)):
        start = index.offset(where.start.line, where.start.column)
        end = index.offset(where.end.line, where.end.column)
        if start < cursor:
            continue  # inside a construct replaced already
        pieces += [text[cursor:start], replace(text[start:end])]
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), finder.features


@functools.cache
def _newer_constructs() -> type:
    """The visitor that finds the newer constructs (a class made at first use: defining it imports LibCST)."""

    class NewerConstructs(cst.CSTVisitor):
        METADATA_DEPENDENCIES = (cst.metadata.PositionProvider,)

        def __init__(self, module: cst.Module) -> None:
            super().__init__()
            self.module = module
            self.features: set[str] = set()
            self.replacements: list[tuple[CodeRange, Callable[[str], str]]] = []

        def _replace(self, node: cst.CSTNode, feature: str, replace: Callable[[str], str]) -> None:
            self.features.add(feature)
            self.replacements.append((self.get_metadata(cst.metadata.PositionProvider, node), replace))

        def visit_TypeParameters(self, node: cst.TypeParameters) -> bool:
            self._replace(node, TYPE_PARAMETERS, _blank_continued)
            return False

        def visit_TypeAlias(self, node: cst.TypeAlias) -> bool:
            name = node.name.value
            self._replace(node, TYPE_ALIAS, lambda code: _as_assignment(code, name))
            return False

        def visit_FormattedString(self, node: cst.FormattedString) -> bool:
            try:
                ast.parse(f"({self.module.code_for_node(node)})", mode="eval")
            except SyntaxError:
                self._replace(node, NEW_FSTRINGS, _blank_string)
            return False

    return NewerConstructs


def _blank(code: str) -> str:
    return "".join(character if character in "\r\n" else " " for character in code)


def _blank_continued(code: str) -> str:
    """Blanks, with a backslash before each line break: a `[...]` over several lines leaves a header that
    continues on the next line (`def f \\` ... `(x: T):`). Unchanged where a line inside is empty."""
    blank = list(_blank(code))
    for index, character in enumerate(code):
        if character in "\r\n" and not (character == "\n" and code[index - 1:index] == "\r"):
            if index == 0 or code[index - 1] in "\r\n":
                return code  # no place for the backslash: the stand-in does not parse
            blank[index - 1] = "\\"
    return "".join(blank)


def _as_assignment(code: str, name: str) -> str:
    """`type X[T] = v` as `X      = v`: the value keeps its place."""
    head, equals, value = code.partition("=")
    if "\n" in head or "\r" in head:
        return code  # a type alias whose name spans lines: left as it is, and the stand-in does not parse
    return name.ljust(len(head)) + equals + value


def _blank_string(code: str) -> str:
    """A plain string literal of `code`'s length and lines, holding only blanks."""
    inner = _blank(code[3:-3])
    if "\n" in inner or "\r" in inner:
        return '"""' + inner + '"""'
    return '"' + " " * (len(code) - 2) + '"'

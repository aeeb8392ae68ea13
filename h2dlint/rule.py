"""The rule interface, and discovery of the rule catalogue.

A rule is a LibCST visitor class in `h2dlint.rules` (the repository's `rules/`
folder) with a code, docs in its docstring, and examples that double as tests.
Defining the class registers it; no list of rules is kept by hand.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, cast

from .facts import OPEN_GATE, FileFacts, FileGate, Site
from .gaps import TokensApart, spans_across_gaps
from .hotness import context_at
from .model import Edit, Finding, Fix, Position
from .settings import Settings
from .source import LineIndex, SourceFile

if TYPE_CHECKING:
    import libcst as cst
    import libcst.metadata  # `cst.metadata`

    # To type checkers a rule is the LibCST visitor it runs as (see `Rule.visitor`).
    _VisitorBase = cst.CSTVisitor
else:
    from .deferred import libcst as cst

    _VisitorBase = object

_CODE = re.compile(r"[A-Z]+[0-9]+")


@dataclass(frozen=True)
class Valid:
    """Code the rule must not report."""

    code: str


@dataclass(frozen=True)
class Invalid:
    """Code the rule must report once, and what the fix (if any) must produce."""

    code: str
    expected_fix: str | None = None  # None: no fix offered
    message_contains: str = ""
    unsafe: bool = False


class RuleContext:
    """What a rule sees besides the nodes: the file's facts and a place to report."""

    def __init__(self, source: SourceFile, line_index: LineIndex, facts: FileFacts, settings: Settings,
                 module: cst.Module, origin: Position) -> None:
        self.source = source
        self.path = str(source.path)
        self.line_index = line_index
        self.facts = facts
        self.settings = settings
        self.module = module  # the parsed code being visited: the whole file, or one call in it
        self.origin = origin  # where `module` starts in the file
        self.findings: list[Finding] = []
        self._module_code: str | None = None
        self._module_index: LineIndex | None = None

    def file_position(self, line: int, column: int) -> Position:
        if line == 1:
            return Position(self.origin.line, self.origin.column + column)
        return Position(self.origin.line + line - 1, column)

    def replace_node(self, node: cst.CSTNode, replacement: cst.CSTNode, rule: Rule) -> Edit | None:
        """An edit replacing `node` (without its parentheses) by `replacement`.

        The replacement is rendered in place, inside the visited module, so it
        gets the indentation and line endings of its surroundings. None when the
        file's text at the node's position is not exactly the node's code: then
        the edit could damage the file, and no fix is offered.
        """
        start, end = rule.position(node)
        if self._module_code is None:
            self._module_code = self.module.code
            self._module_index = LineIndex(self._module_code)
        old_code, old_index = self._module_code, self._module_index
        assert old_index is not None
        relative_start = self._relative(start)
        relative_end = self._relative(end)
        prefix = old_code[:old_index.offset(*relative_start)]
        suffix = old_code[old_index.offset(*relative_end):]
        original = old_code[len(prefix):len(old_code) - len(suffix)]
        file_text = self.line_index.text
        if file_text[self.line_index.offset(start.line, start.column):
                     self.line_index.offset(end.line, end.column)] != original:
            return None
        if not self.settings.full_parse and hasattr(node, "lpar"):
            # A snippet is module-level code, with no enclosing block whose indentation the rendering could
            # need: the replacement (without parentheses, which stay outside the edit) renders alone as it
            # would in place, without copying the tree.
            return Edit(start, end, self.module.code_for_node(replacement.with_changes(lpar=(), rpar=())))
        replacement = replacement.with_changes(lpar=getattr(node, "lpar", ()), rpar=getattr(node, "rpar", ()))
        new_code = cast(cst.Module, self.module.deep_replace(node, replacement)).code
        if not (new_code.startswith(prefix) and new_code.endswith(suffix)):
            return None
        return Edit(start, end, new_code[len(prefix):len(new_code) - len(suffix)])

    def _relative(self, position: Position) -> tuple[int, int]:
        if position.line == self.origin.line:
            return 1, position.column - self.origin.column
        return position.line - self.origin.line + 1, position.column

    def insert_line_before(self, line: int, content: str) -> Edit:
        at = Position(line, 0)
        return Edit(at, at, content + self.source.newline)


class Rule(_VisitorBase):
    """Base class of every rule. Subclasses define the ClassVars below and LibCST's visit_* / leave_* methods.

    A rule class is not itself a LibCST visitor: defining one must not import LibCST, which a run whose findings
    all come from the cache never uses. The engine visits with `Rule.visitor()`, the rule joined to
    `libcst.CSTVisitor`, made at the first file the rule visits."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    # Names of called functions or methods (the part after the last dot) at which
    # the rule looks, for the default `candidates`.
    call_names: ClassVar[frozenset[str]] = frozenset()
    # What a file's text must contain for the rule to be able to fire at all: a regex, tokens that may stand apart,
    # or a tuple of substrings (or tokens apart) of which one must occur (much faster to test than a regex
    # alternation).
    prefilter: ClassVar[re.Pattern[str] | TokensApart | tuple[str | TokensApart, ...]]
    # True when `candidates` on a parsed file already rules out, and at less cost, every file the text test
    # would: the candidates are calls of known names, filtered first on what the test looks for. The text test
    # then only spares parsing, and a file that another rule's test sends to the parser skips it.
    text_test_spares_only_parsing: ClassVar[bool] = False
    default_enabled: ClassVar[bool] = True
    # The project-model facts the rule asks for (see h2dlint.project): "hotness" (which functions run every step,
    # through calls from other files) and "placement" (tensors placed on the GPU by another file's class). A file
    # where the model knows such facts is checked by the rule whenever its word test passes, since the file's own
    # text cannot show them.
    MODEL_DEPENDENCIES: ClassVar[frozenset[str]] = frozenset()
    valid_examples: ClassVar[tuple[Valid, ...]] = ()
    invalid_examples: ClassVar[tuple[Invalid, ...]] = ()

    registry: ClassVar[dict[str, type[Rule]]] = {}
    _visitors: ClassVar[dict[type[Rule], type[Rule]]] = {}  # by rule: the rule joined to LibCST's visitor

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "visits_for" in cls.__dict__:
            return  # a rule's visitor (see `visitor`), not another rule
        if not _CODE.fullmatch(cls.code):
            raise TypeError(f"{cls.__name__}: rule code {cls.code!r} must be letters then digits")
        if cls.code in Rule.registry:
            raise TypeError(f"{cls.__name__}: code {cls.code} is already used by {Rule.registry[cls.code].__name__}")
        Rule.registry[cls.code] = cls

    @classmethod
    def may_apply(cls, text: str, settings: Settings, gate: FileGate = OPEN_GATE) -> bool:
        """A cheap test on the file's text, and on what the project model's summary says of it before parsing
        (`gate`): False only where the rule certainly cannot fire. A word test, never a conclusion: the rule's
        analysis runs on the parsed tree."""
        return cls.prefilter_matches(text)

    @classmethod
    def prefilter_matches(cls, text: str) -> bool:
        if isinstance(cls.prefilter, tuple):
            return holds_one_of(text, cls.prefilter)
        return bool(cls.prefilter.search(text))  # a regex's match, or TokensApart's answer

    @classmethod
    def candidates(cls, facts: FileFacts) -> Iterable[ast.expr]:
        """The expressions this rule may report on. Only these are parsed with LibCST
        (except with --full-parse), so a rule must never report outside them."""
        return facts.calls_named(cls.call_names)

    @classmethod
    def visitor(cls) -> type[Rule]:
        """The rule as a LibCST visitor class: a subclass of the rule and of `libcst.CSTVisitor`, asking for the
        positions of nodes. Made once per rule, importing LibCST."""
        made = Rule._visitors.get(cls)
        if made is None:
            namespace = {"visits_for": cls, "METADATA_DEPENDENCIES": (cst.metadata.PositionProvider,),
                         "__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__}
            made = Rule._visitors[cls] = cast(type[Rule], type(cls.__name__, (cls, cst.CSTVisitor), namespace))
        return made

    def __init__(self, context: RuleContext) -> None:
        super().__init__()
        self.context = context

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        # Annotations hold types, never tensor code: the index leaves them out, so no candidate is in one, and a
        # whole-file visit (--full-parse) must not look inside them either.
        return False

    @classmethod
    def docs(cls) -> str:
        return (cls.__doc__ or "").strip()

    def position(self, node: cst.CSTNode) -> tuple[Position, Position]:
        code_range = self.get_metadata(cst.metadata.PositionProvider, node)
        to_file = self.context.file_position
        return (to_file(code_range.start.line, code_range.start.column),
                to_file(code_range.end.line, code_range.end.column))

    def own_site(self, node: cst.CSTNode) -> tuple[Site, Position] | None:
        """The candidate this rule named at exactly `node`, and where it starts; None for other nodes."""
        start, end = self.position(node)
        site = self.context.facts.site_at(start, end)
        return (site, start) if site is not None and self.code in site.rules else None

    def report(self, node: cst.CSTNode, message: str, fix: Fix | None = None,
               evidence: tuple[tuple[str, str], ...] = ()) -> None:
        start, end = self.position(node)
        # Every finding says why its code runs often, when something shows it (the sync rules add how they know
        # the tensor is on the GPU): what a rule's precision is measured by (scripts/precision_by_evidence.py).
        context = context_at(self.context.facts, start.line)
        if context.describe():
            evidence = (*evidence, ("hot", context.hot_chain or context.describe()))
        self.context.findings.append(Finding(path=self.context.path, start=start, end=end, code=self.code,
                                             message=message, fix=fix, evidence=evidence))


def holds_one_of(text: str, parts: tuple[str | TokensApart, ...]) -> bool:
    """What a tuple prefilter answers: whether `text` holds one of `parts`, however written (see _TextTest)."""
    return _TextTest.of(parts).matches(text)


class _TextTest:
    """Whether a text holds one of a prefilter's parts, or a part such as `.item(` or `value=` written apart
    (`.item ()`, `x. item()`, `value = v`, `(x.item)()`, a line continuation or, inside brackets, comment lines
    before the `(`), or a name imported under another name (`from torch import nonzero as nz`, then `nz(x)`). A
    part may also be TokensApart (`]` then `*`).

    A search for an absent part reads the whole text, and most parts are absent from most files. Every way of
    writing the parts around a name (`.cpu(`, `cpu(`) needs the name itself: one read of a text without the name
    answers for all of them, and the search for a part that is there stops where it is found."""

    _made: ClassVar[dict[tuple[str | TokensApart, ...], _TextTest]] = {}

    def __init__(self, parts: tuple[str | TokensApart, ...]) -> None:
        self.parts: list[tuple[str, str | None]] = []  # each part, with its name if it has one (in the given order)
        self.tokens_apart = [part for part in parts if isinstance(part, TokensApart)]
        # Each name's spellings apart: by blanks, line continuations or a `)` before its `(` / `=` / ` as`, and a
        # comment right after it (inside brackets, comment lines may stand before the `(`).
        self.apart: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {}
        for part in parts:
            if isinstance(part, TokensApart):
                continue
            name = part.strip(".(=")
            if not name.isidentifier() or name == part:
                self.parts.append((part, None))
                continue
            self.parts.append((part, name))
            # Starting with the name itself: a literal start makes the search fast.
            self.apart[name] = (re.compile(re.escape(name) + r"(?:[\s\\)]*[(=]|[\s\\)]+as\b)"),
                                re.compile(re.escape(name) + r"[\s\\)]*(?=#)"))

    @classmethod
    def of(cls, parts: tuple[str | TokensApart, ...]) -> _TextTest:
        test = cls._made.get(parts)
        if test is None:
            test = cls._made[parts] = cls(parts)
        return test

    def matches(self, text: str) -> bool:
        absent: set[str] = set()
        for part, name in self.parts:
            if name is not None:
                if name in absent:
                    continue
                if name not in text:
                    absent.add(name)
                    continue
            if part in text:
                return True
        if any(tokens.search(text) for tokens in self.tokens_apart):
            return True
        return any(name not in absent and (by_blanks.search(text) is not None or "#" in text and next(
            spans_across_gaps(text, before_comment, _AFTER_COMMENTS, blank=_CALLEE_GAP), None) is not None)
            for name, (by_blanks, before_comment) in self.apart.items())


_AFTER_COMMENTS = r"[(=]|as\b"  # what makes a name before comment lines a call, a keyword or an import
_CALLEE_GAP = r"[\s\\)]"  # what may stand between a called name and its `(`: `(torch.nonzero)(x)`


def all_rules() -> dict[str, type[Rule]]:
    """Every rule in the catalogue, by code, importing the catalogue on first use."""
    from . import rules as catalogue  # type: ignore[attr-defined]  # the package-dir `rules`

    for module in pkgutil.iter_modules(catalogue.__path__):
        importlib.import_module(f"{catalogue.__name__}.{module.name}")
    return dict(sorted(Rule.registry.items()))


def rule_help(rule_class: type[Rule]) -> str:
    """A rule's full docs as Markdown, under a title with its name and code (what `h2dlint rule CODE` prints)."""
    first, _, rest = rule_class.docs().partition("\n")
    docs = textwrap.dedent(first + "\n" + textwrap.dedent(rest)).strip()
    return f"# {rule_class.name} ({rule_class.code})\n\n{docs}"

"""Rewriting a module so that each site h2dlint would fix runs both ways on the same values.

A fixable call such as `torch.tensor(data, device=dev)` becomes

    __h2dlint_probe__(7, lambda _h2dlint_0, _h2dlint_1: torch.tensor(_h2dlint_0, device=_h2dlint_1),
                      lambda _h2dlint_0, _h2dlint_1: torch.tensor(_h2dlint_0, pin_memory=...).to(_h2dlint_1, ...),
                      lambda ...: <the fixed form with its pin guards forced true>,
                      data, dev)

so the arguments are evaluated once, where and in the order the program evaluated
them, and the probe (runtime.py) calls the original form, the fixed form, compares
them and hands the original's result back to the program. Without CUDA the third
form, the fixed one with its pin guards forced true, stands in for the fixed one and runs
under pinning.py's PinnedBranch. The fixed form is the real linter's fix (all rules,
unsafe fixes allowed). The rewrite keeps every line where it was, so tracebacks and line
numbers in the program do not change.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from ..engine import Linter, apply_edits
from ..model import Edit, Finding, Position
from ..rule import all_rules
from ..settings import Settings
from ..source import LineIndex, SourceFile
from .pinning import force_pinning

PROBE_NAME = "__h2dlint_probe__"
_PLACEHOLDER = "_h2dlint_{}"
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Site:
    id: int
    filename: str
    row: int  # 1-based
    column: int  # 1-based, as in `h2dlint check --output-format json`
    code: str
    message: str


@dataclass
class Instrumented:
    text: str  # the module's new source; the original text when nothing could be instrumented
    sites: list[Site] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "file:row: CODE: why" for fixes that could not be wrapped


def fixing_linter() -> Linter:
    """The linter as `h2dlint check --select ALL --fix --unsafe-fixes` runs it, copies outside code known to be hot
    included (`copies-outside-hot-code`): the run shows how often each site really runs."""
    rules = all_rules()
    settings = Settings(select=("ALL",), unsafe_fixes=True, copies_outside_hot_code=True)
    return Linter([rules[code] for code in settings.enabled_codes(rules)], settings)


def instrument(source: SourceFile, next_id: Callable[[], int], linter: Linter | None = None) -> Instrumented:
    linter = linter or fixing_linter()
    text = source.text
    index = LineIndex(text)
    result = Instrumented(text)
    edits: list[Edit] = []
    covered_until = Position(0, 0)
    for finding in linter.lint(source):
        if finding.fix is None:
            continue
        where = f"{source.path}:{finding.start.line}: {finding.code}"
        site_id = next_id()  # an id lost to a site that cannot be wrapped leaves a harmless gap
        try:
            site_edits = _site_edits(finding, text, index, source.newline, site_id)
        except _CannotWrap as why:
            result.skipped.append(f"{where}: {why}")
            continue
        wrapper = site_edits[-1]
        if wrapper.start < covered_until:
            result.skipped.append(f"{where}: inside another instrumented site")
            continue
        covered_until = wrapper.end
        result.sites.append(Site(site_id, str(source.path), finding.start.line, finding.start.column + 1,
                                 finding.code, finding.message))
        edits.extend(site_edits)
    if not edits:
        return result
    new_text = apply_edits(text, edits)
    try:
        compile(new_text, str(source.path), "exec", dont_inherit=True)
    except SyntaxError as error:
        return Instrumented(text, [], result.skipped + [f"{source.path}: the instrumented module does not compile "
                                                        f"({error}); left as it was"])
    result.text = new_text
    return result


class _CannotWrap(Exception):
    pass


def _site_edits(finding: Finding, text: str, index: LineIndex, newline: str, site_id: int) -> list[Edit]:
    """The edits that instrument one finding's site: added imports, then the wrapper (always last)."""
    imports, replacements = [], []
    for edit in finding.fix.edits:
        lines = _LINE_END.findall(edit.content)
        if edit.start == edit.end and edit.start.column == 0 and len(lines) == 1 and \
                edit.content.endswith(lines[0]):
            # An added line (`import torch`): put it at the start of that line, so no line moves.
            line = index.line_text(edit.start.line)
            at = Position(edit.start.line, len(line) - len(line.lstrip()))
            imports.append(Edit(at, at, edit.content[:-len(lines[0])].strip() + "; "))
        else:
            replacements.append(edit)
    if len(replacements) != 1:
        raise _CannotWrap("the fix is not a single expression replacement")
    edit = replacements[0]
    original_text = text[index.offset(edit.start.line, edit.start.column):index.offset(edit.end.line, edit.end.column)]
    try:
        original = cst.parse_expression(original_text)
        fixed = cst.parse_expression(edit.content)
    except cst.ParserSyntaxError:
        wrapper = _element_write_wrapper(original_text, edit.content, site_id)
        if wrapper is None:
            raise _CannotWrap("the replaced code is not an expression") from None
    else:
        values = _evaluated_once(original)
        forms = [original, fixed, force_pinning(fixed)]  # the third: the branch a CUDA machine takes
        params = ", ".join(_PLACEHOLDER.format(number) for number in range(len(values)))
        lambdas = [f"lambda {params}: {_one_line(form.visit(_Placeholders(values)))}" for form in forms]
        value_code = [cst.Module(body=[]).code_for_node(value) for value in values]
        wrapper = f"{PROBE_NAME}({site_id}, {', '.join(lambdas + value_code)}"
    missing_lines = len(_LINE_END.findall(original_text)) - len(_LINE_END.findall(wrapper))
    if missing_lines < 0:
        raise _CannotWrap("the wrapper would move lines")
    return [*imports, Edit(edit.start, edit.end, wrapper + newline * missing_lines + ")")]


def _element_write_wrapper(original_text: str, fixed_text: str, site_id: int) -> str | None:
    """The probe for a statement fix `t[i] = v` -> `t[i].fill_(v)` (HDL106), without its closing parenthesis.

    Both forms write the element and return a copy of it after the write, so the probe compares what
    each one wrote; `t` (evaluated once) and `v` are shared. Writing the same element again is harmless.
    None for any other statement fix.
    """
    try:
        statement = cst.parse_statement(original_text)
        fixed = cst.parse_expression(fixed_text)
    except cst.ParserSyntaxError:
        return None
    assign = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 \
        else None
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Subscript)):
        return None
    target = assign.targets[0].target
    if not (isinstance(fixed, cst.Call) and isinstance(fixed.func, cst.Attribute) and fixed.func.attr.value == "fill_"
            and fixed.func.value.deep_equals(target) and len(fixed.args) == 1
            and fixed.args[0].value.deep_equals(assign.value)
            and all(isinstance(element.slice, cst.Index) for element in target.slice)):
        return None
    indices = [_one_line(element.slice.value) for element in target.slice]
    index = indices[0] if len(indices) == 1 else f"({', '.join(indices)})"
    tensor, value = _PLACEHOLDER.format(0), _PLACEHOLDER.format(1)
    written = f"{tensor}[{index}].clone()"
    forms = [f"lambda {tensor}, {value}: ({tensor}.__setitem__({index}, {value}), {written})[1]",
             f"lambda {tensor}, {value}: ({tensor}[{index}].fill_({value}), {written})[1]"]
    return f"{PROBE_NAME}({site_id}, {forms[0]}, {forms[1]}, {forms[1]}, {_one_line(target.value)}, " \
           f"{_one_line(assign.value)}"


def _evaluated_once(expression: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The subexpressions the program evaluates once and both forms then share."""
    if not isinstance(expression, cst.Call):
        raise _CannotWrap("the fixed code is not a call")
    if any(arg.star for arg in expression.args):
        raise _CannotWrap("the call unpacks arguments")
    values = [arg.value for arg in expression.args if not _is_literal(arg.value)]
    receiver = expression.func.value if isinstance(expression.func, cst.Attribute) else None
    if receiver is not None and not _is_dotted_name(receiver):
        values.insert(0, receiver)  # `make().cuda()`: make() must run once
    return values


def _is_literal(node: cst.BaseExpression) -> bool:
    """Constants gain nothing from being evaluated once; they stay in place in both forms."""
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    return isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString))


def _is_dotted_name(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


class _Placeholders(cst.CSTTransformer):
    """Replaces each evaluated-once subexpression by the lambda parameter that holds its value."""

    def __init__(self, values: list[cst.BaseExpression]) -> None:
        super().__init__()
        self.values = values

    def on_leave(self, original_node, updated_node):
        # Keyword names and attribute names are not expressions the program evaluates.
        if isinstance(updated_node, cst.Arg):
            return updated_node.with_changes(keyword=original_node.keyword)
        if isinstance(updated_node, cst.Attribute):
            updated_node = updated_node.with_changes(attr=original_node.attr)
        if isinstance(original_node, cst.BaseExpression):
            for number, value in enumerate(self.values):
                if original_node.deep_equals(value):
                    return cst.Name(_PLACEHOLDER.format(number))
        return updated_node


class _OneLineWhitespace(cst.CSTTransformer):
    def leave_ParenthesizedWhitespace(self, original_node, updated_node):
        return cst.SimpleWhitespace(" ")  # drops line breaks and comments inside brackets

    def leave_SimpleWhitespace(self, original_node, updated_node):
        return cst.SimpleWhitespace(" ") if "\\" in updated_node.value else updated_node


def _one_line(node: cst.BaseExpression) -> str:
    code = cst.Module(body=[]).code_for_node(node.visit(_OneLineWhitespace()))
    if _LINE_END.search(code):
        raise _CannotWrap("a form spans several lines (a multi-line string)")
    return code

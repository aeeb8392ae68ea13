"""Settings, resolved once per run and shared by every file."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .model import SYNTAX_ERROR, UNREADABLE

if TYPE_CHECKING:
    from .rule import Rule

DEFAULT_PIN_MEMORY_HELPERS = ("is_pin_memory_available",)
# Codes of findings about the input itself (cannot be parsed, read or decoded), which no rule reports.
INPUT_PROBLEM_CODES = (SYNTAX_ERROR, UNREADABLE)


class SettingsError(Exception):
    """A bad option or configuration value; the message names it."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ()  # code prefixes or "ALL"; empty: the default-on rules
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    # (glob, code prefixes): findings in matching files with those codes are not reported
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    unsafe_fixes: bool = False
    pin_memory_helpers: tuple[str, ...] = DEFAULT_PIN_MEMORY_HELPERS
    hot_functions: tuple[str, ...] = ()  # functions rules treat as hot paths, besides the ones they know
    gpu_device_names: tuple[str, ...] = ()  # device expressions (`device`, `self.device`) that are CUDA devices
    exclude: tuple[str, ...] = ()
    force_exclude: bool = False  # apply `exclude` to files named explicitly too
    respect_gitignore: bool = True
    output_format: str = "full"
    config_file: str | None = None  # the configuration file these settings came from, if any
    project_root: str = "."  # the folder relative globs (exclude, per-file-ignores) are anchored at
    full_parse: bool = False  # parse whole files with LibCST instead of candidate calls only
    # The project model (h2dlint.project): whether to build one, over which folder ("": the closest folder above
    # the checked paths holding a pyproject.toml or .git), which folders module names start at (`src` layouts),
    # attributes (`name` or `Class.name`) declared to hold CUDA tensors, and whether the tensor inputs of an
    # `nn.Module`'s `forward` that no call of the project passes are taken to be on the GPU.
    project_model: bool = True
    model_root: str = ""
    source_roots: tuple[str, ...] = ()
    gpu_attributes: tuple[str, ...] = ()
    module_inputs_on_gpu: bool = False
    # Whether the copy rules (HDL101-HDL103, HDL105) report copies where nothing shows that the code runs every step (no
    # loop, hot function or CUDA graph capture around them); off: only copies in such code (see copies.py).
    copies_outside_hot_code: bool = False

    def cache_key(self) -> str:
        """The settings a file's findings depend on, as text: a change to any of them invalidates cached findings.
        How findings are printed, which files are walked and whether unsafe fixes are applied change no file's
        findings: switching them (`--output-format github` in CI, `--unsafe-fixes` once) keeps the cache."""
        return repr(dataclasses.replace(self, output_format="full", exclude=(), force_exclude=False,
                                        respect_gitignore=True, unsafe_fixes=False))

    def enabled_codes(self, rules: Mapping[str, type[Rule]]) -> tuple[str, ...]:
        """The codes of `rules` (a dict code -> rule class) this run checks.

        A prefix (`HDL1`) selects the rules under it that are on by default; an opt-in rule is selected only
        by its exact code or by `ALL`, so that selecting a family never turns on the rules meant to be asked for.
        """
        check_selectors((*self.select, *self.extend_select, *self.ignore), rules)
        if self.select:
            chosen = {code for code, rule in rules.items() if _selects(code, rule, self.select)}
        else:
            chosen = {code for code, rule in rules.items() if rule.default_enabled}
        chosen |= {code for code, rule in rules.items() if _selects(code, rule, self.extend_select)}
        chosen -= {code for code in rules if _matches(code, self.ignore)}
        return tuple(sorted(chosen))

    def reports_input_problem(self, code: str) -> bool:
        """Whether findings about the input itself (HDL001, HDL002) with `code` are reported: always, unless
        `ignore` names them (a file h2dlint could not check is not silently passed over by a `select`)."""
        return not _matches(code, self.ignore)


def check_selectors(selectors: Iterable[str], rules: Mapping[str, type[Rule]], where: str = "") -> None:
    """SettingsError for a selector that matches no code, of a rule or of an input problem."""
    for selector in selectors:
        if selector != "ALL" and not any(code.startswith(selector) for code in (*rules, *INPUT_PROBLEM_CODES)):
            raise SettingsError(f"{where}{': ' if where else ''}unknown rule selector {selector!r}: no rule code "
                                f"starts with it (codes: {', '.join(sorted((*rules, *INPUT_PROBLEM_CODES)))})")


def _selects(code: str, rule: type[Rule], selectors: tuple[str, ...]) -> bool:
    return any(selector in ("ALL", code) or (rule.default_enabled and code.startswith(selector))
               for selector in selectors)


def _matches(code: str, selectors: tuple[str, ...]) -> bool:
    return any(selector == "ALL" or code.startswith(selector) for selector in selectors)

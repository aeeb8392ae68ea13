"""Settings, resolved once per run and shared by every file."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

DEFAULT_PIN_MEMORY_HELPERS = ("is_pin_memory_available",)


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
    # and attributes (`name` or `Class.name`) declared to hold CUDA tensors.
    project_model: bool = True
    model_root: str = ""
    source_roots: tuple[str, ...] = ()
    gpu_attributes: tuple[str, ...] = ()

    def cache_key(self) -> str:
        """The settings a file's findings depend on, as text: a change to any of them invalidates cached findings.
        How findings are printed, which files are walked and whether unsafe fixes are applied change no file's
        findings: switching them (`--output-format github` in CI, `--unsafe-fixes` once) keeps the cache."""
        return repr(dataclasses.replace(self, output_format="full", exclude=(), force_exclude=False,
                                        respect_gitignore=True, unsafe_fixes=False))

    def enabled_codes(self, rules) -> tuple[str, ...]:
        """The codes of `rules` (a dict code -> rule class) this run checks."""
        for prefix in (*self.select, *self.extend_select, *self.ignore):
            if prefix != "ALL" and not any(code.startswith(prefix) for code in rules):
                raise SettingsError(f"unknown rule selector {prefix!r}: no rule code starts with it "
                                    f"(codes: {', '.join(rules)})")
        if self.select:
            chosen = {code for code in rules if _matches(code, self.select)}
        else:
            chosen = {code for code, rule in rules.items() if rule.default_enabled}
        chosen |= {code for code in rules if _matches(code, self.extend_select)}
        chosen -= {code for code in rules if _matches(code, self.ignore)}
        return tuple(sorted(chosen))


def _matches(code: str, selectors: tuple[str, ...]) -> bool:
    return any(selector == "ALL" or code.startswith(selector) for selector in selectors)

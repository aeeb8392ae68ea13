"""The `h2dlint` command."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from . import __version__
from .cache import CACHE_DIR_NAME, FindingsCache, build_fingerprint, remove_cache
from .changed_lines import GitError, changed_lines_since
from .ci_formats import INPUT_PROBLEMS
from .config import resolve_settings
from .discovery import find_python_files
from .engine import FileResult, Linter
from .output import FORMATS
from .progress import progress_bar
from .project import project_model_for
from .rule import all_rules, rule_help
from .runner import run_files
from .settings import INPUT_PROBLEM_CODES, Settings, SettingsError
from .stdin import process_stdin
from .summaries import STATISTICS_FORMATS, write_statistics
from .suppression import per_file_ignored

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class DefaultToCheck(click.Group):
    """`h2dlint PATHS...` means `h2dlint check PATHS...`; usage errors look like h2dlint's own errors."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as error:
            _show_click_error(error)
            sys.exit(error.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(EXIT_FINDINGS)
        sys.exit(code if isinstance(code, int) else EXIT_CLEAN)  # --help and --version end with their code


def _show_click_error(error: click.ClickException) -> None:
    """A usage error as h2dlint writes its errors (`error: ...`, as Ruff does), then the usage and a pointer
    to --help, instead of click's `Error: ...` after the usage."""
    message = error.format_message()
    if message[:1].isupper() and message[1:2].islower():  # "No such option" -> "no such option", not "hDL101"
        message = message[0].lower() + message[1:]
    lines = [f"error: {message}"]
    context = getattr(error, "ctx", None)
    if isinstance(error, click.UsageError) and context is not None:
        lines += ["", context.get_usage(), "", f"For more information, try '{context.command_path} --help'."]
    click.echo("\n".join(lines), err=True)


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())


def _pairs(values: tuple[str, ...], option: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`GLOB:CODE` pairs, comma separated or repeated (as Ruff reads them), as per-file-ignores: a glob's codes
    together, in the order first given."""
    ignores: dict[str, list[str]] = {}
    for value in values:
        for pair in filter(None, (part.strip() for part in value.split(","))):
            glob, colon, code = pair.rpartition(":")
            if not colon or not glob.strip() or not code.strip():
                raise SettingsError(f"{option} takes GLOB:CODE pairs, got {pair!r}")
            ignores.setdefault(glob.strip(), []).append(code.strip().upper())
    return tuple((glob, tuple(codes)) for glob, codes in ignores.items())


@dataclass(frozen=True)
class ReportOptions:
    unsafe_fixes: bool
    quiet: bool
    show_fixes: bool = False
    texts: dict[str, str] = field(default_factory=dict)  # sources not on disk (stdin), by path
    # Errors reported after the findings (a missing path, an internal error): then a run without findings
    # did not pass, and the summary does not say so.
    problems: int = 0


@click.group(cls=DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="h2dlint")
def main() -> None:
    """Find and fix PyTorch code that stalls the GPU stream (blocking host-to-device copies and more)."""


def run() -> None:
    """The console entry point (and `python -m h2dlint`): `main`, then an exit that skips tearing the interpreter
    down. Freeing every module and object one by one is a noticeable share of a short run (a pre-commit hook's),
    and nothing needs it: when `main` stops, the report is written, an output file closed and the cache saved.
    (mypy exits the same way.)"""
    try:
        main()
    except SystemExit as stop:
        code = 0 if stop.code is None else stop.code
    else:
        code = EXIT_CLEAN
    if not isinstance(code, int):
        raise SystemExit(code)  # a message to print: Python's own exit prints it
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None  # a closed pipe: Python's own exit reports it as it always has
    os._exit(code)


@main.command(short_help="Check files or folders (the default command).")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--fix", is_flag=True, help="Apply safe fixes (and unsafe ones with --unsafe-fixes).")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
              help="Also offer and apply fixes that may change behaviour.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing. Exit 1 if any.")
@click.option("--select", multiple=True, help="Rule codes or prefixes to check (comma separated), or ALL.")
@click.option("--extend-select", multiple=True, help="Codes or prefixes to check besides the selected ones.")
@click.option("--ignore", multiple=True, help="Codes or prefixes not to check.")
@click.option("--per-file-ignores", multiple=True, metavar="GLOB:CODE",
              help="Codes or prefixes not to check in files a glob matches (comma separated pairs), instead of the "
                   "configured `per-file-ignores`.")
@click.option("--extend-per-file-ignores", multiple=True, metavar="GLOB:CODE",
              help="Like --per-file-ignores, besides the configured ones.")
@click.option("--exclude", multiple=True, help="Glob patterns of files or folders to skip in folders walked.")
@click.option("--extend-exclude", multiple=True, help="Patterns to skip besides the configured `exclude`.")
@click.option("--force-exclude", is_flag=True, help="Apply the excludes to files named explicitly too.")
@click.option("--output-format", type=click.Choice(sorted(FORMATS)), default=None, metavar="FORMAT",
              help=f"How to report the findings: {', '.join(FORMATS)} [default: full].")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Use this h2dlint.toml or pyproject.toml instead of the closest one.")
@click.option("--add-noqa", is_flag=True, help="Write `# noqa: CODE` comments for every finding; exit 0.")
@click.option("--stdin-filename", help="The name of the file whose source is read from stdin (path `-`).")
@click.option("--output-file", "-o", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report to this file instead of standard output.")
@click.option("--statistics", is_flag=True, help="Count the findings per rule instead of listing them.")
@click.option("--show-fixes", is_flag=True, help="List the fixes --fix applied, per file and rule.")
@click.option("--changed-since", metavar="REF",
              help="Report only findings on lines added or changed since git REF (its merge base with HEAD).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--exit-non-zero-on-fix", is_flag=True,
              help="Exit 1 when --fix changed a file, even if no finding remains.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache (.h2dlint_cache in the current folder).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes [default: all cores].")
@click.option("--quiet", "-q", is_flag=True, help="Print the findings only: no summary or counts.")
@click.option("--silent", "-s", is_flag=True, help="Print nothing; the exit code still tells.")
@click.option("--full-parse", is_flag=True, hidden=True,
              help="Parse whole files with LibCST instead of only candidate calls (slow; for checking parity).")
def check(paths: tuple[Path, ...], fix: bool, unsafe_fixes: bool | None, diff: bool, select: tuple[str, ...],
          extend_select: tuple[str, ...], ignore: tuple[str, ...], per_file_ignores: tuple[str, ...],
          extend_per_file_ignores: tuple[str, ...], exclude: tuple[str, ...],
          extend_exclude: tuple[str, ...], force_exclude: bool, output_format: str | None, config_file: Path | None,
          add_noqa: bool, stdin_filename: str | None, output_file: Path | None, statistics: bool, show_fixes: bool,
          changed_since: str | None, exit_zero: bool, exit_non_zero_on_fix: bool, no_cache: bool, jobs: int | None,
          quiet: bool, silent: bool, full_parse: bool) -> None:
    """Check PATHS (files or folders; default: the current folder; `-`: the source on stdin)."""
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    from_stdin = paths == (Path("-"),)
    rules = all_rules()
    try:
        if add_noqa and (fix or diff or from_stdin):
            raise SettingsError("--add-noqa cannot be combined with --fix, --diff or reading stdin")
        if exit_zero and exit_non_zero_on_fix:
            raise SettingsError("--exit-zero and --exit-non-zero-on-fix cannot be combined")
        if from_stdin and stdin_filename and stdin_filename.endswith(".ipynb"):
            raise SettingsError("notebooks cannot be read from stdin")
        config_paths = [Path(stdin_filename or ".")] if from_stdin else list(paths)
        settings = resolve_settings(config_paths, rules, config_file, select=_codes(select),
                                    extend_select=_codes(extend_select), ignore=_codes(ignore),
                                    per_file_ignores=_pairs(per_file_ignores, "--per-file-ignores"),
                                    extend_per_file_ignores=_pairs(extend_per_file_ignores,
                                                                   "--extend-per-file-ignores"),
                                    exclude=tuple(exclude), extend_exclude=tuple(extend_exclude),
                                    force_exclude=force_exclude or None, unsafe_fixes=unsafe_fixes,
                                    output_format=output_format, full_parse=full_parse or None)
        enabled = settings.enabled_codes(rules)
    except SettingsError as error:
        errors.print(f"error: {error}", markup=False)
        sys.exit(EXIT_ERROR)
    _check_report_options(errors, settings.output_format, statistics, changed_since, fix, diff)
    console = _report_console(errors, output_file)
    if silent:  # from here on nothing is printed; the exit code and an output file still tell
        errors = Console(file=io.StringIO())
        console = console if output_file is not None else errors
    quiet = quiet or silent
    linter = Linter([rules[code] for code in enabled], settings)
    mode = "diff" if diff else "fix" if fix else "add-noqa" if add_noqa else "check"
    options = ReportOptions(unsafe_fixes=settings.unsafe_fixes, quiet=quiet, show_fixes=show_fixes)
    problems: list[str] = []
    if from_stdin:
        result, output = process_stdin(sys.stdin.buffer.read(), stdin_filename or "-", linter, mode)
        results = [result]
        options.texts[result.path] = output.decode("utf-8", errors="replace")
        if fix:  # stdout carries the fixed source only; the report goes to stderr
            sys.stdout.buffer.write(output)
            sys.stdout.flush()
            console = errors
    else:
        files = find_python_files(list(paths) or [Path(".")], settings.exclude, settings.respect_gitignore,
                                  problems, exclude_base=Path(settings.project_root),
                                  force_exclude=settings.force_exclude)
        found = files
        if not files and not problems and not quiet:
            errors.print("warning: No Python files found under the given path(s)", markup=False)
        changed = None
        if changed_since is not None:
            try:
                changed = changed_lines_since(changed_since, list(paths) or [Path(".")])
            except GitError as error:
                errors.print(f"error: {error}", markup=False)
                sys.exit(EXIT_ERROR)
            files = [path for path in files if changed.touches(path)]
        cache = None if no_cache else FindingsCache(Path.cwd(), build_fingerprint(settings, enabled))
        if settings.project_model and files:
            linter.project = project_model_for(list(paths) or [Path(".")], settings,
                                               cache.folder if cache is not None else None, jobs, files, found)
        with progress_bar(errors, len(files)) as step:
            results = run_files(files, linter, mode, jobs, cache, on_done=step)
        if changed is not None:
            results = [changed.only_changed(result) for result in results]

    results = [_drop_ignored_input_problems(result, settings) for result in results]
    problems += [f"{result.path}: {result.error}" for result in results if result.error]
    options = replace(options, problems=len(problems))
    if diff:
        for result in results:
            if result.diff:
                console.out(result.diff, end="", highlight=False)
        would_fix = sum(result.fixes_applied for result in results)
        remaining = sum(len(result.findings) for result in results)
        if not quiet:
            errors.print(f"Would fix {would_fix} error{'s' * (would_fix != 1)}"
                         f" ({remaining} without an applicable fix).", markup=False)
    elif statistics:
        write_statistics(console, results, settings.unsafe_fixes, settings.output_format)
    else:
        FORMATS[settings.output_format](console, results, options)
    if add_noqa and not quiet:
        added = sum(result.noqa_added for result in results)
        errors.print(f"Added {added} noqa directive{'s' * (added != 1)}.", markup=False)
    for problem in problems:
        errors.print(f"error: {problem}", markup=False)

    if problems:
        sys.exit(EXIT_ERROR)
    if add_noqa:
        sys.exit(EXIT_CLEAN)
    if diff:
        sys.exit(EXIT_FINDINGS if any(result.diff for result in results) and not exit_zero else EXIT_CLEAN)
    remaining = any(result.findings for result in results)
    fixed = exit_non_zero_on_fix and any(result.fixes_applied for result in results)
    sys.exit(EXIT_FINDINGS if (remaining or fixed) and not exit_zero else EXIT_CLEAN)


def _drop_ignored_input_problems(result: FileResult, settings: Settings) -> FileResult:
    """Without the findings about the input (HDL001, HDL002) that `ignore` or the file's per-file-ignores
    name. Those of the file's text went through `suppress` already; those of a file that could not be read
    did not."""
    ignored = per_file_ignored(result.path, settings)
    kept = tuple(finding for finding in result.findings if finding.code not in INPUT_PROBLEM_CODES
                 or (settings.reports_input_problem(finding.code) and not finding.code.startswith(ignored)))
    return result if len(kept) == len(result.findings) else replace(result, findings=kept)


def _check_report_options(errors: Console, output_format: str, statistics: bool, changed_since: str | None,
                          fix: bool, diff: bool) -> None:
    problem = None
    if statistics and output_format not in STATISTICS_FORMATS:
        problem = f"--statistics works with --output-format {', '.join(STATISTICS_FORMATS)}, not {output_format}"
    elif changed_since is not None and (fix or diff):
        problem = "--changed-since only narrows the report; it cannot be combined with --fix or --diff"
    if problem:
        errors.print(f"error: {problem}", markup=False)
        sys.exit(EXIT_ERROR)


def _report_console(errors: Console, output_file: Path | None) -> Console:
    """Where the report goes: standard output, or (with -o) a UTF-8 file, without colour codes."""
    if output_file is None:
        return Console(highlight=False, soft_wrap=True)
    try:
        output_file.parent.mkdir(parents=True, exist_ok=True)
        handle = output_file.open("w", encoding="utf-8", newline="\n")
    except OSError as error:
        errors.print(f"error: cannot write {output_file}: {error.strerror or error}", markup=False)
        sys.exit(EXIT_ERROR)
    click.get_current_context().call_on_close(handle.close)
    return Console(file=handle, highlight=False, soft_wrap=True, color_system=None)


@main.command("show-settings", short_help="Print the settings a check would use.")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Use this h2dlint.toml or pyproject.toml instead of the closest one.")
def show_settings(path: Path | None, config_file: Path | None) -> None:
    """Print the settings a check of PATH (default: the current folder) would use."""
    console = Console(highlight=False, soft_wrap=True)
    rules = all_rules()
    try:
        settings = resolve_settings([path or Path(".")], rules, config_file)
        enabled = settings.enabled_codes(rules)
    except SettingsError as error:
        Console(stderr=True).print(f"error: {error}", markup=False)
        sys.exit(EXIT_ERROR)
    console.out(f"config file: {settings.config_file or '(none: defaults)'}")
    console.out(f"enabled rules: {', '.join(enabled)}")
    for setting in fields(settings):
        if setting.name not in ("config_file", "full_parse"):
            console.out(f"{setting.name.replace('_', '-')}: {getattr(settings, setting.name)!r}")


@main.command(short_help="Delete the findings cache in the current folder.")
def clean() -> None:
    """Delete the findings cache (.h2dlint_cache) in the current folder."""
    try:
        removed = remove_cache(Path.cwd())
    except OSError as error:
        Console(stderr=True).print(f"error: cannot remove {CACHE_DIR_NAME}: {error}", markup=False)
        sys.exit(EXIT_ERROR)
    Console(highlight=False).out(f"Removed {CACHE_DIR_NAME}" if removed else f"No {CACHE_DIR_NAME} here")


@main.command(short_help="Explain a rule, or list them all with --all.")
@click.argument("code", metavar="CODE_OR_NAME", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
def rule(code: str | None, show_all: bool) -> None:
    """Explain rule CODE_OR_NAME (`HDL101` or `blocking-tensor-copy`), or list the rules with --all."""
    console = Console(highlight=False)
    rules = all_rules()
    if show_all or code is None:
        for rule_code, rule_class in rules.items():
            default = "" if rule_class.default_enabled else " (opt-in)"
            console.print(f"{rule_code}  {rule_class.name}{default}: {rule_class.summary}", markup=False)
        for problem_code, (name, description) in INPUT_PROBLEMS.items():
            console.print(f"{problem_code}  {name}: {description}", markup=False)
        return
    text = _rule_docs(code, rules)
    if text is None:
        Console(stderr=True).print(f"error: unknown rule {code!r}; `h2dlint rule --all` lists them", markup=False)
        sys.exit(EXIT_ERROR)
    if console.is_terminal:
        from rich.markdown import Markdown  # imported here: importing it slows every start

        console.print(Markdown(text))
    else:
        console.out(text, highlight=False)


def _rule_docs(code_or_name: str, rules: dict) -> str | None:
    """The docs of the rule or input problem with this code or name, as Markdown; None for an unknown one."""
    wanted = code_or_name.strip()
    for rule_code, rule_class in rules.items():
        if wanted.upper() == rule_code or wanted.lower() == rule_class.name:
            return rule_help(rule_class)
    for problem_code, (name, description) in INPUT_PROBLEMS.items():
        if wanted.upper() == problem_code or wanted.lower() == name:
            return (f"# {name} ({problem_code})\n\n{description} It is reported even when `select` leaves it "
                    f"out; `ignore` or `per-file-ignores` can name it.")
    return None


@main.command(short_help="Run the language server for editors.")
def server() -> None:
    """Run the language server for editors (LSP over stdio); needs `pip install 'h2dlint[server]'`."""
    try:
        from .server import serve  # imported here: only this command needs pygls
    except ImportError as error:
        Console(stderr=True).print(f"error: `h2dlint server` needs pygls ({error}); "
                                   "install it with: pip install 'h2dlint[server]'", markup=False)
        sys.exit(EXIT_ERROR)
    serve()


from .verify.cli import verify  # noqa: E402  (torch is imported only when `verify` runs)

main.add_command(verify)

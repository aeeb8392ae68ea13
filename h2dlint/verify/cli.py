"""The `h2dlint verify` command."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click
from rich.console import Console

EXIT_CLEAN, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
DEFAULT_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@click.command(context_settings={"help_option_names": ["-h", "--help"]},
               short_help="Replay fixes with torch to check they keep behaviour.")
@click.argument("paths", nargs=-1)
@click.option("--run", "run_program", is_flag=True,
              help="Run the program given after `--`, replaying h2dlint's fix next to each site it would fix.")
@click.option("--include", multiple=True, type=click.Path(path_type=Path),
              help="With --run: folders whose modules are instrumented [default: the current folder].")
@click.option("--examples", "rule_examples", is_flag=True,
              help="Replay every rule's documented fixes on their pinned branch instead of fixture folders.")
@click.option("--seeds", type=click.IntRange(min=1), default=5, show_default=True,
              help="Random inputs per fixture case.")
@click.option("--output-format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def verify(paths, run_program, include, rule_examples, seeds, output_format) -> None:
    """Replay fixes with torch: prove them equivalent and, on a GPU, free of host-device syncs.

    \b
    h2dlint verify [FIXTURE_FOLDERS]
        before.py/after.py cases (default: the repo's fixtures/)
    h2dlint verify --run -- python train.py
        inside a program: each fixable site runs both ways
    h2dlint verify --examples
        each rule's documented fixes, on their pinned branch
    """
    # Tables piped to a file or CI log get room for every column instead of rich's default 80.
    console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 120)
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    if importlib.util.find_spec("torch") is None:
        errors.print("error: the verifier needs torch: pip install 'h2dlint[verify]'", markup=False)
        sys.exit(EXIT_ERROR)
    if run_program:
        _verify_program(list(paths), list(include), output_format, console, errors)
    elif rule_examples:
        _verify_examples(output_format, console)
    else:
        _verify_fixtures([Path(path) for path in paths] or [DEFAULT_FIXTURES], seeds, output_format, console, errors)


def _gpu_note(reason: str) -> str:
    return (f"GPU checks skipped: {reason}. Sync-freedom and host stalls were NOT checked; equivalence "
            "(values, dtype, device, shape, requires_grad, is_leaf) was checked on the CPU, on the pinned branch "
            "(pin guards forced true; a pin request torch refuses is a crash on CUDA, the rest run unpinned).")


def _verify_fixtures(paths: list[Path], seeds: int, output_format: str, console: Console, errors: Console) -> None:
    from .replay import find_cases, verify_case
    from .runtime import gpu_status

    cases = find_cases(paths)
    if not cases:
        errors.print(f"error: no before.py/after.py case folders in {', '.join(map(str, paths))}", markup=False)
        sys.exit(EXIT_ERROR)
    cuda, reason = gpu_status()
    results = [verify_case(folder, tuple(range(1, seeds + 1))) for folder in cases]
    if output_format == "json":
        console.out(json.dumps([{**result.to_json(), "gpu_skipped_reason": None if cuda else reason}
                                for result in results], indent=2), highlight=False)
    else:
        from rich.table import Column, Table  # only for this report: importing it slows every start otherwise

        table = Table(Column("case", no_wrap=True), "equal", "pinned branch", "sync-free (after)", "caught (before)",
                      "host ms before", "host ms after", "result", title="h2dlint verify: fixtures")
        for result in results:
            verdict = "skipped" if result.skipped else "pass" if result.passed else "FAIL"
            table.add_row(result.case, _yes_no(result.equal, "skipped"), _pinned_cell(result, cuda),
                          *_gpu_cells(result, cuda), verdict)
        console.print(table)
        for result in results:
            for line in ([result.skipped] if result.skipped else []) + result.differences + result.cuda_crashes:
                console.print(f"{result.case}: {line}", markup=False)
    if not cuda:
        errors.print(_gpu_note(reason), markup=False)
    sys.exit(EXIT_CLEAN if all(result.passed for result in results) else EXIT_FAILED)


def _pinned_cell(result, cuda: bool) -> str:
    """Without CUDA: whether after.py's pinned branch ran, and ran clean."""
    if result.skipped or cuda:
        return "on the GPU" if cuda and not result.skipped else "skipped"
    if result.cuda_crashes:
        return "CRASH on CUDA"
    return f"ok ({result.pin_requests} pins)" if result.pin_requests else "no pins"


def _verify_examples(output_format: str, console: Console) -> None:
    """Each rule example with a fix: its pinned branch must raise nothing unless the fix is unsafe and says
    what cannot be pinned."""
    from ..rule import all_rules
    from .examples import replay_example

    rows = []
    for code, rule in all_rules().items():
        for index, example in enumerate(rule.invalid_examples):
            if example.expected_fix is None:
                continue
            replay = replay_example(example.code, example.expected_fix)
            # A crash is allowed in an unsafe fix only; the rule's own tests check the fix says why. Differences
            # are shown, not failed: stand-in arguments reach what fixtures do not (`torch.empty`'s values, the
            # leaf status HDL404 corrects on purpose).
            passed = not replay.crashes or example.unsafe
            rows.append({"example": f"{code}-invalid-{index}", "unsafe": example.unsafe, "runs": replay.runs,
                         "pin_requests": replay.pin_requests, "cuda_crashes": replay.crashes,
                         "differences": replay.differences, "passed": passed})
    if output_format == "json":
        console.out(json.dumps(rows, indent=2), highlight=False)
    else:
        from rich.table import Column, Table

        table = Table(Column("example", no_wrap=True), "label", "runs", "pins", "crashes on CUDA", "result",
                      title="h2dlint verify --examples: each documented fix, pin guards forced true")
        for row in rows:
            table.add_row(row["example"], "unsafe" if row["unsafe"] else "safe", str(row["runs"]),
                          str(row["pin_requests"]), str(len(row["cuda_crashes"])),
                          "pass" if row["passed"] else "FAIL")
        console.print(table)
        for row in rows:
            for line in row["cuda_crashes"] + [f"(differs) {text}" for text in row["differences"]]:
                console.print(f"{row['example']}: {line}", markup=False)
    sys.exit(EXIT_CLEAN if all(row["passed"] for row in rows) else EXIT_FAILED)


def _gpu_cells(result, cuda: bool) -> list[str]:
    if result.skipped or not cuda:
        return ["skipped"] * 4
    if not result.gpu_checked:
        return ["n/a (no fixed call on the GPU)"] * 2 + ["-", "-"]
    return [_yes_no(result.sync_free), _yes_no(result.original_caught),
            f"{result.host_ms_before:.3f}", f"{result.host_ms_after:.3f}"]


def _yes_no(value: bool | None, none: str = "-") -> str:
    return none if value is None else "yes" if value else "NO"


def _verify_program(command: list[str], include: list[Path], output_format: str, console: Console,
                    errors: Console) -> None:
    from .hook import RESULTS_VARIABLE, ROOTS_VARIABLE

    if not command:
        errors.print("error: give the program after `--`: h2dlint verify --run -- python train.py", markup=False)
        sys.exit(EXIT_ERROR)
    argv = _launcher(command)
    if argv is None:
        errors.print(f"error: {command[0]!r} is not python or a Python script on PATH", markup=False)
        sys.exit(EXIT_ERROR)
    handle, results_name = tempfile.mkstemp(prefix="h2dlint-verify-", suffix=".json")
    os.close(handle)
    results_path = Path(results_name)
    env = {**os.environ, ROOTS_VARIABLE: os.pathsep.join(str(path.resolve()) for path in include or [Path.cwd()]),
           RESULTS_VARIABLE: str(results_path)}
    try:
        # With JSON output the program's stdout goes to stderr, so stdout holds only the report.
        completed = subprocess.run(argv, env=env, stdout=2 if output_format == "json" else None)
        text = results_path.read_text()
    finally:
        results_path.unlink(missing_ok=True)
    if not text:
        errors.print("error: the program left no results (it ended without running atexit handlers)", markup=False)
        sys.exit(completed.returncode or EXIT_ERROR)
    results = json.loads(text)
    sites = [site for site in results["sites"] if site["hits"]]
    unreached = len(results["sites"]) - len(sites)
    if output_format == "json":
        console.out(json.dumps(sites, indent=2), highlight=False)
    else:
        _site_table(console, sites, results["gpu"]["available"])
    if unreached:
        errors.print(f"{unreached} instrumented site{'s' * (unreached != 1)} never ran.", markup=False)
    for why in results["skipped"]:
        errors.print(f"not instrumented: {why}", markup=False)
    if not results["gpu"]["available"]:
        errors.print(_gpu_note(results["gpu"]["reason"]), markup=False)
    if completed.returncode != 0:
        errors.print(f"the program exited with status {completed.returncode}", markup=False)
        sys.exit(completed.returncode)
    passed = all(site["equal"] and not site["cuda_crashes"] and (not site["gpu_checked"] or site["sync_free"])
                 for site in sites)
    sys.exit(EXIT_CLEAN if passed else EXIT_FAILED)


def _launcher(command: list[str]) -> list[str] | None:
    """The command that runs `command` with the import hook installed first."""
    bootstrap = ["-m", "h2dlint.verify.bootstrap"]
    first, rest = command[0], command[1:]
    if first in ("python", "python3"):
        return [sys.executable, *bootstrap, *rest]  # the interpreter h2dlint runs in, with torch beside it
    if Path(first).name.startswith("python"):
        return [first, *bootstrap, *rest]
    script = shutil.which(first)
    if script is None:
        return None
    with open(script, "rb") as file:
        shebang = file.readline()
    if not (shebang.startswith(b"#!") and b"python" in shebang):
        return None
    return [sys.executable, *bootstrap, script, *rest]  # a console script such as pytest: run its file


def _site_table(console: Console, sites: list[dict], cuda: bool) -> None:
    from rich.table import Column, Table

    table = Table(Column("site", no_wrap=True), "code", "hits", "equal", "pinned branch", "sync-free",
                  "caught (before)", "host ms saved", title="h2dlint verify --run: sites")
    for site in sites:
        gpu = site["gpu_checked"]
        saved = site["host_ms_saved"]
        # On a CUDA machine the fixed form is the pinned branch, run as it is.
        pinned = "CRASH on CUDA" if site["cuda_crashes"] else "on the GPU" if cuda else \
            "ok" if site["pinned_branch_runs"] else "no pins"
        table.add_row(f"{site['filename']}:{site['row']}", site["code"], str(site["hits"]), _yes_no(site["equal"]),
                      pinned,
                      _yes_no(site["sync_free"]) if gpu else "skipped",
                      _yes_no(site["original_caught"]) if gpu else "skipped",
                      f"{saved:.3f}" if saved is not None else "skipped")
    console.print(table)
    for site in sites:
        for line in site["differences"] + site["errors"] + site["cuda_crashes"]:
            console.print(f"{site['filename']}:{site['row']}: {line}", markup=False)

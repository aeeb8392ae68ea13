"""Benchmark h2dlint against Ruff (and TorchFix where installed) on one real tree.

    python benchmarks/bench.py [TREE] [--rounds 5]

Without TREE it uses sglang 0.5.23's `srt` package, downloaded once with
`pip download --no-deps` into benchmarks/.trees/ (git-ignored; never committed).
Runs alternate between the tools, several rounds; the table gives medians and ratios.
Measured: cold runs (no cache; Ruff both in its default output format, which prints a code frame
with each diagnostic, and with one line per diagnostic), warm runs (nothing changed), one changed file
(a comment appended; a line inserted in the largest file; a call appended, which changes the project model),
`--fix` with a warm cache, a pre-commit-sized run (5 files), and h2dlint's peak
memory (all its processes together, sampled from /proc).

h2dlint runs on the interpreter that runs this script. `--python PATH` (repeatable) adds the cold run on
other interpreters, each with h2dlint installed, to the same rounds: how fast h2dlint is depends on how the
interpreter was built (pyenv's default build, without profile-guided or link-time optimization, parses
markedly slower than a distribution's optimized build of the same Python; see docs/performance.md).
"""

from __future__ import annotations

import argparse
import ast
import compileall
import gc
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_WHEEL = "sglang==0.5.23"


def default_tree() -> Path:
    trees = HERE / ".trees"
    tree = trees / "sglang-0.5.23" / "sglang" / "srt"
    if not tree.is_dir():
        download = trees / "wheels"
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", DEFAULT_WHEEL, "-d", str(download)],
                       check=True)
        wheel = next(download.glob("sglang-0.5.23-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(trees / "sglang-0.5.23", [name for name in archive.namelist()
                                                        if name.startswith("sglang/")])
    return tree


def h2dlint(*args: str, python: str = sys.executable) -> list[str]:
    return [python, "-m", "h2dlint", "check", "--output-format", "concise", "--exit-zero", "-q", *args]


def ruff(*args: str) -> list[str]:
    executable = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    return [executable, "check", "--select", "ALL", "--exit-zero", "-q", *args]


def timed(command: list[str], cwd: Path) -> float:
    return timed_with_cpu(command, cwd)[0]


def timed_with_cpu(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds, and CPU seconds (user + system) of the command and every process it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def output_of(command: list[str], cwd: Path) -> str:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False).stdout


def parse_floor(files: list[Path]) -> tuple[int, int, float]:
    """The files the default rules' prefilters send to `ast.parse`, their lines, and the CPU seconds that
    parsing them (and freeing the trees) takes in one process, best of 3: work no cold run can skip."""
    from h2dlint.config import resolve_settings
    from h2dlint.facts import word_gate
    from h2dlint.rule import all_rules
    from h2dlint.source import SourceError, read_source

    rules = all_rules()
    settings = resolve_settings(files[:1], rules, None)
    enabled = [rules[code] for code in settings.enabled_codes(rules)]
    texts = []
    for path in files:
        try:
            text = read_source(path).text
        except (OSError, SourceError):
            continue
        gate = word_gate(text, settings)  # no project model here: the engine's fallback gate
        if any(rule.may_apply(text, settings, gate) for rule in enabled):
            texts.append(text)
    best = float("inf")
    gc.disable()  # as h2dlint's workers run: the cyclic collector would traverse each tree as it is built
    try:
        for _ in range(3):
            started = time.process_time()
            for text in texts:
                try:
                    ast.parse(text)
                except (SyntaxError, ValueError):
                    pass
            best = min(best, time.process_time() - started)
    finally:
        gc.enable()
    return len(texts), sum(text.count("\n") for text in texts), best


def peak_memory_mb(command: list[str], cwd: Path) -> float:
    """Peak of the summed resident memory of the process and all its descendants."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(process.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    process.wait()
    done.set()
    sampler.join()
    return peak / 1024


def _tree_rss(root: int) -> int:
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/status") as status:
                kilobytes = next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
        rss[int(entry)] = kilobytes
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total


def byte_compile_h2dlint() -> None:
    """Byte-compile h2dlint's modules, as `pip install` does. Under PYTHONDONTWRITEBYTECODE (set in some
    environments, this one among them) an editable install would otherwise compile its source again at every
    start, a cost no installed copy pays."""
    import h2dlint.rules

    import h2dlint

    for package in (h2dlint, h2dlint.rules):
        compileall.compile_dir(Path(package.__file__).parent, quiet=1)


def on_interpreter(python: str, *args: str) -> str:
    """What this script prints when run with `args` on interpreter `python` (its last line)."""
    completed = subprocess.run([python, __file__, *args], capture_output=True, text=True, check=True)
    return completed.stdout.strip().splitlines()[-1]


def describe_interpreter() -> str:
    return f"{sys.executable} (Python {platform.python_version()}, {platform.python_compiler()})"


def version(command: list[str]) -> str:
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    return (completed.stdout or completed.stderr).strip().splitlines()[0] if completed.returncode == 0 else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", nargs="?", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--python", action="append", default=[], metavar="PATH",
                        help="another interpreter (with h2dlint installed) to time the cold run on; repeatable")
    parser.add_argument("--on-interpreter", choices=("prepare", "parse-floor"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.on_interpreter == "prepare":  # run by this script on each interpreter of --python
        byte_compile_h2dlint()
        print(describe_interpreter())
        return 0
    if args.on_interpreter == "parse-floor":
        print(*parse_floor(sorted(args.tree.rglob("*.py"))))
        return 0
    source_tree = (args.tree or default_tree()).resolve()
    byte_compile_h2dlint()
    others = {python: on_interpreter(python, "--on-interpreter", "prepare") for python in args.python}

    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        shutil.copytree(source_tree, tree)
        files = sorted(tree.rglob("*.py"))
        lines = sum(path.read_bytes().count(b"\n") for path in files)
        work = Path(scratch) / "work"
        work.mkdir()
        ruff_cache = Path(scratch) / "ruff_cache"
        changed_file = files[len(files) // 2]
        original = changed_file.read_bytes()
        largest = max(files, key=lambda path: path.stat().st_size)
        largest_lines = largest.read_bytes().splitlines(keepends=True)
        timings: dict[str, list[float]] = {}

        def record(name: str, seconds: float) -> None:
            timings.setdefault(name, []).append(seconds)

        cold_runs = [("h2dlint cold", h2dlint("--no-cache", str(tree))),
                     *((f"h2dlint cold on {python}", h2dlint("--no-cache", str(tree), python=python))
                       for python in others),
                     ("ruff cold", ruff("--no-cache", str(tree))),
                     ("ruff cold concise", ruff("--no-cache", "--output-format", "concise", str(tree)))]
        for round_number in range(args.rounds):
            # Every other round in the opposite order, so that neither tool always runs after the other.
            for name, command in cold_runs if round_number % 2 == 0 else reversed(cold_runs):
                wall, cpu = timed_with_cpu(command, work)
                record(name, wall)
                record(f"{name} cpu", cpu)
            timed(h2dlint(str(tree)), work)  # prime the cache
            record("h2dlint warm", timed(h2dlint(str(tree)), work))
            timed(ruff("--cache-dir", str(ruff_cache), str(tree)), work)
            record("ruff warm", timed(ruff("--cache-dir", str(ruff_cache), str(tree)), work))
            changed_file.write_bytes(original + b"\n# touched by the benchmark\n")
            record("h2dlint one file changed", timed(h2dlint(str(tree)), work))
            changed_file.write_bytes(original)
            # A line inserted in the middle of the largest file moves every line after it; a call appended to a
            # file changes what the project model holds, which is then built again.
            middle = len(largest_lines) // 2
            largest.write_bytes(b"".join([*largest_lines[:middle], b"# touched by the benchmark\n",
                                          *largest_lines[middle:]]))
            record("h2dlint largest file, a line inserted", timed(h2dlint(str(tree)), work))
            largest.write_bytes(b"".join(largest_lines))
            changed_file.write_bytes(original + b"\nprint()\n")
            record("h2dlint one file, a call added", timed(h2dlint(str(tree)), work))
            changed_file.write_bytes(original)
            # pre-commit passes the changed files; the cache in the working folder (the project model's summaries
            # among it) is as warm as a developer's.
            record("h2dlint 5 files (pre-commit)", timed(h2dlint(*map(str, files[:5])), work))

        fix_tree = Path(scratch) / "fix_tree"
        shutil.copytree(source_tree, fix_tree)
        timed(h2dlint(str(fix_tree)), work)
        fix_seconds = timed(h2dlint("--fix", str(fix_tree)), work)
        fixed = subprocess.run(["diff", "-r", str(source_tree), str(fix_tree)], capture_output=True)  # any encoding
        changed_lines = sum(1 for line in fixed.stdout.splitlines() if line.startswith(b">"))
        memory = peak_memory_mb(h2dlint("--no-cache", str(tree)), work)

        parse_floors = {sys.executable: parse_floor(files)}
        for python in others:
            parsed, parsed_lines, seconds = on_interpreter(python, str(tree), "--on-interpreter", "parse-floor").split()
            parse_floors[python] = int(parsed), int(parsed_lines), float(seconds)
        report = output_of(h2dlint("--no-cache", str(tree)), work)
        differing = [python for python in others if output_of(h2dlint("--no-cache", str(tree), python=python),
                                                              work) != report]
        ruff_report = output_of(ruff("--no-cache", "--output-format", "concise", str(tree)), work)

        torchfix_seconds = None
        if shutil.which("torchfix"):
            subset = files[:100]
            torchfix_seconds = timed(["torchfix", *map(str, subset)], work)

    median = {name: statistics.median(values) for name, values in timings.items()}
    from h2dlint import __version__

    print(f"tree: {source_tree} ({len(files)} files, {lines:,} lines)")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; h2dlint {__version__} on "
          f"{describe_interpreter()}; {version(ruff('--version')[:1] + ['--version'])}; {args.rounds} rounds, medians")
    print()
    print("| run | h2dlint | ruff | ratio (h2dlint / ruff) |")
    print("| --- | ---: | ---: | ---: |")
    for label, ours, theirs in (("cold (no cache)", "h2dlint cold", "ruff cold"),
                                *((f"cold, h2dlint on {describe}", f"h2dlint cold on {python}", "ruff cold")
                                  for python, describe in others.items()),
                                ("warm (nothing changed)", "h2dlint warm", "ruff warm")):
        print(f"| {label} | {median[ours]:.2f} s | {median[theirs]:.2f} s | {median[ours] / median[theirs]:.2f} |")
    print(f"| cold, Ruff printing one line per diagnostic (`--output-format concise`) | {median['h2dlint cold']:.2f} s "
          f"| {median['ruff cold concise']:.2f} s | {median['h2dlint cold'] / median['ruff cold concise']:.2f} |")
    print(f"| one file changed (a comment appended) | {median['h2dlint one file changed']:.2f} s | | |")
    print(f"| the largest file changed (`{largest.name}`, a line inserted in its middle) | "
          f"{median['h2dlint largest file, a line inserted']:.2f} s | | |")
    print(f"| one file changed so that the project model changes (a call appended) | "
          f"{median['h2dlint one file, a call added']:.2f} s | | |")
    print(f"| 5 files, as pre-commit runs it | {median['h2dlint 5 files (pre-commit)']:.2f} s | | |")
    print(f"| `--fix`, warm cache ({changed_lines} lines rewritten) | {fix_seconds:.2f} s | | |")
    print(f"| peak memory, all processes | {memory:.0f} MB | | |")
    if torchfix_seconds is not None:
        print(f"| TorchFix on 100 files | {torchfix_seconds:.2f} s | | |")
    print()
    runs = {sys.executable: "h2dlint cold", **{python: f"h2dlint cold on {python}" for python in others}}
    for python, name in runs.items():
        parsed_files, parsed_lines, parse_seconds = parse_floors[python]
        paired = [ours / theirs for ours, theirs in zip(timings[name], timings["ruff cold"], strict=True)]
        print(f"On {python}: CPU seconds of a cold run (all processes): h2dlint {median[name + ' cpu']:.2f} s, "
              f"Ruff {median['ruff cold cpu']:.2f} s. Of h2dlint's, `ast.parse` of the {parsed_files} files "
              f"({parsed_lines:,} lines) its prefilters admit takes {parse_seconds:.2f} s in one process: "
              f"on {os.cpu_count()} cores, at least {parse_seconds / (os.cpu_count() or 1):.2f} s of wall time. "
              f"Cold ratio round by round (the two runs of a round back to back, so a change in the machine's load "
              f"between rounds cancels): {', '.join(f'{ratio:.2f}' for ratio in paired)}; "
              f"median {statistics.median(paired):.2f}.")
    for python in differing:
        print(f"WARNING: h2dlint on {python} reports differently from h2dlint on {sys.executable}.")
    print(f"Ruff reports {len(ruff_report.splitlines()):,} diagnostics on this tree; in its default output format it "
          "prints each with a code frame, which is most of the difference between its two cold rows.")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())

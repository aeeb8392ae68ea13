"""How h2dlint's cost grows with one file's size: it should grow with the file, not faster.

    python benchmarks/scaling.py [--functions 1000,2000,4000,8000] [--elements 25000,50000,100000]
                                 [--calls 1000,2000,4000]

Two kinds of generated file, each at several sizes:

- `functions`: N functions in one file, each with a loop, an if/else, a decorator and one blocking copy
  (one HDL101 finding per function);
- `long line`: one `torch.tensor([...N ints...], device="cuda")` on a single line (one finding);
- `calls on a line`: N statements `a_i = torch.tensor([i, 1], device=d)` on one line, as minified code has
  them (N findings).

Each file is checked in a fresh `h2dlint` process (no cache, one job) three ways: a plain check, `--diff`,
and `--fix` on a copy. The table prints wall time and peak memory (the process's maximum resident set), and,
less those of a run on a file with nothing to report (the interpreter's start, the imports), divided by the
findings and by the bytes: where cost grows with the file, those columns stay about the same from one size to
the next; where it grows faster, they grow with the size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def functions_file(count: int) -> str:
    parts = ["import torch\n"]
    for index in range(count):
        parts.append(f"""

@torch.no_grad()
def step_{index}(device, values, flag):
    total = 0
    for value in values:
        if flag:
            total += value
        else:
            total -= value
    return torch.tensor([total, {index}], device=device)
""")
    return "".join(parts)


def long_line_file(count: int) -> str:
    return f"import torch\nx = torch.tensor([{', '.join(map(str, range(count)))}], device=\"cuda\")\n"


def calls_on_a_line_file(count: int) -> str:
    calls = "; ".join(f"a{index} = torch.tensor([{index}, 1], device=device)" for index in range(count))
    return f"import torch\n\n\ndef step(device):\n    {calls}\n"


def run_h2dlint(path: Path, *options: str) -> tuple[float, int]:
    """Wall seconds and peak resident memory (bytes) of one h2dlint process."""
    command = [sys.executable, "-m", "h2dlint", "check", str(path), "--no-cache", "--jobs", "1",
               "--output-format", "concise", "--exit-zero", *options]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        raise SystemExit(f"h2dlint {' '.join(options)} on {path} exited {process.returncode}")
    return elapsed, usage.ru_maxrss * 1024  # Linux reports kilobytes


def count_findings(path: Path) -> int:
    output = subprocess.run([sys.executable, "-m", "h2dlint", "check", str(path), "--no-cache",
                             "--output-format", "json-lines", "--exit-zero"],
                            capture_output=True, text=True, check=True).stdout
    return len(output.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--functions", default="1000,2000,4000,8000", help="sizes of the functions file")
    parser.add_argument("--elements", default="25000,50000,100000", help="sizes of the long line")
    parser.add_argument("--calls", default="1000,2000,4000", help="statements on the line of calls")
    arguments = parser.parse_args()
    cases = [("functions", int(size), functions_file) for size in arguments.functions.split(",") if size]
    cases += [("long line", int(size), long_line_file) for size in arguments.elements.split(",") if size]
    cases += [("calls on a line", int(size), calls_on_a_line_file) for size in arguments.calls.split(",") if size]

    with tempfile.TemporaryDirectory() as folder:
        empty = Path(folder) / "empty.py"
        empty.write_text("import torch\n", encoding="utf-8")
        base_seconds, base_peak = run_h2dlint(empty)
        print(f"Baseline (a file with nothing to report): {base_seconds:.2f} s, {base_peak / 2**20:.0f} MB peak; "
              "the per-finding and per-KB columns are of the time and memory above it.\n")
        print("| file | N | bytes | findings | mode | seconds | peak MB | ms / finding | ms / KB | peak KB / KB |")
        print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
        for kind, size, generate in cases:
            path = Path(folder) / "generated.py"
            path.write_text(generate(size), encoding="utf-8")
            size_bytes = path.stat().st_size
            findings = count_findings(path)
            for mode, options in (("check", ()), ("--diff", ("--diff",)), ("--fix", ("--fix",))):
                target = path
                if mode == "--fix":
                    target = Path(folder) / "to_fix.py"
                    shutil.copyfile(path, target)
                seconds, peak = run_h2dlint(target, *options)
                kilobytes = size_bytes / 1024
                extra_seconds, extra_peak = max(seconds - base_seconds, 0.0), max(peak - base_peak, 0)
                print(f"| {kind} | {size:,} | {size_bytes:,} | {findings:,} | {mode} | {seconds:.2f} | "
                      f"{peak / 2**20:.0f} | {1000 * extra_seconds / max(findings, 1):.2f} | "
                      f"{1000 * extra_seconds / kilobytes:.1f} | {extra_peak / 1024 / kilobytes:.1f} |", flush=True)


if __name__ == "__main__":
    main()

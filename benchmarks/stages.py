"""Where a cold run's CPU time goes, stage by stage, in one process.

    python benchmarks/stages.py [TREE] [--select CODES]

Runs the real pipeline (`process_file` on every file, as one worker does, with the cyclic collector paused
as the runner pauses it) with timers wrapped around its stages. Each stage's time excludes the stages it
calls (a rule's visit that calls `ast.parse` counts that parse as parsing). "rest" is what no stage covers:
freeing each file's trees, results, bookkeeping. Without TREE it uses the tree `bench.py` downloads.
"""

from __future__ import annotations

import argparse
import ast
import functools
import gc
import sys
import time
from collections import Counter
from pathlib import Path

from libcst.metadata import MetadataWrapper

from h2dlint import engine, syncs
from h2dlint.config import resolve_settings
from h2dlint.discovery import find_python_files
from h2dlint.rule import all_rules

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import default_tree  # noqa: E402

# The stages outside the analysis on the `ast` that decides where LibCST looks (LibCST on the candidates
# stays the source of truth for findings and fixes).
OUTSIDE_ANALYSIS = ("read and decode", "prefilters", "ast.parse", "LibCST parse", "LibCST visits", "rest")


class StageClock:
    """Exclusive CPU time per stage: time spent in a nested stage counts for that stage only."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self._open: list[str] = []

    def timed(self, stage: str, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if self._open:  # pause the enclosing stage
                self.seconds[self._open[-1]] += time.process_time()
            self._open.append(stage)
            self.seconds[stage] -= time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[stage] += time.process_time()
                self.calls[stage] += 1
                self._open.pop()
                if self._open:
                    self.seconds[self._open[-1]] -= time.process_time()
        return wrapper


def instrument(clock: StageClock, rules) -> None:
    engine.read_source = clock.timed("read and decode", engine.read_source)
    ast.parse = clock.timed("ast.parse", ast.parse)
    engine.FileFacts = clock.timed("file facts (index walk)", engine.FileFacts)
    syncs.sync_sites = clock.timed("sync finder", syncs.sync_sites)
    engine._parse_unit = clock.timed("LibCST parse", engine._parse_unit)
    MetadataWrapper.visit = clock.timed("LibCST visits", MetadataWrapper.visit)
    engine.suppress = clock.timed("suppression", engine.suppress)
    for rule in rules:
        rule.may_apply = clock.timed("prefilters", rule.may_apply)
        rule.candidates = clock.timed("candidate filters", rule.candidates)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", nargs="?", type=Path)
    parser.add_argument("--select", default="", help="rule codes or prefixes, comma separated (default: the defaults)")
    args = parser.parse_args()
    tree = (args.tree or default_tree()).resolve()
    files = find_python_files([tree], (), False, [])
    rules = all_rules()
    select = tuple(code for code in args.select.split(",") if code)
    settings = resolve_settings([tree], rules, None, select=select or None)
    enabled = [rules[code] for code in settings.enabled_codes(rules)]
    linter = engine.Linter(enabled, settings)

    clock = StageClock()
    instrument(clock, enabled)
    process = clock.timed("rest", engine.process_file)
    findings = 0
    gc.disable()
    gc.freeze()
    started = time.process_time()
    for done, path in enumerate(files, 1):
        findings += len(process(path, linter, "check").findings)
        if done % 100 == 0:
            gc.collect()
    measured = time.process_time() - started

    total = sum(clock.seconds.values())
    print(f"tree: {tree} ({len(files)} files); rules: {', '.join(rule.code for rule in enabled)}; "
          f"{findings} findings")
    print(f"Python {sys.version.split()[0]} ({sys.executable}); CPU seconds in one process, each stage without the "
          "stages it calls")
    print()
    print("| stage | calls | CPU | share |")
    print("| --- | ---: | ---: | ---: |")
    for stage, seconds in clock.seconds.most_common():
        print(f"| {stage} | {clock.calls[stage]:,} | {seconds:.2f} s | {seconds / total:.0%} |")
    print(f"| all | | {total:.2f} s | |")
    print(f"| the whole loop, timed around it | | {measured:.2f} s | |")
    outside = sum(clock.seconds[stage] for stage in OUTSIDE_ANALYSIS)
    print()
    print(f"Outside the analysis ({', '.join(OUTSIDE_ANALYSIS)}): {outside:.2f} s; the analysis on the `ast` "
          f"that decides what LibCST parses: {total - outside:.2f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

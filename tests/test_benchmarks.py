"""benchmarks/stages.py times the real pipeline: it must see every call and leave the findings unchanged.
benchmarks/bench.py's hook for other interpreters reports the parse floor of the files the text tests admit."""

import json
import re
import subprocess
import sys
from pathlib import Path

from h2dlint.engine import Linter
from h2dlint.facts import word_gate
from h2dlint.rule import all_rules
from h2dlint.settings import Settings
from h2dlint.source import read_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def test_stages_sees_every_file_and_rule_and_finds_what_the_cli_finds():
    stages = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "stages.py"), str(FIXTURES)],
                            capture_output=True, text=True, check=True, cwd=ROOT).stdout
    report = subprocess.run([sys.executable, "-m", "h2dlint", "check", str(FIXTURES), "--output-format", "json",
                             "--no-cache", "--exit-zero"], capture_output=True, text=True, check=True, cwd=ROOT).stdout

    files = len(list(FIXTURES.rglob("*.py")))
    calls = {stage: int(count.replace(",", "")) for stage, count in re.findall(r"^\| ([^|]+) \| ([\d,]+) \|", stages,
                                                                                 re.MULTILINE)}
    assert calls["read and decode"] == files
    enabled = [all_rules()[code] for code in Settings().enabled_codes(all_rules())]
    always_tested = sum(not rule.text_test_spares_only_parsing for rule in enabled)
    # Every file meets every rule's text test, less the tests that only spare parsing, on files parsed anyway.
    assert files * always_tested <= calls["prefilters"] < files * len(enabled)
    assert calls["LibCST parse"] > 0 and calls["LibCST visits"] >= calls["LibCST parse"]
    assert f"; {len(json.loads(report))} findings" in stages
    # Exclusive times: the stages add up to the loop's own CPU time, with nothing counted twice (the loop's time
    # outside process_file, a few milliseconds, is all that differs).
    total = float(re.search(r"^\| all \| \| ([\d.]+) s \|", stages, re.MULTILINE).group(1))
    measured = float(re.search(r"^\| the whole loop, timed around it \| \| ([\d.]+) s \|", stages,
                               re.MULTILINE).group(1))
    assert abs(total - measured) <= 0.05 + 0.05 * measured


def test_bench_parse_floor_on_another_interpreter_counts_the_files_the_text_tests_admit():
    # bench.py --python asks each interpreter for its own parse floor through this hook.
    floor = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench.py"), str(FIXTURES),
                            "--on-interpreter", "parse-floor"], capture_output=True, text=True, check=True,
                           cwd=ROOT).stdout.split()
    settings = Settings()
    linter = Linter([all_rules()[code] for code in settings.enabled_codes(all_rules())], settings)
    admitted = [text for text in (read_source(path).text for path in FIXTURES.rglob("*.py"))
                if linter._active_rules(text, frozenset(), word_gate(text, settings))]
    assert 0 < len(admitted) <= len(list(FIXTURES.rglob("*.py")))
    assert (int(floor[0]), int(floor[1])) == (len(admitted), sum(text.count("\n") for text in admitted))
    assert float(floor[2]) > 0

"""Running many files: worker processes give the serial results; the garbage collector is paused, then restored."""

import gc

from h2dlint.engine import Linter
from h2dlint.rule import all_rules
from h2dlint.runner import PARALLEL_THRESHOLD, run_files
from h2dlint.settings import Settings

BLOCKING = "import torch\ndef f(d, n):\n    return torch.tensor([1, {n}], device=d)\n"


class RecordingLinter(Linter):
    """Records whether automatic garbage collection was on while each file was linted."""

    def __init__(self):
        settings = Settings()
        rules = all_rules()
        super().__init__([rules[code] for code in settings.enabled_codes(rules)], settings)
        self.collector_enabled: list[bool] = []

    def lint(self, source):
        self.collector_enabled.append(gc.isenabled())
        return super().lint(source)


def write_files(tmp_path, count):
    for n in range(count):
        (tmp_path / f"m{n:03}.py").write_text(BLOCKING.format(n=n) if n % 3 else "import torch\n")
    return sorted(tmp_path.glob("*.py"))


def test_the_collector_is_paused_while_files_are_linted_and_restored_after(tmp_path):
    files = write_files(tmp_path, 5)
    linter = RecordingLinter()
    assert gc.isenabled()
    run_files(files, linter, "check", jobs=1)
    assert linter.collector_enabled == [False] * 5
    assert gc.isenabled()


def test_worker_processes_give_the_serial_results(tmp_path):
    files = write_files(tmp_path, PARALLEL_THRESHOLD + 6)
    serial = run_files(files, RecordingLinter(), "check", jobs=1)
    parallel = run_files(files, RecordingLinter(), "check", jobs=2)
    assert [(result.path, result.findings) for result in parallel] == \
        [(result.path, result.findings) for result in serial]
    assert sum(len(result.findings) for result in serial) == 20

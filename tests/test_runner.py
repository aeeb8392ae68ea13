"""Running many files: worker processes give the serial results; the garbage collector is paused, then restored."""

import gc

from h2dlint.engine import Linter
from h2dlint.rule import all_rules
from h2dlint.runner import PARALLEL_THRESHOLD, run_files
from h2dlint.settings import Settings

BLOCKING = "import torch\ndef forward(d, n):\n    return torch.tensor([1, {n}], device=d)\n"


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


def test_worker_processes_started_by_spawn_get_the_project_model(tmp_path):
    # spawn (macOS, Windows) and forkserver (Linux from Python 3.14) pickle the linter, with its project model,
    # into each worker; a model that does not pickle stops the run.
    import json
    import subprocess
    import sys

    write_files(tmp_path, PARALLEL_THRESHOLD + 6)
    (tmp_path / "pyproject.toml").write_text("[tool.h2dlint]\nhot-functions = ['f']\n")
    run = ("import multiprocessing, sys\n"
           "if __name__ == '__main__':\n"
           "    multiprocessing.set_start_method(sys.argv[1])\n"
           "    from h2dlint.cli import main\n"
           "    main(['check', '.', '--no-cache', '-j', '2', '--output-format', 'json'])\n")
    reports = {}
    for method in ("fork", "spawn"):
        done = subprocess.run([sys.executable, "-c", run, method], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 1, done.stderr
        reports[method] = [(finding["filename"], finding["location"]["row"], finding["code"])
                           for finding in json.loads(done.stdout)]
    assert reports["spawn"] == reports["fork"]
    assert len(reports["fork"]) == 20

"""The built wheel holds every module of the source tree, with the rule catalogue inside the package."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_wheel_has_every_module_and_no_top_level_rules(tmp_path):
    source = tmp_path / "source"  # a clean copy: a stale build/ folder would hide a missing package
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", ".h2dlint_cache", "__pycache__", ".pytest_cache", ".hypothesis"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(source),
                    "-w", str(tmp_path)], check=True, capture_output=True)
    [wheel] = tmp_path.glob("h2dlint-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"h2dlint/{path.relative_to(ROOT / 'h2dlint').as_posix()}" for path in (ROOT / "h2dlint").rglob("*.py")}
    expected |= {f"h2dlint/rules/{path.name}" for path in (ROOT / "rules").glob("*.py")}
    assert expected <= names, sorted(expected - names)
    assert not any(name.startswith("rules/") for name in names)

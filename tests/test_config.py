"""Configuration files, found and applied through the real CLI."""

import json

import pytest
from click.testing import CliRunner

from h2dlint.cli import main
from h2dlint.config import resolve_settings
from h2dlint.rule import all_rules

BLOCKING = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], device='cuda')\n"
UNSAFE = "import torch\ndef forward(data, device):\n    return torch.tensor(data, device=device)\n"


def run(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "src" / "model.py").write_text(BLOCKING)
    (tmp_path / "scripts" / "run_model.py").write_text(BLOCKING)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_pyproject(root, table):
    (root / "pyproject.toml").write_text(f'[project]\nname = "demo"\n\n[tool.h2dlint]\n{table}\n')


def reported_files(result):
    return sorted({finding["filename"] for finding in json.loads(result.output)})


def test_pyproject_table_per_file_ignores_and_output_format(project):
    write_pyproject(project, 'output-format = "json"\nper-file-ignores = { "scripts/*" = ["HDL1"] }')
    result = run(project)
    assert result.exit_code == 1
    assert reported_files(result) == [str(project / "src" / "model.py")]
    # from a sub-folder the same file is found, and the globs stay relative to its folder
    assert reported_files(run(project / "scripts", "--output-format", "json")) == []


def test_h2dlint_toml_uses_top_level_keys_and_wins_in_its_folder(project):
    write_pyproject(project, 'ignore = ["HDL101"]')
    (project / "h2dlint.toml").write_text('exclude = ["scripts"]\n')
    result = run(project, "--output-format", "json")
    assert reported_files(result) == [str(project / "src" / "model.py")]


def test_the_closest_configuration_wins(project):
    write_pyproject(project, 'ignore = ["HDL101"]')
    assert run(project).exit_code == 0
    (project / "src" / "pyproject.toml").write_text('[project]\nname = "inner"\n')  # no table: skipped
    assert run(project / "src").exit_code == 0
    (project / "src" / "h2dlint.toml").write_text('select = ["HDL101"]\n')
    assert run(project / "src").exit_code == 1


def test_command_line_overrides_configuration(project):
    write_pyproject(project, 'ignore = ["HDL101"]\nunsafe-fixes = true')
    assert run(project).exit_code == 0
    assert run(project, "--select", "HDL101").exit_code == 1  # --select replaces the file's selection
    (project / "src" / "unsafe.py").write_text(UNSAFE)
    assert run(project / "src" / "unsafe.py", "--select", "HDL101", "--fix", "--no-unsafe-fixes").exit_code == 1
    assert (project / "src" / "unsafe.py").read_text() == UNSAFE
    assert run(project / "src" / "unsafe.py", "--select", "HDL101", "--fix").exit_code == 0  # config: unsafe on
    assert "non_blocking=True" in (project / "src" / "unsafe.py").read_text()


def test_exclude_extend_exclude_and_force_exclude(project):
    write_pyproject(project, 'extend-exclude = ["scripts/"]')
    assert reported_files(run(project, "--output-format", "json")) == [str(project / "src" / "model.py")]
    named = project / "scripts" / "run_model.py"
    assert run(named).exit_code == 1  # a file named explicitly is checked...
    assert run(named, "--force-exclude").exit_code == 0  # ...unless --force-exclude
    assert run(project, "--exclude", "src", "--output-format", "json").exit_code == 0  # plus extend-exclude


def test_config_option_forces_a_file(project, tmp_path_factory):
    other = tmp_path_factory.mktemp("elsewhere") / "strict.toml"
    other.write_text('ignore = ["HDL101"]\n')
    assert run(project).exit_code == 1
    assert run(project, "--config", other).exit_code == 0
    settings = resolve_settings([project], all_rules(), other)
    assert settings.config_file == str(other)


@pytest.mark.parametrize(("content", "message"), [
    ('selct = ["HDL101"]', "unknown key `selct`"),
    ('select = "HDL101"', "`select` must be a list of strings"),
    ('unsafe-fixes = "yes"', "`unsafe-fixes` must be true or false"),
    ('output-format = "xml"', "`output-format` must be one of"),
    ('per-file-ignores = ["scripts/*"]', "`per-file-ignores` must be a table"),
    ('ignore = ["NOPE1"]', "unknown rule selector 'NOPE1'"),
    ('select = [', "invalid TOML"),
])
def test_bad_configuration_is_a_clear_error(project, content, message):
    write_pyproject(project, content)
    result = run(project)
    assert result.exit_code == 2
    assert message in result.output
    assert "pyproject.toml" in result.output


def test_rule_options_reach_the_rules(project):
    write_pyproject(project, 'pin-memory-helpers = ["pin_ok"]\nhot-functions = ["forward_step"]\n'
                             'gpu-device-names = ["self.device"]')
    (project / "src" / "model.py").write_text(
        "import torch\nfrom util import pin_ok\ndef forward(n, device):\n    return torch.tensor([n, n + 1], device=device)\n")
    settings = resolve_settings([project], all_rules())
    assert settings.hot_functions == ("forward_step",)
    assert settings.gpu_device_names == ("self.device",)
    assert run(project / "src", "--fix").exit_code == 0
    assert "pin_memory=pin_ok()" in (project / "src" / "model.py").read_text()


def test_show_settings(project):
    write_pyproject(project, 'extend-select = ["HDL003"]\nper-file-ignores = { "scripts/*" = ["HDL101"] }')
    result = run("show-settings", project / "src")
    assert result.exit_code == 0
    assert f"config file: {project / 'pyproject.toml'}" in result.output
    assert "enabled rules: HDL003, HDL101" in result.output
    assert "per-file-ignores: (('scripts/*', ('HDL101',)),)" in result.output
    (project / "pyproject.toml").unlink()
    assert "config file: (none: defaults)" in run("show-settings", project).output


def test_settings_are_resolved_once_per_run(project, monkeypatch):
    write_pyproject(project, 'ignore = ["HDL101"]')
    import h2dlint.config

    reads = []
    original = h2dlint.config.read_config
    monkeypatch.setattr(h2dlint.config, "read_config", lambda path: reads.append(path) or original(path))
    for index in range(5):
        (project / "src" / f"more{index}.py").write_text(BLOCKING)
    assert run(project, "--jobs", "1").exit_code == 0
    assert reads == [project / "pyproject.toml"]

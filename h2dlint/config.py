"""Configuration files: `[tool.h2dlint]` in pyproject.toml, or the top level of an h2dlint.toml.

The configuration closest above the checked paths is used, once for the whole
run; options given on the command line override it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .settings import Settings, SettingsError, check_selectors

if TYPE_CHECKING:
    from .rule import Rule

CONFIG_NAME = "h2dlint.toml"


def _load_toml(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        try:
            import tomli as tomllib
        except ImportError:
            raise SettingsError(f"{path}: reading configuration on Python {sys.version_info.major}."
                                f"{sys.version_info.minor} needs the `tomli` package (pip install tomli)") from None
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise SettingsError(f"{path}: cannot read: {error.strerror or error}") from error
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"{path}: invalid TOML: {error}") from error


def _table(path: Path) -> dict | None:
    """The h2dlint table of a configuration file; None for a pyproject.toml without one."""
    document = _load_toml(path)
    if path.name != "pyproject.toml":  # h2dlint.toml, or any file given with --config
        return document
    tool = document.get("tool", {})
    return tool.get("h2dlint") if isinstance(tool, dict) else None


def find_config(start: Path) -> Path | None:
    """The closest h2dlint.toml, or pyproject.toml with a [tool.h2dlint] table, in `start` or above."""
    folder = Path(os.path.abspath(start))
    for candidate_folder in (folder, *folder.parents):
        own = candidate_folder / CONFIG_NAME
        if own.is_file():
            return own
        pyproject = candidate_folder / "pyproject.toml"
        if pyproject.is_file() and _table(pyproject) is not None:
            return pyproject
    return None


def common_folder(paths: list[Path]) -> Path:
    """The folder the configuration search starts from: the deepest one holding every checked path."""
    if not paths:
        return Path.cwd()
    folders = [os.path.abspath(path if path.is_dir() else path.parent) for path in paths]
    return Path(os.path.commonpath(folders))


def _strings(key: str, value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SettingsError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    return tuple(value)


def _codes(key: str, value: object, where: str) -> tuple[str, ...]:
    return tuple(code.strip().upper() for code in _strings(key, value, where))


def _per_file_ignores(key: str, value: object, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: `{key}` must be a table of glob = [codes], got {value!r}")
    return tuple((glob, _codes(f"{key}.{glob}", codes, where)) for glob, codes in value.items())


def _bool(key: str, value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise SettingsError(f"{where}: `{key}` must be true or false, got {value!r}")
    return value


def _output_format(key: str, value: object, where: str) -> str:
    from .output import FORMATS

    if not isinstance(value, str) or value not in FORMATS:
        raise SettingsError(f"{where}: `{key}` must be one of {', '.join(sorted(FORMATS))}, got {value!r}")
    return value


def _path(key: str, value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise SettingsError(f"{where}: `{key}` must be a folder (a string), got {value!r}")
    return value


def _paths(key: str, value: object, where: str) -> tuple[str, ...]:
    return _strings(key, value, where)


# key in the file -> (Settings field, how to read the value)
KEYS = {
    "select": ("select", _codes),
    "extend-select": ("extend_select", _codes),
    "ignore": ("ignore", _codes),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _strings),
    "extend-exclude": ("extend_exclude", _strings),
    "force-exclude": ("force_exclude", _bool),
    "respect-gitignore": ("respect_gitignore", _bool),
    "unsafe-fixes": ("unsafe_fixes", _bool),
    "output-format": ("output_format", _output_format),
    "pin-memory-helpers": ("pin_memory_helpers", _strings),
    "hot-functions": ("hot_functions", _strings),
    "gpu-device-names": ("gpu_device_names", _strings),
    "project-model": ("project_model", _bool),
    "project-root": ("model_root", _path),
    "src": ("source_roots", _paths),
    "gpu-attributes": ("gpu_attributes", _strings),
    "module-inputs-on-gpu": ("module_inputs_on_gpu", _bool),
    "copies-outside-hot-code": ("copies_outside_hot_code", _bool),
}


def read_config(path: Path) -> dict:
    """The configuration in `path`, checked, as Settings field names -> values."""
    table = _table(path)
    where = f"{path} [tool.h2dlint]" if path.name == "pyproject.toml" else str(path)
    if table is None:
        raise SettingsError(f"{path}: no [tool.h2dlint] table")
    values = {}
    for key, value in table.items():
        if key not in KEYS:
            raise SettingsError(f"{where}: unknown key `{key}` (known: {', '.join(KEYS)})")
        name, read = KEYS[key]
        values[name] = read(key, value, where)
    return values


def _check_selectors(values: dict, rules: Mapping[str, type[Rule]], where: str) -> None:
    check_selectors([*values.get("select", ()), *values.get("extend_select", ()), *values.get("ignore", ()),
                     *(code for _, codes in values.get("per_file_ignores", ()) for code in codes)], rules, where)


def resolve_settings(paths: list[Path], rules: Mapping[str, type[Rule]], config: Path | None = None,
                     **cli: Any) -> Settings:
    """Settings for a run over `paths`: defaults, then the configuration file, then the command line.

    `cli` holds the command line's values by Settings field name; None or an
    empty tuple means "not given". `--select` replaces the file's selection
    (its ignores and extensions included); `--extend-select` and `--ignore` add
    to the file's; `--exclude` replaces the file's `exclude`, `extend-exclude`
    always adds; `--per-file-ignores` replaces the file's, `--extend-per-file-ignores`
    adds. Globs match paths relative to the configuration file's folder (or the
    current folder without one), or a file's name.
    """
    config = config if config is not None else find_config(common_folder(paths))
    values = read_config(config) if config is not None else {}
    if config is not None:
        _check_selectors(values, rules, str(config))
    if cli.get("select"):
        values.pop("extend_select", None)
        values.pop("ignore", None)
    for name in ("extend_select", "ignore"):
        values[name] = (*values.get(name, ()), *(cli.pop(name, None) or ()))
    exclude = cli.pop("exclude", None) or values.pop("exclude", ())
    exclude += values.pop("extend_exclude", ()) + (cli.pop("extend_exclude", None) or ())
    # The command line's per-file-ignores replace the file's; the extended ones add to them.
    per_file_ignores = (*(cli.pop("per_file_ignores", None) or values.pop("per_file_ignores", ())),
                        *(cli.pop("extend_per_file_ignores", None) or ()))
    if per_file_ignores:
        check_selectors([code for _, codes in per_file_ignores for code in codes], rules, "the command line")
        values["per_file_ignores"] = per_file_ignores
    values.update({name: value for name, value in cli.items() if value not in (None, ())})
    root = config.parent if config is not None else Path.cwd()
    # Folders in the configuration are relative to the file that names them.
    if "model_root" in values:
        values["model_root"] = str((root / values["model_root"]).resolve())
    if "source_roots" in values:
        values["source_roots"] = tuple(str((root / folder).resolve()) for folder in values["source_roots"])
    return replace(Settings(), **values, exclude=exclude, config_file=str(config) if config else None,
                   project_root=str(root))

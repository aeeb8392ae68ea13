"""Download the releases named in cases.toml and extract the files the recall benchmark scores.

    python benchmarks/recall/fetch.py                  # the case files only
    python benchmarks/recall/fetch.py --whole-tree     # every .py file of each release (for --project-root scoring)
    python benchmarks/recall/fetch.py --cache DIR --find /tmp/dl

Each release is fetched once with `pip download --no-deps` into `<cache>/dist/<package>-<version>/`
(an archive already lying in a `--find` folder is copied instead) and extracted into
`<cache>/src/<package>-<version>/`, paths as inside the wheel (an sdist's top folder is dropped).
Running it again downloads and extracts nothing that is already there. The default cache,
benchmarks/.trees/recall, is git-ignored: third-party code is never committed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CACHE = HERE.parent / ".trees" / "recall"
CASES = HERE / "cases.toml"

# Wheels with compiled parts may need a platform and a Python pip accepts for them here.
PLATFORMS = ["manylinux_2_24_x86_64", "manylinux_2_28_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64",
             "manylinux_2_35_x86_64"]
BINARY_FLAGS = ["--only-binary", ":all:", "--python-version", "3.12"]
BINARY_FLAGS += [x for p in PLATFORMS for x in ("--platform", p)]
ALWAYS_BINARY = {"vllm"}


def load_cases(path: Path = CASES) -> list[dict]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    with open(path, "rb") as f:
        return tomllib.load(f)["case"]


def releases(cases: list[dict]) -> dict[tuple[str, str], set[str]]:
    """(package, version) -> the case files needed from it."""
    out: dict[tuple[str, str], set[str]] = {}
    for case in cases:
        out.setdefault((case["package"], case["before"]), set()).add(case["path"])
        out.setdefault((case["package"], case["after"]), set()).add(case.get("after_path", case["path"]))
    return out


def _archive_name(package: str, version: str) -> re.Pattern:
    """A wheel or sdist file name of package==version (`-`, `_` and `.` in the name are interchangeable)."""
    name = "[-_.]".join(re.escape(part) for part in re.split(r"[-_.]+", package))
    return re.compile(rf"{name}-{re.escape(version)}(-[^/]*\.whl|\.tar\.gz)", re.IGNORECASE)


def _archive(dist_dir: Path) -> Path | None:
    found = [p for p in dist_dir.glob("*") if p.name.endswith((".whl", ".tar.gz", ".zip"))] if dist_dir.is_dir() else []
    return found[0] if found else None


def download(package: str, version: str, cache: Path, find: list[Path]) -> Path:
    dist_dir = cache / "dist" / f"{package}-{version}"
    archive = _archive(dist_dir)
    if archive:
        return archive
    dist_dir.mkdir(parents=True, exist_ok=True)
    wanted = _archive_name(package, version)
    for folder in find:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and wanted.fullmatch(p.name):
                shutil.copy(p, dist_dir / p.name)
                return dist_dir / p.name
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-build-isolation", "-q", "-d", str(dist_dir)]
    # First as this machine would install it; then as a Linux wheel for Python 3.12 (a release that
    # needs a newer Python than the one running here). Packages whose sdist cannot be prepared without
    # a GPU toolchain (vllm) are only ever taken as wheels.
    first = ["--only-binary", ":all:"] if package in ALWAYS_BINARY else []
    tries = [first, BINARY_FLAGS]
    err = ""
    for flags in tries:
        proc = subprocess.run(base + flags + [f"{package}=={version}"], capture_output=True, text=True)
        archive = _archive(dist_dir)
        if proc.returncode == 0 and archive:
            return archive
        err = proc.stderr[-2000:]
    raise SystemExit(f"could not download {package}=={version}:\n{err}")


def _members(archive: Path):
    """(name inside the package tree, reader) for every file of a wheel or sdist."""
    if archive.name.endswith(".whl") or archive.name.endswith(".zip"):
        zf = zipfile.ZipFile(archive)
        for info in zf.infolist():
            if not info.is_dir():
                yield info.filename, (lambda i=info: zf.read(i))
    else:
        tf = tarfile.open(archive)
        for m in tf.getmembers():
            if m.isfile():
                name = m.name.split("/", 1)[1] if "/" in m.name else m.name  # drop the sdist's top folder
                yield name, (lambda m=m: tf.extractfile(m).read())


def extract(archive: Path, dest: Path, paths: set[str], whole_tree: bool) -> int:
    """Write the wanted files under dest; returns how many were written."""
    marker = dest / ".whole-tree"
    if whole_tree and marker.exists():
        return 0
    if not whole_tree and all((dest / p).exists() for p in paths):
        return 0
    tops = {p.split("/", 1)[0] for p in paths}
    written = 0
    for name, read in _members(archive):
        wanted = name in paths or (whole_tree and name.endswith(".py") and name.split("/", 1)[0] in tops)
        if not wanted or ".." in name.split("/"):
            continue
        out = dest / name
        if out.exists():
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(read())
        written += 1
    missing = [p for p in paths if not (dest / p).exists()]
    if missing:
        raise SystemExit(f"{archive.name}: not in the archive: {', '.join(sorted(missing))}")
    if whole_tree:
        marker.touch()
    return written


def fetch_all(cache: Path, whole_tree: bool, find: list[Path], cases: list[dict] | None = None,
              quiet: bool = False) -> None:
    cases = cases if cases is not None else load_cases()
    for (package, version), paths in sorted(releases(cases).items()):
        start = time.time()
        archive = download(package, version, cache, find)
        n = extract(archive, cache / "src" / f"{package}-{version}", paths, whole_tree)
        if not quiet and (n or time.time() - start > 1):
            print(f"{package}=={version}: {archive.name}, {n} files extracted, {time.time() - start:.1f} s",
                  file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help="download and work folder (default: %(default)s)")
    parser.add_argument("--whole-tree", action="store_true",
                        help="extract every .py file of each release's top-level packages")
    parser.add_argument("--find", type=Path, action="append", default=[],
                        help="a folder of already downloaded archives to reuse")
    args = parser.parse_args()
    start = time.time()
    fetch_all(args.cache, args.whole_tree, args.find)
    dist = args.cache / "dist"
    size = sum(p.stat().st_size for p in dist.rglob("*") if p.is_file())
    print(f"{len(releases(load_cases()))} releases in {dist}: {size / 2**20:.0f} MiB; took {time.time() - start:.0f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()

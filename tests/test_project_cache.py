"""What one run of the project model leaves for the next: the summaries, the files' model keys and the hotness,
taken again only while the model they came from is the one the files make now."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from h2dlint import __version__
from h2dlint import project as project_module
from h2dlint.cache import CACHE_DIR_NAME
from h2dlint.project import ProjectModel, SummaryCache

from .test_project import BACKEND, BATCH, RUNNER, by_file, check, make_project


def edit(path: Path, text: str) -> None:
    """Write `text` and move the modification time on, as a later save would (however coarse the clock)."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def no_hotness_propagated(monkeypatch) -> None:
    def fail(self):
        raise AssertionError("hotness propagated again")

    monkeypatch.setattr(ProjectModel, "_propagate_hotness", fail)


def no_model_built(monkeypatch) -> None:
    def fail(*args, **kwargs):
        raise AssertionError("model built")

    monkeypatch.setattr(ProjectModel, "build", fail)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=RUNNER)
    assert by_file(check(tmp_path, cache=True)) == {"backend.py": [(6, "HDL201")]}
    return tmp_path


def test_an_edit_that_leaves_the_summary_as_it_was_keeps_the_models_hotness(project, monkeypatch):
    backend = project / "pkg" / "backend.py"
    edit(backend, BACKEND.replace(".max().item()", ".max().item()  # noqa: HDL201"))
    with monkeypatch.context() as patched:
        no_hotness_propagated(patched)
        assert check(project, cache=True) == []
    assert check(project) == []
    edit(backend, BACKEND + "# a comment at the end\n")
    with monkeypatch.context() as patched:
        no_hotness_propagated(patched)
        assert by_file(check(project, cache=True)) == {"backend.py": [(6, "HDL201")]}
        assert by_file(check(project, cache=True)) == {"backend.py": [(6, "HDL201")]}  # all from the cache now


def test_a_file_touched_but_unchanged_builds_no_model(project, monkeypatch):
    batch = project / "pkg" / "batch.py"
    edit(batch, BATCH)
    with monkeypatch.context() as patched:
        no_model_built(patched)
        assert by_file(check(project, cache=True)) == {"backend.py": [(6, "HDL201")]}
        assert by_file(check(project, cache=True)) == {"backend.py": [(6, "HDL201")]}


def test_an_edit_to_the_calls_of_a_function_builds_the_model_again(project, monkeypatch):
    runner = project / "pkg" / "runner.py"
    edit(runner, RUNNER.replace("return self.backend.plan_later(batch)", "return batch"))
    assert check(project, cache=True) == check(project) == []
    edit(runner, RUNNER)
    assert by_file(check(project, cache=True)) == by_file(check(project)) == {"backend.py": [(6, "HDL201")]}
    with monkeypatch.context() as patched:
        no_model_built(patched)
        assert by_file(check(project, cache=True)) == {"backend.py": [(6, "HDL201")]}


def test_an_edit_to_a_class_in_one_file_changes_the_findings_in_another_both_ways(project):
    batch = project / "pkg" / "batch.py"
    # Only the body of a new method, which says nothing of the class, is added: the findings stay.
    edit(batch, BATCH + "\n    def size(self):\n        return 1\n")
    assert by_file(check(project, cache=True)) == by_file(check(project)) == {"backend.py": [(6, "HDL201")]}
    edit(batch, BATCH.replace("    seq_lens_cpu: torch.Tensor = None\n", ""))
    assert check(project, cache=True) == check(project) == []
    edit(batch, BATCH)
    assert by_file(check(project, cache=True)) == by_file(check(project)) == {"backend.py": [(6, "HDL201")]}


def test_a_new_file_builds_the_model_again(project):
    (project / "pkg" / "other.py").write_text("from pkg.backend import Backend\n\n\ndef forward(b: Backend, x):\n"
                                              "    return b.warm_up(x)\n")
    expected = by_file(check(project))
    assert (12, "HDL201") in expected.get("backend.py", [])  # warm_up is hot now, through other.forward
    assert by_file(check(project, cache=True)) == expected


def test_summaries_made_by_other_h2dlint_code_are_not_taken(tmp_path, monkeypatch):
    cache = SummaryCache(tmp_path)
    cache.store("a.py", 1, 2, {"module": "a"})
    cache.save({"a.py"})
    assert SummaryCache(tmp_path).lookup("a.py", 1, 2) == {"module": "a"}
    monkeypatch.setattr(project_module, "code_fingerprint", lambda: "other code")
    assert SummaryCache(tmp_path).lookup("a.py", 1, 2) is None


def test_a_summary_the_cache_cannot_decode_is_made_again(tmp_path):
    cache = SummaryCache(tmp_path)
    cache.store("a.py", 1, 2, {"module": "a"})
    cache.save({"a.py"})
    assert SummaryCache(tmp_path).lookup("a.py", 1, 2) == {"module": "a"}
    assert SummaryCache(tmp_path).lookup("a.py", 1, 3) is None
    cache.store_encoded("a.py", 1, 2, b"\xff not marshal")
    cache.save({"a.py"})
    assert SummaryCache(tmp_path).lookup("a.py", 1, 2) is None


def test_a_summary_does_not_depend_on_the_hash_seed(tmp_path):
    # The next run compares summaries in order to tell whether the model is the same: one built from a set (whose
    # order follows the process's string hashes) would look changed in every run, and the model be built again.
    names = [f"builder_{index}" for index in range(12)]
    body = "".join(f"        {name} = Builder()\n        {name}.build()\n" for name in names)
    source = tmp_path / "runner.py"
    source.write_text(f"class Builder:\n    def build(self):\n        pass\n\n\nclass Runner:\n    def step(self):\n{body}")
    script = ("import marshal, sys; from h2dlint.project import summarize_file; "
              f"sys.stdout.buffer.write(marshal.dumps(summarize_file({str(source)!r}, (), {str(tmp_path)!r})))")
    summaries = {subprocess.run([sys.executable, "-c", script], capture_output=True, check=True,
                                env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(summaries) == 1
    assert "builder_0" in marshal.loads(summaries.pop())["functions"]["Runner.step"]["locals"]


def test_a_changed_summary_rewrites_only_its_shard_of_the_cache(tmp_path):
    paths = [f"/src/pkg/module_{number}.py" for number in range(64)]
    cache = SummaryCache(tmp_path)
    for path in paths:
        cache.store(path, 1, 2, {"module": path})
    cache.save(set(paths))
    shards = sorted(tmp_path.glob("summaries-*.marshal"))
    assert len(shards) > 8  # 64 paths fall in most of the shards
    inodes = {shard: shard.stat().st_ino for shard in shards}

    again = SummaryCache(tmp_path)
    assert again.lookup(paths[5], 1, 2) == {"module": paths[5]}
    assert len(again.shards) == 1  # a lookup reads the shard of its path alone
    again.store(paths[5], 1, 3, {"module": "edited"})
    again.save(set(paths))
    replaced = [shard for shard in shards if shard.stat().st_ino != inodes[shard]]
    assert len(replaced) == 1
    assert SummaryCache(tmp_path).lookup(paths[5], 1, 3) == {"module": "edited"}
    assert all(SummaryCache(tmp_path).lookup(path, 1, 2) == {"module": path} for path in paths if path != paths[5])


def test_the_summaries_of_deleted_files_leave_the_shards_read(tmp_path):
    cache = SummaryCache(tmp_path)
    cache.store("/src/a.py", 1, 2, {"module": "a"})
    cache.store("/src/b.py", 1, 2, {"module": "b"})
    cache.save({"/src/a.py", "/src/b.py"})
    again = SummaryCache(tmp_path)
    assert again.lookup("/src/b.py", 1, 2) == {"module": "b"}
    again.save({"/src/a.py"})  # b.py is gone: its shard, read, is written without it
    assert SummaryCache(tmp_path).lookup("/src/b.py", 1, 2) is None
    assert SummaryCache(tmp_path).lookup("/src/a.py", 1, 2) == {"module": "a"}


def test_the_model_files_of_earlier_versions_are_pruned_and_those_in_use_kept(project):
    """Each version, and each summary format, names its files anew: those no run has used for a week go when the
    findings cache saves, as its own old files do; the current ones stay, read or not, however old."""
    folder = project / CACHE_DIR_NAME
    current = sorted(path.name for path in folder.glob("*.marshal"))
    assert any(name.startswith("summaries-") for name in current) and f"model-{__version__}.marshal" in current
    earlier = ["summaries-0123456789abcdef.marshal", "summaries-0123456789abcdef-07.marshal",
               "model-0.0.9.marshal", "model-0.0.9-hot.marshal", "model-0.0.9-journal.marshal"]
    for name in earlier:
        (folder / name).write_bytes(b"old")
    for path in folder.glob("*.marshal"):
        os.utime(path, (0, 0))  # the current ones too: a run uses them whether it reads them or not
    edit(project / "pkg" / "backend.py", BACKEND + "# a comment at the end\n")  # something for the cache to save
    assert by_file(check(project, cache=True)) == {"backend.py": [(6, "HDL201")]}
    after = sorted(path.name for path in folder.glob("*.marshal"))
    assert after == current, (after, current)

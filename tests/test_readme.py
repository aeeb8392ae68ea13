"""The README stays true to the code: its rule table is the rule classes', it names every option, format and
configuration key, its commands are the ones CI runs, and the links of the documentation resolve."""

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from h2dlint.cli import check
from h2dlint.config import KEYS
from h2dlint.output import FORMATS
from h2dlint.rule import all_rules

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
TEST_COMMAND = ("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' torch==2.13.0 && .venv/bin/python -m pytest "
                "&& .venv/bin/ruff check . && .venv/bin/mypy")
QUICK_START = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/h2dlint examples/quickstart.py"


def rule_table_script():
    spec = importlib.util.spec_from_file_location("rule_table", ROOT / "scripts" / "rule_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rule_table_is_generated_from_the_rule_classes():
    script = rule_table_script()
    assert script.with_table(README) == README, "the README's rule table is out of date: run scripts/rule_table.py"
    rows = [line for line in README.splitlines() if re.match(r"\| [A-Z]+[0-9]+ \|", line)]
    assert [row.split(" | ")[0][2:] for row in rows] == list(all_rules())


def test_rule_table_says_which_fixes_a_rule_offers():
    script = rule_table_script()
    rules = all_rules()
    assert script.fix_kinds(rules["HDL103"]) == "safe"
    assert script.fix_kinds(rules["HDL304"]) == "unsafe"
    assert script.fix_kinds(rules["HDL101"]) == "safe or unsafe"
    assert script.fix_kinds(rules["HDL201"]) == "none"


def test_readme_is_short():
    assert len(README.splitlines()) <= 300


def bash_blocks(text: str) -> list[str]:
    return [line for block in re.findall(r"```bash\n(.*?)```", text, re.S) for line in block.splitlines()]


def test_the_readme_commands_are_the_ones_ci_and_users_run():
    lines = bash_blocks(README)
    assert QUICK_START in lines
    assert TEST_COMMAND in lines
    assert (ROOT / "examples" / "quickstart.py").is_file()
    # .ci/run runs the README's test command, with pip told to be quiet.
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("python3 -m venv")]
    assert [shlex.split(line.replace(" -q ", " ")) for line in ci] == [shlex.split(TEST_COMMAND)]


def test_readme_names_every_option_format_and_key():
    for option in check.params:
        if option.param_type_name == "option" and not option.hidden:
            assert any(f"`{name}" in README for name in option.opts), option.opts
    for name in FORMATS:
        assert f"`{name}`" in README, name
    toml = re.search(r"```toml\n(.*?)```", README, re.S).group(1)
    assert {line.split(" = ")[0] for line in toml.splitlines() if " = " in line} == set(KEYS)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", DOCS, ids=lambda page: str(page.relative_to(ROOT)))
def test_links_resolve(page):
    text = page.read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}"
        if fragment and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", linked.read_text(encoding="utf-8"),
                                                       flags=re.S), re.M)
            assert fragment in {anchor(heading) for heading in headings}, f"{page.name}: {target}"

"""The CI output formats, -o, --statistics and --show-fixes, through the real CLI."""

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from h2dlint.ci_formats import github_annotation
from h2dlint.cli import main
from h2dlint.model import Finding, Position

from .helpers import COPIES_ANYWHERE, commit_all, git

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())
REPO = Path(__file__).resolve().parent.parent

# Line 5 holds non-ASCII text before the finding, so byte and code point columns differ.
NON_ASCII = (
    "import torch\n"
    "\n"
    "def forward(device, x):\n"
    "    # «ünïcode» comment\n"
    '    table = {"é→": torch.tensor([1, 2, 3], device=device)}\n'
    "    return torch.tensor(x, device=device)\n"
)
MULTI_LINE = "import torch\ny = torch.tensor(\n    [1, 2],\n    device='cuda',\n)\n"
CLEAN = "import torch\nx = torch.tensor([1, 2])\n"


def run(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder holding findings, made the current folder so reports use relative paths."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "non ascii.py").write_text(NON_ASCII, encoding="utf-8")
    (tmp_path / "pkg" / "multi.py").write_text(MULTI_LINE)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    shutil.copy(COPIES_ANYWHERE, tmp_path / "h2dlint.toml")  # multi.py's module-level copy is a finding
    monkeypatch.chdir(tmp_path)
    return tmp_path


def fixed_text(project, name):
    """What `--fix --unsafe-fixes` makes of a file, from a copy: the reference for every format's fixes."""
    copy = project / "fixed" / name
    copy.parent.mkdir(exist_ok=True)
    shutil.copy(project / "pkg" / name, copy)
    run(copy, "--fix", "--unsafe-fixes")
    text = copy.read_text(encoding="utf-8")
    shutil.rmtree(copy.parent)
    return text


def test_github_annotations_then_the_concise_report(project):
    result = run("pkg", "--output-format", "github")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    annotations = [line for line in lines if line.startswith("::error ")]
    assert len(annotations) == 3
    # Columns count code points, 1-based: "    table = {\"é→\": " is 19 code points.
    assert annotations[1] == ("::error file=pkg/non ascii.py,line=5,endLine=5,col=20,endColumn=58,"
                              "title=h2dlint (HDL101)::HDL101 " + json.loads(
                                  run("pkg/non ascii.py", "--output-format", "json").output)[0]["message"])
    # A range over several lines keeps its lines but drops the columns GitHub would reject.
    assert annotations[0].startswith("::error file=pkg/multi.py,line=2,endLine=5,title=h2dlint (HDL101)::")
    assert lines[len(annotations):] == run("pkg", "--output-format", "concise").output.splitlines()


def test_github_escapes_messages_and_properties():
    finding = Finding(path="a,b:c%d.py", start=Position(3, 0), end=Position(3, 4), code="HDL101",
                      message="100% of\r\nthe: time, always")
    assert github_annotation(finding) == (
        "::error file=a%2Cb%3Ac%25d.py,line=3,endLine=3,col=1,endColumn=5,title=h2dlint (HDL101)"
        "::HDL101 100%25 of%0D%0Athe: time, always")


def test_sarif_is_valid_and_its_fixes_reproduce_fix(project):
    result = run("pkg", "--output-format", "sarif")
    assert result.exit_code == 1
    log = json.loads(result.output)
    jsonschema.validate(log, SCHEMA)
    [sarif_run] = log["runs"]
    assert sarif_run["columnKind"] == "unicodeCodePoints"
    assert sarif_run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.as_uri() + "/"
    rules = sarif_run["tool"]["driver"]["rules"]
    hdl101 = next(rule for rule in rules if rule["id"] == "HDL101")
    assert hdl101["name"] == "blocking-tensor-copy"
    assert "## Fix safety" in hdl101["help"]["markdown"] and "## Fix safety" in hdl101["help"]["text"]
    assert hdl101["fullDescription"]["text"].startswith("Finds `torch.tensor(data, device=...)`")

    results = [result for result in sarif_run["results"]
               if result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/non%20ascii.py"]
    assert len(results) == 2
    first = results[0]
    assert rules[first["ruleIndex"]]["id"] == first["ruleId"] == "HDL101"
    assert first["level"] == "error"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    assert location["region"] == {"startLine": 5, "startColumn": 20, "endLine": 5, "endColumn": 58}
    assert results[1]["fixes"][0]["properties"]["applicability"] == "unsafe"

    text = NON_ASCII.splitlines(keepends=True)
    replacements = [replacement for result in results for fix in result["fixes"]
                    for change in fix["artifactChanges"] for replacement in change["replacements"]]
    for replacement in sorted(replacements, key=lambda r: (r["deletedRegion"]["startLine"],
                                                           r["deletedRegion"]["startColumn"]), reverse=True):
        region = replacement["deletedRegion"]
        assert region["startLine"] == region["endLine"]
        line = text[region["startLine"] - 1]
        text[region["startLine"] - 1] = (line[:region["startColumn"] - 1] + replacement["insertedContent"]["text"]
                                         + line[region["endColumn"] - 1:])
    assert "".join(text) == fixed_text(project, "non ascii.py")


def test_sarif_of_a_clean_run_is_valid_with_no_results(project):
    result = run("pkg/clean.py", "--output-format", "sarif")
    assert result.exit_code == 0
    log = json.loads(result.output)
    jsonschema.validate(log, SCHEMA)
    assert log["runs"][0]["results"] == []


def test_rdjson_counts_columns_in_utf8_bytes_and_suggests_the_fix(project):
    result = run("pkg/non ascii.py", "--output-format", "rdjson")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["source"]["name"] == "h2dlint"
    safe, unsafe = report["diagnostics"]
    line = NON_ASCII.splitlines()[4].encode("utf-8")
    start = line.index(b"torch.tensor") + 1
    end = line.index(b"}") + 1
    assert start == 20 + 3  # "é→" is 2 code points, 5 bytes
    assert safe["location"] == {"path": "pkg/non ascii.py",
                                "range": {"start": {"line": 5, "column": start}, "end": {"line": 5, "column": end}}}
    assert safe["code"] == {"value": "HDL101"} and safe["severity"] == "ERROR"
    [suggestion] = safe["suggestions"]
    patched = line[:start - 1] + suggestion["text"].encode() + line[end - 1:]
    assert patched.decode() == fixed_text(project, "non ascii.py").splitlines()[4]
    assert "suggestions" not in unsafe  # an unsafe fix is suggested only with --unsafe-fixes
    with_unsafe = json.loads(run("pkg/non ascii.py", "--output-format", "rdjson", "--unsafe-fixes").output)
    assert "suggestions" in with_unsafe["diagnostics"][1]


def test_gitlab_fingerprints_follow_the_code_not_the_line_number(project):
    path = project / "pkg" / "twice.py"
    body = "import torch\nx = torch.tensor([1, 2], device='cuda')\nx = torch.tensor([1, 2], device='cuda')\n"
    path.write_text(body)
    first = json.loads(run(path.relative_to(project), "--output-format", "gitlab").output)
    path.write_text("# a new first line\n" + body)
    moved = json.loads(run(path.relative_to(project), "--output-format", "gitlab").output)
    assert [issue["location"]["lines"]["begin"] for issue in first] == [2, 3]
    assert [issue["location"]["lines"]["begin"] for issue in moved] == [3, 4]
    assert [issue["fingerprint"] for issue in first] == [issue["fingerprint"] for issue in moved]
    assert first[0]["fingerprint"] != first[1]["fingerprint"]  # the same line twice: still two issues
    for issue in first:
        assert issue["check_name"] == "HDL101" and issue["severity"] == "major"
        assert issue["location"]["path"] == "pkg/twice.py"
        assert issue["description"].startswith("HDL101 `torch.tensor` copies host data")
    path.write_text(body.replace("[1, 2]", "[2, 3]", 1))
    changed = json.loads(run(path.relative_to(project), "--output-format", "gitlab").output)
    assert changed[0]["fingerprint"] != first[0]["fingerprint"]


def test_junit_one_case_per_file_one_failure_per_finding(project):
    awkward = project / "pkg" / "a&b<c>\x01.py"
    awkward.write_text("import torch\nx = torch.tensor([1, 2], device='cuda')\n")
    result = run("pkg", "--output-format", "junit")
    assert result.exit_code == 1
    suites = ElementTree.fromstring(result.output.encode())
    cases = {case.get("name"): case for case in suites.iter("testcase")}
    assert set(cases) == {"pkg/a&b<c>\ufffd.py", "pkg/clean.py", "pkg/multi.py", "pkg/non ascii.py"}
    assert len(cases["pkg/non ascii.py"].findall("failure")) == 2
    assert cases["pkg/clean.py"].findall("failure") == []
    [failure] = cases["pkg/a&b<c>\ufffd.py"].findall("failure")
    assert failure.get("type") == "HDL101"
    assert failure.text.startswith("pkg/a&b<c>\ufffd.py:2:5: HDL101 ")
    assert suites.get("failures") == "4" and suites.get("tests") == "4"


def test_json_lines_holds_the_json_elements(project):
    lines = run("pkg", "--output-format", "json-lines").output.splitlines()
    assert [json.loads(line) for line in lines] == json.loads(run("pkg", "--output-format", "json").output)
    assert len(lines) == 3


def test_output_file_takes_the_report_and_keeps_the_exit_code(project):
    target = project / "reports" / "nested" / "h2dlint.sarif"
    result = run("pkg", "--output-format", "sarif", "-o", target)
    assert result.exit_code == 1
    assert result.output == ""
    jsonschema.validate(json.loads(target.read_text(encoding="utf-8")), SCHEMA)
    result = run("pkg", "--output-format", "full", "--output-file", project / "report.txt")
    assert result.exit_code == 1 and result.output == ""
    report = (project / "report.txt").read_text(encoding="utf-8")
    assert "\x1b[" not in report
    assert '5 |     table = {"é→": torch.tensor([1, 2, 3], device=device)}' in report
    blocked = run("pkg", "-o", project / "pkg" / "clean.py" / "report.txt")
    assert blocked.exit_code == 2 and "cannot write" in blocked.output


def test_statistics_counts_per_code(project):
    result = run("pkg", "--statistics")
    assert result.exit_code == 1
    assert result.output == "3\tHDL101\t[*] blocking-tensor-copy\n"
    broken = project / "pkg" / "broken.py"
    broken.write_text("import torch\ndef f(:\n    return torch.tensor([1, 2], device='cuda')\n")
    rows = json.loads(run("pkg", "--statistics", "--output-format", "json").output)
    assert rows == [{"code": "HDL101", "name": "blocking-tensor-copy", "count": 3, "fixable": True},
                    {"code": "HDL001", "name": "syntax-error", "count": 1, "fixable": False}]
    text = run("pkg", "--statistics", "--output-format", "concise").output.splitlines()
    assert text == ["3\tHDL101\t[*] blocking-tensor-copy", "1\tHDL001\t[ ] syntax-error"]
    refused = run("pkg", "--statistics", "--output-format", "sarif")
    assert refused.exit_code == 2 and "--statistics works with" in refused.output


def test_show_fixes_lists_what_fix_changed(project):
    result = run("pkg", "--fix", "--show-fixes", "--output-format", "concise")
    assert result.exit_code == 1  # the unsafe fix is left
    assert "Fixed 2 errors:\n- pkg/multi.py:\n    1 × HDL101 (blocking-tensor-copy)\n" \
           "- pkg/non ascii.py:\n    1 × HDL101 (blocking-tensor-copy)\n" in result.output
    assert result.output.rstrip().splitlines()[-2:] == [
        "Found 3 errors (2 fixed, 1 remaining).",
        "1 hidden fix can be enabled with the `--unsafe-fixes` option."]
    nothing = run("pkg", "--fix", "--show-fixes", "--output-format", "concise")
    assert "Fixed" not in nothing.output


def test_real_subprocess_writes_valid_sarif_and_github_lines(project):
    env = {**os.environ, "FORCE_COLOR": "1"}  # as on CI runners that force colour
    completed = subprocess.run([sys.executable, "-m", "h2dlint", "pkg", "--output-format", "sarif", "-o", "out.sarif"],
                               capture_output=True, text=True, env=env)
    assert completed.returncode == 1, completed.stderr
    jsonschema.validate(json.loads((project / "out.sarif").read_text(encoding="utf-8")), SCHEMA)
    completed = subprocess.run([sys.executable, "-m", "h2dlint", "pkg", "--output-format", "github"],
                               capture_output=True, text=True, env=env)
    assert completed.returncode == 1
    assert completed.stdout.startswith("::error file=pkg/multi.py,line=2,endLine=5,title=h2dlint (HDL101)::HDL101 ")


def test_action_yml_runs_h2dlint_with_its_inputs(project):
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) >= {"paths", "args", "changed-since", "sarif-file"}
    install, lint = action["runs"]["steps"]
    assert '"$GITHUB_ACTION_PATH"' in install["run"]
    script = Path(sys.executable).parent / "h2dlint"
    if not script.exists():
        pytest.skip("no h2dlint console script next to this Python")
    # A pull request adds one finding to clean.py; multi.py's finding was there before.
    git(project, "init", "-q")
    commit_all(project, "base")
    with (project / "pkg" / "clean.py").open("a") as clean:
        clean.write("y = torch.tensor([3, 4], device='cuda')\n")
    # Run the lint step's script as the runner would (bash -e), with this environment's h2dlint.
    env = {**os.environ, "H2DLINT": str(script), "INPUT_PATHS": "pkg/multi.py pkg/clean.py",
           "INPUT_ARGS": "--select HDL1", "INPUT_CHANGED_SINCE": "HEAD", "INPUT_SARIF_FILE": "results.sarif"}
    completed = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", lint["run"]],
                               capture_output=True, text=True, env=env)
    assert completed.returncode == 1, completed.stderr
    annotations = [line for line in completed.stdout.splitlines() if line.startswith("::")]
    assert [line.split(",")[:2] for line in annotations] == [["::error file=pkg/clean.py", "line=3"]]
    sarif = json.loads((project / "results.sarif").read_text(encoding="utf-8"))
    jsonschema.validate(sarif, SCHEMA)
    assert len(sarif["runs"][0]["results"]) == 2  # the SARIF report covers every line


@pytest.mark.parametrize("output_format", ["full", "concise"])
def test_unstyled_report_is_what_rich_prints(tmp_path, output_format):
    """Where nothing is styled the report is written without Rich: it must be Rich's text to the byte (tabs
    expanded by terminal cells after a wide character, control codes dropped, CRLF and CR-only files)."""
    from io import StringIO

    from rich.console import Console

    from h2dlint.cli import ReportOptions
    from h2dlint.config import resolve_settings
    from h2dlint.engine import Linter
    from h2dlint.output import FORMATS
    from h2dlint.rule import all_rules
    from h2dlint.runner import run_files

    sources = {
        "tabs.py": 'import torch\ndef forward(ids, out):\n\tx = torch.tensor(ids,\tdevice="cuda")  # 中\tx\n'
                   "\tout.copy_(x)\n\treturn out\n",
        "crlf.py": 'import torch\r\ndef forward(ids):\r\n    # 文\x1b[31m \x07\x0c\r\n'
                   '    x = torch.tensor(ids, device="cuda")  # 中\t文\r\n    return x.item()\r\n',
        "cr.py": 'import torch\rdef forward(ids):\r    x = torch.tensor(ids, device="cuda")\r    return x.item()\r',
    }
    for name, text in sources.items():
        (tmp_path / name).write_bytes(text.encode("utf-8"))
    rules = all_rules()
    settings = resolve_settings([tmp_path], rules, None)
    linter = Linter([rules[code] for code in settings.enabled_codes(rules)], settings)
    results = run_files(sorted(tmp_path.glob("*.py")), linter, "check")
    options = ReportOptions(unsafe_fixes=False, quiet=False)

    def report(record: bool) -> str:
        out = StringIO()
        # A recording console takes Rich's own path; both print with no colour system, as into a pipe.
        FORMATS[output_format](Console(file=out, color_system=None, record=record, highlight=False, soft_wrap=True),
                               results, options)
        return out.getvalue()

    direct = report(record=False)
    assert sum(len(result.findings) for result in results) >= 5
    if output_format == "full":  # the code frames hold the awkward text
        assert "中" in direct and "\x1b[31m" in direct and "\x07" not in direct and "\r" not in direct
    assert direct == report(record=True)

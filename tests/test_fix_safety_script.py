"""scripts/fix_safety.py: a fix that pins numpy data is flagged; h2dlint's own fixes on the same code are not."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "scripts" / "fix_safety.py"
CODE = """\
import numpy as np
import torch


def forward(rows, device):
    table = np.concatenate(rows)
    lengths = [len(row) for row in rows]
    return torch.tensor(table, device=device), torch.tensor(lengths, device=device)
"""


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          cwd=SCRIPT.parent.parent)


def test_h2dlint_fixes_pass_and_a_fix_pinning_numpy_data_is_flagged(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "model.py").write_text(CODE)
    saved = tmp_path / "saved"
    completed = run(tree, "--save", saved, "--jobs", "1")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    # h2dlint pins `lengths` (a list) and leaves the numpy table alone.
    assert "tree                    2      1         1  static: no evidence against pinning: 1" in completed.stdout
    findings = json.loads((saved / "tree.json").read_text())
    [fixed] = [finding for finding in findings if finding["fix"]]
    assert fixed["location"]["row"] == 8 and "lengths" in fixed["fix"]["edits"][0]["content"]

    # The rewrite an older h2dlint wrote for the table, labelled safe: flagged, exit 1.
    [table] = [finding for finding in findings if not finding["fix"]]
    table["fix"] = {"applicability": "safe", "message": "Build the tensor in pinned memory", "edits": [
        {**fixed["fix"]["edits"][0], "content": "torch.tensor(table, pin_memory=torch.cuda.is_available())"
                                                ".to(device, non_blocking=True)"}]}
    (saved / "tree.json").write_text(json.dumps(findings))
    completed = run(tree, "--save", saved)
    assert completed.returncode == 1
    assert "FLAGGED: safe, but the data may be numpy or a tensor: 1" in completed.stdout
    assert "evidence: numpy: np.concatenate(rows)" in completed.stdout

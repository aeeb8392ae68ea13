#!/usr/bin/env bash
# The verifier's GPU suite and stall benchmark, on a machine whose python already has torch with CUDA.
# Usage: scripts/gpu_check.sh   (each step has a time limit; 8 minutes at most after the install)
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
"$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA GPU visible to torch')" || exit 2
"$PYTHON" -m pip install -q -e '.[test]' || exit 2
"$PYTHON" -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name())"

status=0
step() {  # name, seconds allowed, expected exit status, command...
    local name=$1 seconds=$2 expected=$3; shift 3
    timeout "$seconds" "$@"; local got=$?
    if [ "$got" -eq "$expected" ]; then results+=("$name|pass"); else results+=("$name|FAIL (exit $got, expected $expected)"); status=1; fi
}
results=()
step "pytest -m cuda (GPU tests, --run on a GPU)" 150 0 "$PYTHON" -m pytest -q -m cuda tests/test_verify.py
step "pinned branch: fixtures, rule examples" 150 0 "$PYTHON" -m pytest -q -k "pinned_branch or numpy" tests/test_fixtures.py tests/test_rule_examples.py
step "verify --examples (pinned branch, real pins)" 60 0 "$PYTHON" -m h2dlint verify --examples
step "verify fixtures/ (stall benchmark)" 60 0 "$PYTHON" -m h2dlint verify
step "verify verify_negatives/ (each one flagged)" 60 1 "$PYTHON" -m h2dlint verify verify_negatives

echo
printf '%-42s %s\n' "check" "result"
for row in "${results[@]}"; do printf '%-42s %s\n' "${row%%|*}" "${row#*|}"; done
exit $status

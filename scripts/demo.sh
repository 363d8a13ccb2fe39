#!/bin/sh
# make demo: the main job on a bundled task. Validate the task, check and time an
# honest faster candidate against the reference, show a cheat being caught, then run the
# optimisation loop on the task's template and print its lineage, write its report
# (build/demo/report.html: the run itself is removed at the end), and export its winners
# (as a PyTorch op too, when the project's python3 has torch).
set -u
B=${1:-build}
K="$B/kforge"
T=tasks/c/softmax
run() {
    echo
    echo "\$ $*"
    "$@"
    echo "(exit $?)"
}
echo "kforge demo on the bundled task $T (row softmax)"
run "$K" validate "$T"
run "$K" check "$T" "$T/candidates/fast.c"
run "$K" bench "$T" "$T/candidates/fast.c"
echo
echo "A cheat that skips every other row is caught, with the reason and the shape:"
run "$K" check "$T" tests/redteam/12_softmax_every_other_row.c
echo
echo "The optimisation loop: the builtin proposer walks the template's kforge:param space;"
echo "every evaluation is checked, timed against its parent and recorded (docs/run.md):"
D=$(mktemp -d)
R=$D/run
# the run's seal key (docs/run.md "Seals") beside it, so the demo leaves nothing behind
export KFORGE_KEYS=$D/keys
run "$K" run "$T" --budget 6 --run "$R" --min-runs 8 --max-runs 20 --min-time 0.05
run "$K" tree "$R"
run "$K" best "$R"
echo
echo "The whole path as one page (timeline, tree, winners, roofline, failures, integrity):"
mkdir -p "$B/demo"
run "$K" report "$R" -o "$B/demo/report.html"
echo
echo "Export the winners and a dispatcher that picks one by shape; the dispatcher is checked"
echo "and timed like any candidate before it is written:"
PY=${KFORGE_PYTHON:-.venv/bin/python3}
if "$PY" -c 'import torch' 2>/dev/null; then
    echo "and, with --torch, as a PyTorch op (torch.ops.kforge.softmax) with its own test against"
    echo "the reference; its first build takes a minute (docs/torch.md):"
    run "$K" export "$R" -o "$(dirname "$R")/export" --torch --min-runs 8 --max-runs 20 --min-time 0.05
    echo
    echo "The same task with a PyTorch reference (tasks/c/softmax_torch/reference.py):"
    run "$K" check tasks/c/softmax_torch "$T/candidates/fast.c"
else
    run "$K" export "$R" -o "$(dirname "$R")/export" --min-runs 8 --max-runs 20 --min-time 0.05
    echo "(no torch in $PY: 'make deps' installs it; then this export adds --torch, docs/torch.md)"
fi
echo
echo "Kill it at any moment and 'kforge run --resume RUN' carries on."
rm -rf "$(dirname "$R")"
echo "Machine-readable: add --json (docs/cli.md). Exit codes: 0 accepted, 1 rejected, 2 error."
echo "The run's report: $(cd "$B/demo" && pwd)/report.html (open it in a browser; docs/report.md)"

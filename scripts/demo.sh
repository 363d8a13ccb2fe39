#!/bin/sh
# make demo: the main job on a bundled task. Validate the task, check and time an
# honest faster candidate against the reference, show a cheat being caught, then run the
# optimisation loop on the task's template and print its lineage, and write its report
# (build/demo/report.html: the run itself is removed at the end).
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
run "$K" export "$R" -o "$(dirname "$R")/export" --min-runs 8 --max-runs 20 --min-time 0.05
echo
echo "Kill it at any moment and 'kforge run --resume RUN' carries on."
rm -rf "$(dirname "$R")"
echo "Machine-readable: add --json (docs/cli.md). Exit codes: 0 accepted, 1 rejected, 2 error."
echo "The run's report: $(cd "$B/demo" && pwd)/report.html (open it in a browser; docs/report.md)"

#!/bin/sh
# make demo: the main job on a bundled task. Validate the task, check and time an
# honest faster candidate against the reference, then show a cheat being caught.
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
echo "Machine-readable: add --json (docs/cli.md). Exit codes: 0 accepted, 1 rejected, 2 error."

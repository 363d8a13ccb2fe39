#!/bin/sh
# Search efficiency by replay (docs/run.md "Search efficiency"): kf-replay on the recorded
# C spaces and the synthetic ones; Kernel Tuner's strategies too when KT_PYTHON names a
# python with kernel_tuner installed (pip install kernel_tuner in a throwaway venv).
set -eu
B=${1:-build}
D=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$D/synth_space.py" "$tmp/synth.json"
python3 "$D/synth_space.py" "$tmp/rugged.json" --rugged
for t in "$D"/data/*_c.json "$tmp/synth.json" "$tmp/rugged.json"; do
    "$B/kf-replay" "$t"
    if [ -n "${KT_PYTHON:-}" ]; then "$KT_PYTHON" "$D/kt_compare.py" "$t"; fi
done

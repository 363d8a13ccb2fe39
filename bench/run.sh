#!/bin/sh
# make bench: kforge's speed targets on this machine (bench/targets.py).
set -eu
B=${1:-build}
exec python3 "$(dirname "$0")/targets.py" "$B" --reps 15

#!/bin/sh
# Every global symbol libkforge defines carries the kf_ prefix (public kf_, internal
# kf__ or kf_<module>_): the library never pollutes its users' namespace.
set -eu
B=${1:-build}
bad=$(nm -g --defined-only "$B/libkforge.a" "$B/libkf_policy.a" | awk 'NF == 3 {print $3}' | grep -v '^kf_' || true)
if [ -n "$bad" ]; then
    echo "symbols without the kf_ prefix:" >&2
    echo "$bad" >&2
    exit 1
fi
echo "symbols: all $(nm -g --defined-only "$B/libkforge.a" | awk 'NF == 3' | wc -l) global symbols carry kf_"

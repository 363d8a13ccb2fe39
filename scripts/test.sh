#!/bin/sh
# Run the test suite in the normal build and in the ASan+UBSan build, then print one
# summary line over both: "N passed, N failed, N skipped". Exit non-zero on any failure.
set -u
B=${1:-build}
A=${2:-build-asan}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # name binary
    echo "== $1"
    { "$2"; echo $? > "$tmp/$1.rc"; } | tee "$tmp/$1.out"
}
run normal "$B/kf-tests"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run asan "$A/kf-tests"
p=0 f=0 s=0
for n in normal asan; do
    line=$(tail -n 1 "$tmp/$n.out")
    set -- $line
    case "$line" in *passed*failed*skipped) p=$((p + $1)) f=$((f + $3)) s=$((s + $5)) ;; *) f=$((f + 1)) ;; esac
    [ "$(cat "$tmp/$n.rc" 2>/dev/null)" = 0 ] || [ "$f" -gt 0 ] || f=$((f + 1))
done
echo "== total (normal + asan)"
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]

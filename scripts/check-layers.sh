#!/bin/sh
# The modules use one another only as docs/design.md's layer table ("## Layers") says:
# every `#include "..."` of src/ and cli/, and every call (a symbol an object file of the
# build uses, and the module whose object defines it, from nm), goes to the module itself,
# to util and include/kforge.h (src/ only), or to a module its row names. A symbol that a
# table row's header declares (src/backend/registry.h) counts as that row's, wherever it
# is defined; "api" (cli/) stands for the functions include/kforge.h declares. The table
# must name only modules above each row, and every file of src/ must belong to a row.
# NEVER lists uses the table itself may not allow (export and the Critic read runs through
# record and call nothing of the loop).
# Usage: scripts/check-layers.sh [BUILD] (default: build, made from this tree).
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
[ -d "$B" ] || { echo "check-layers: no build directory $B (make all first)" >&2; exit 2; }
NEVER="export:loop critic:loop"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the table: module, the path it holds, the modules it may use
awk -F'|' '
/^## Layers/ { on = 1; next }
on && /^## / { exit }
on && /^\|/ {
    m = $2; gsub(/[ `]/, "", m)
    if (m == "module" || m ~ /^-+$/) next
    h = $3; h = match(h, /`[^`]+`/) ? substr(h, RSTART + 1, RLENGTH - 2) : ""
    u = $4; gsub(/[ `]/, "", u)
    printf "%s\t%s\t%s\n", m, h, u
}' docs/design.md > "$tmp/table"
[ -s "$tmp/table" ] || { echo "check-layers: no layer table in docs/design.md" >&2; exit 2; }

# C text with comments blanked (line numbers kept): FILE<TAB>LINE<TAB>code
strip() {
    awk '
    FNR == 1 { com = 0 }
    {
        out = ""; n = length($0); i = 1
        while (i <= n) {
            d = substr($0, i, 2)
            if (com) { if (d == "*/") { com = 0; i += 2 } else i++; continue }
            if (d == "/*") { com = 1; i += 2; out = out " "; continue }
            if (d == "//") break
            out = out substr($0, i, 1); i++
        }
        printf "%s\t%d\t%s\n", FILENAME, FNR, out
    }' "$@"
}

# every source file, the includes of src/ and cli/, and what the headers declare
find src cli include -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort > "$tmp/files"
# shellcheck disable=SC2046
strip $(grep -E '^(src|cli)/' "$tmp/files") |
    awk -F'\t' '$3 ~ /^[ \t]*#[ \t]*include[ \t]*"/ { s = $3; sub(/^[^"]*"/, "", s); sub(/".*/, "", s);
                                                    printf "%s\t%s\t%s\n", $1, $2, s }' > "$tmp/includes"
cut -f2 "$tmp/table" | grep -v '/$' | grep . > "$tmp/headers" || true
: > "$tmp/declared"
for h in $(cat "$tmp/headers") include/kforge.h; do
    strip "$h" | awk -F'\t' -v h="$h" '{
        s = $3
        if (h == "include/kforge.h" && s !~ /KF_API/) next
        while (match(s, /kf_[A-Za-z0-9_]+[ \t]*\(/)) {
            name = substr(s, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name)
            printf "%s\t%s\n", h, name
            s = substr(s, RSTART + RLENGTH)
        }
    }' >> "$tmp/declared"
done

# what each object of the build defines and uses: SOURCE<TAB>TYPE<TAB>SYMBOL
: > "$tmp/symbols"
nobj=0
for o in $(find "$B" -name '*.o' | sort); do
    src=$(echo "${o#"$B"/}" | sed -e 's|CMakeFiles/[^/]*\.dir/||' -e 's|\.o$||')
    case "$src" in src/* | cli/*) ;; *) continue ;; esac
    [ -f "$src" ] || continue # left by a build of an older tree: its source is gone
    nobj=$((nobj + 1))
    nm -P "$o" | awk -v src="$src" 'NF >= 2 { printf "%s\t%s\t%s\n", src, $2, $1 }' >> "$tmp/symbols"
done
[ "$nobj" -gt 0 ] || { echo "check-layers: no object files of src/ or cli/ under $B" >&2; exit 2; }

awk -F'\t' -v nobj="$nobj" -v never="$NEVER" '
function unit(p,    best, k) {  # the row whose path is the longest prefix of p
    best = ""
    for (k = 1; k <= nrow; k++)
        if (path[k] != "" && index(p, path[k]) == 1 && length(path[k]) > length(best)) best = path[k]
    return best == "" ? "" : row[best]
}
function norm(p,    n, i, k, part, out) {  # a/b/../c -> a/c
    n = split(p, part, "/"); k = 0
    for (i = 1; i <= n; i++) {
        if (part[i] == "." || part[i] == "") continue
        if (part[i] == ".." && k > 0 && seg[k] != "..") { k--; continue }
        seg[++k] = part[i]
    }
    out = ""
    for (i = 1; i <= k; i++) out = out (i > 1 ? "/" : "") seg[i]
    return out
}
function may(a, b) {  # may module a use module b?
    if (a == b) return 1
    if (b == "util" && path[idx[a]] ~ /^src\//) return 1
    return (a SUBSEP b) in uses
}
function bad(msg) { print msg > "/dev/stderr"; nbad++ }
FILENAME ~ /\/table$/ {
    nrow++; name[nrow] = $1; path[nrow] = $2; row[$2] = $1; idx[$1] = nrow
    if ($1 in seen) bad("docs/design.md: module " $1 " has two rows")
    seen[$1] = 1
    n = split($3, u, ",")
    for (i = 1; i <= n; i++) {
        if (u[i] == "api") { uses[$1, "api"] = 1; continue }
        if (!(u[i] in seen) || u[i] == $1) bad("docs/design.md: " $1 " may use " u[i] ", which is not a module below it")
        uses[$1, u[i]] = 1
        if (index(" " never " ", " " $1 ":" u[i] " ")) bad("docs/design.md: " $1 " may never use " u[i] " (check-layers.sh NEVER)")
    }
    next
}
FILENAME ~ /\/files$/ { exists[$1] = 1; if ($1 ~ /^src\// && unit($1) == "") bad($1 ": in no module of docs/design.md") ; next }
FILENAME ~ /\/declared$/ { if ($1 == "include/kforge.h") api[$2] = 1; else owner[$2] = unit($1); next }
FILENAME ~ /\/includes$/ {
    d = $1; sub(/[^\/]*$/, "", d)
    t = norm(d $3)
    if (!(t in exists)) t = ("src/" $3 in exists) ? "src/" $3 : ("include/" $3 in exists) ? "include/" $3 : ""
    if (t == "" || t == "include/kforge.h") next
    a = unit($1); b = unit(t)
    if (b == "") { bad($1 ":" $2 ": includes " t ", which is in no module"); next }
    if (a != b) ninc++
    if (!may(a, b)) bad($1 ":" $2 ": includes " t " (" a " may not use " b ")")
    next
}
{  # symbols
    if ($2 == "U") { nuse++; user[nuse] = $1; sym[nuse] = $3; next }
    if ($2 ~ /^[TDBRCVWGS]$/ && !($3 in def)) def[$3] = unit($1)
}
END {
    for (i = 1; i <= nuse; i++) {
        s = sym[i]; a = unit(user[i])
        b = (s in owner) ? owner[s] : (s in def) ? def[s] : ""
        if (b == "" || a == b) continue
        ncall++
        if (may(a, b) || ((a SUBSEP "api") in uses && s in api)) continue
        if (!((user[i] SUBSEP s) in told)) bad(user[i] ": calls " s " of " b " (" a " may not use " b ")")
        told[user[i], s] = 1
    }
    if (nbad) { print "layers: " nbad " use(s) against docs/design.md \"Layers\"" > "/dev/stderr"; exit 1 }
    printf "layers: %d modules; %d includes and %d calls across modules (%d objects) follow docs/design.md\n",
           nrow, ninc, ncall, nobj
}' "$tmp/table" "$tmp/files" "$tmp/declared" "$tmp/includes" "$tmp/symbols"

#!/bin/sh
# The library and the CLI call none of the C functions that are easy to misuse (curl's
# scripts/checksrc.pl bans the same kind): unbounded copies and formats, parsers that
# cannot report an error, non-reentrant tokenisers and time conversions, racy temporary
# names. Each has a bounded or checked equivalent:
#   sprintf vsprintf            -> snprintf vsnprintf (or kf__asprintf)
#   strcpy strcat strncat strncpy -> snprintf, memcpy with a known length
#   gets                        -> fgets, getline
#   atoi atol atoll atof        -> strtol strtoll strtod (with an end pointer where the
#                                  text is input)
#   strtok                      -> strtok_r, strsep
#   asctime ctime gmtime localtime -> the _r forms
#   tmpnam tempnam mktemp       -> mkstemp, mkdtemp
#   json_dumps                  -> kf__json_dumps (jansson's dump leaves a key out when
#                                  an allocation fails, and goes on; src/util/util.c's
#                                  wrapper, the one caller in src/, gives NULL
#                                  instead; cli/ uses the public API only, and prints
#                                  what it dumps at once)
# Usage: scripts/check-banned.sh [DIR...] (default: src cli include). Comments and string
# literals are not code: a name there is not a call. tests/ and bench/ are not checked:
# the red-team corpus calls these functions on purpose, and test and benchmark code reads
# only what its own author wrote.
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- src cli include
banned='json_dumps|gets|strcpy|strcat|strncat|strncpy|sprintf|vsprintf|strtok|atoi|atol|atoll|atof|asctime|ctime|gmtime|localtime|tmpnam|tempnam|mktemp'
files=$(find "$@" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
# Print FILE:LINE:code with comments and the contents of string and character literals
# blanked (a comment's lines stay, so line numbers are the file's).
strip() {
    awk '
    FNR == 1 { com = 0 }
    {
        out = ""; n = length($0); i = 1
        while (i <= n) {
            c = substr($0, i, 1); d = substr($0, i, 2)
            if (com) {
                if (d == "*/") { com = 0; i += 2 } else i++
                continue
            }
            if (d == "/*") { com = 1; i += 2; out = out " "; continue }
            if (d == "//") break
            if (c == "\"" || c == "\047") {
                q = c; out = out q; i++
                while (i <= n) {
                    c = substr($0, i, 1)
                    if (c == "\\") { i += 2; continue }
                    i++
                    if (c == q) break
                }
                out = out q
                continue
            }
            out = out c; i++
        }
        print FILENAME ":" FNR ":" out
    }' "$@"
}
# shellcheck disable=SC2086
hits=$(strip $files | grep -E "^[^:]*:[0-9]+:(.*[^A-Za-z0-9_.>])?($banned)[[:space:]]*\(" |
    grep -Ev "^(src/util/util.c|cli/[^:]*):[0-9]+:.*[^_]json_dumps\(" || true)
if [ -n "$hits" ]; then
    echo "banned functions (scripts/check-banned.sh says what to use instead):" >&2
    echo "$hits" | while IFS=: read -r f l _; do
        printf '%s:%s:%s\n' "$f" "$l" "$(sed -n "${l}p" "$f")" >&2
    done
    exit 1
fi
echo "banned: none of the $(echo "$banned" | tr '|' '\n' | wc -l) banned functions in $(echo "$files" | wc -l) files ($*)"

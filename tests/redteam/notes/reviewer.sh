#!/bin/sh
# Advisory reviewer for --critic-agent cmd:'...': raises a CONCERN whenever the node's source
# contains a kforge:when or compares sizes against literal numbers; APPROVE otherwise.
# Logs what kforge gave it to $REVIEW_LOG (default /tmp/rt/review.log).
LOG=${REVIEW_LOG:-/tmp/rt/review.log}
cp "$KFORGE_PROMPT" "${LOG%.log}.prompt.$$.txt" 2>/dev/null
{ echo "=== $(date +%T) PACK=$KFORGE_PACK OUT=$KFORGE_OUT"; env | grep '^KFORGE_' | cut -c1-200; } >> "$LOG"
if grep -E -q 'kforge:when|== *[0-9]{2,}' "$KFORGE_PROMPT" 2>/dev/null; then
  printf 'CONCERN\nThe candidate restricts or special-cases shapes (kforge:when or literal size tests).\n' > "$KFORGE_OUT"
else
  printf 'APPROVE\nNo shape special-casing seen.\n' > "$KFORGE_OUT"
fi

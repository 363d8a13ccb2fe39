#!/bin/sh
# A scripted cmd: agent for the system run tests (tests/test_report.c): on softmax and
# rmsnorm it proposes the task's honest fast candidate, on sum the planted local win that
# loses in the step (sum_small_slow.c), behind a comment holding HTML and </script> that
# the report must show as text.
here=$(dirname "$0")
root="$here/../.."
if grep -q 'void softmax(' "$KFORGE_PROMPT"; then
    cp "$root/tasks/c/softmax/candidates/fast.c" "$KFORGE_OUT"
elif grep -q 'void rmsnorm(' "$KFORGE_PROMPT"; then
    cp "$root/tasks/c/rmsnorm/candidates/fast.c" "$KFORGE_OUT"
elif grep -q 'void reduce_sum(' "$KFORGE_PROMPT"; then
    {
        echo "/* </script><script>document.title='pwned'</script><b id=\"injected\">x</b> */"
        cat "$here/sum_small_slow.c"
    } > "$KFORGE_OUT"
else
    echo "no candidate for this task" >&2
    exit 3
fi

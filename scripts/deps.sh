#!/bin/sh
# Install the Debian packages listed in deps.txt that are missing, and say which.
# As root it installs them with apt-get; otherwise it lists what is missing and fails.
list=${1:-deps.txt}
missing=""
for p in $(sed -e 's/#.*//' "$list"); do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "deps: all $(sed -e 's/#.*//' "$list" | grep -c .) packages present"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "deps: missing:$missing" >&2
    echo "deps: run 'sudo make deps' or install them with apt-get" >&2
    exit 1
fi
echo "deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends $missing >/tmp/kforge-deps.log 2>&1; then
    apt-get update -q >>/tmp/kforge-deps.log 2>&1
    apt-get install -y -q --no-install-recommends $missing >>/tmp/kforge-deps.log 2>&1 || {
        echo "deps: apt-get failed; see /tmp/kforge-deps.log" >&2
        tail -5 /tmp/kforge-deps.log >&2
        exit 1
    }
fi
echo "deps: installed:$missing"

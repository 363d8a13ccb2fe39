#!/bin/sh
# Install what deps.txt lists and is missing, and say which. Debian packages (the lines
# before "[pypi]") are installed with apt-get as root; otherwise the missing ones are
# listed and the script fails. PyPI packages (the lines after "[pypi]") are installed
# with python3 -m pip; they are developer tools, so a missing python3 or a failed pip
# install is reported and does not fail the script. The lines after "[venv]" go into the
# project's virtual environment, .venv beside deps.txt (torch: docs/torch.md), created
# with python3 -m venv; a failure there is reported too, and the PyTorch tests skip.
list=${1:-deps.txt}
debs=$(sed -e 's/#.*//' "$list" | sed -e '/^[[:space:]]*\[pypi\]/,$d')
pypi=$(sed -e 's/#.*//' "$list" | sed -n -e '/^[[:space:]]*\[pypi\]/,$p' | sed -e '1d' \
    | sed -e '/^[[:space:]]*\[venv\]/,$d')
venv=$(sed -e 's/#.*//' "$list" | sed -n -e '/^[[:space:]]*\[venv\]/,$p' | sed -e '1d')
venv_dir="$(cd "$(dirname "$list")" && pwd)/.venv"

venv_deps() {
    [ -n "$(echo $venv)" ] || return 0
    if [ ! -x "$venv_dir/bin/python3" ] && ! python3 -m venv "$venv_dir" >/tmp/kforge-venv.log 2>&1; then
        echo "deps: python3 -m venv $venv_dir failed; see /tmp/kforge-venv.log" >&2
        return 0
    fi
    want=""
    for r in $venv; do
        name=$(echo "$r" | sed -e 's/[=<>!~;[ ].*//')
        "$venv_dir/bin/python3" -m pip show -q "$name" >/dev/null 2>&1 || want="$want $r"
    done
    if [ -z "$want" ]; then
        echo "deps: all $(echo $venv | wc -w) packages of .venv present"
    elif "$venv_dir/bin/python3" -m pip install -q --disable-pip-version-check $want \
        >/tmp/kforge-venv.log 2>&1; then
        echo "deps: installed into .venv:$want"
        # torch is gigabytes: write it out now, not while the tests start workers (a
        # clean clone's first timing tests stalled behind the writeback)
        sync
    else
        echo "deps: pip could not install$want into .venv; see /tmp/kforge-venv.log" >&2
        tail -3 /tmp/kforge-venv.log >&2
    fi
}

pip_deps() {
    [ -n "$(echo $pypi)" ] || return 0
    if ! python3 -m pip --version >/dev/null 2>&1; then
        echo "deps: python3 -m pip is not available: not installed:" $pypi >&2
        return 0
    fi
    want=""
    for r in $pypi; do
        name=$(echo "$r" | sed -e 's/[=<>!~;[ ].*//')
        python3 -m pip show -q "$name" >/dev/null 2>&1 || want="$want $r"
    done
    if [ -z "$want" ]; then
        echo "deps: all $(echo $pypi | wc -w) PyPI packages present"
    elif [ "$(id -u)" != 0 ] && [ -z "${VIRTUAL_ENV:-}" ]; then
        echo "deps: PyPI packages missing:$want (python3 -m pip install$want)" >&2
    elif python3 -m pip install -q --disable-pip-version-check $want >/tmp/kforge-pip.log 2>&1; then
        echo "deps: installed from PyPI:$want"
    else
        echo "deps: pip could not install$want; see /tmp/kforge-pip.log" >&2
        tail -3 /tmp/kforge-pip.log >&2
    fi
}

missing=""
for p in $debs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "deps: all $(echo $debs | wc -w) packages present"
    pip_deps
    venv_deps
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
pip_deps
venv_deps

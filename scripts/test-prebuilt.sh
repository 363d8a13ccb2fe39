#!/bin/sh
# Run the prebuilt test suite from a copy of the tree on another machine (the GPU host):
# same binaries, that machine's kernel, glibc and compiler, which it prints first.
# Usage: scripts/test-prebuilt.sh [kf-tests arguments]
set -u
cd "$(dirname "$0")/.."
uname -a
ldd --version | head -1
cc --version | head -1
KFT_SOURCE_DIR=$PWD KFT_BINARY_DIR=$PWD/build ./build/kf-tests -j 4 "$@"

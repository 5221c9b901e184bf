#!/bin/sh
# make check: a short run of the lib/meta decoder fuzzer (see tests/fuzz/run.sh).
cd "$(dirname "$0")/../.." && exec sh tests/fuzz/run.sh 20

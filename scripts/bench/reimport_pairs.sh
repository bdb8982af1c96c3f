#!/bin/bash
# Alternated unchanged re-imports with two or more hp-node builds: each build gets a home
# holding a first import of EXPORT, then each re-imports EXPORT in turn, N times
# (docs/benchmarks.md; used for the re-imports measured 2026-11-28 at 16b8d5e,
# docs/decisions/2026-11-25-heap-arenas.md). Prints seconds, peak RSS (KB) and CPU.
#
#   scripts/bench/reimport_pairs.sh 4 /tmp/ib/export-a.zip /tmp/binA/hp-node /tmp/binB/hp-node
set -euo pipefail
if [ $# -lt 3 ]; then echo "usage: $0 N EXPORT HP_NODE..." >&2; exit 2; fi
n=$1; export_zip=$2; shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
i=0
for node in "$@"; do
  "$node" --home "$work/h$i" init >/dev/null
  "$node" import --home "$work/h$i" --json "$export_zip" >/dev/null
  i=$((i + 1))
done
for _ in $(seq 1 "$n"); do
  i=0
  for node in "$@"; do
    t=$( { /usr/bin/time -f "%e s %M KB %U user %S sys" "$node" import --home "$work/h$i" --json "$export_zip" >/dev/null; } 2>&1 | tail -1)
    echo "$node $t"
    i=$((i + 1))
  done
done

#!/usr/bin/env bash
# The default 10,000-seed campaign's speed over time (issue 11's first item). A shared host's
# speed comes in phases of minutes, so one timed run (or the best of three) says little about
# the next hour: this runs SERIES series of RUNS runs each, GAP seconds apart, every run pinned
# to one core, and prints each series' runs, median and best, then how many series reach
# TARGET steps/s. Not a test: the figures depend on the machine and its neighbours.
#
#   cargo build --release && bash benches/series.sh > /tmp/series.md
#   SERIES=16 RUNS=5 GAP=240 CORE=1 TARGET=5000000 bash benches/series.sh   # the defaults
set -euo pipefail
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/leasehold}
SERIES=${SERIES:-16}
RUNS=${RUNS:-5}
GAP=${GAP:-240}
TARGET=${TARGET:-5000000}
# The last core by default: on a 2-core machine the other one keeps the shell and the system.
CORE=${CORE:-$(($(nproc) - 1))}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "Run from $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (binary $BIN): $SERIES series of $RUNS runs, $GAP s apart, on core $CORE."
echo
echo '```'
echo "taskset -c $CORE $BIN sim --seeds 0..10000 --threads 1 --no-save --json   # steps / wall_ms"
echo '```'
echo
echo "| series | time (UTC) | load average | runs, M steps/s (sorted) | median | best |"
echo "|---|---|---|---|---|---|"
for series in $(seq "$SERIES"); do
  at=$(date -u '+%H:%M:%S')
  load=$(cut -d' ' -f1 /proc/loadavg)
  : > "$OUT/runs"
  for _ in $(seq "$RUNS"); do
    taskset -c "$CORE" "$BIN" sim --seeds 0..10000 --threads 1 --no-save --json > "$OUT/run.json"
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["steps"] / d["wall_ms"] * 1000)' \
      "$OUT/run.json" >> "$OUT/runs"
  done
  # A table row on stdout; the series' median and best, unrounded, in $OUT/series for the count.
  python3 - "$OUT/runs" "$series" "$at" "$load" "$OUT/series" <<'PY'
import statistics, sys
runs = sorted(float(x) for x in open(sys.argv[1]))
median = statistics.median(runs)
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | "
      + ", ".join(f"{r / 1e6:.2f}" for r in runs)
      + f" | {median / 1e6:.2f} | {runs[-1] / 1e6:.2f} |")
with open(sys.argv[5], "a") as out:
    print(median, runs[-1], file=out)
PY
  if [ "$series" -lt "$SERIES" ]; then
    sleep "$GAP"
  fi
done
echo
python3 - "$OUT/series" "$TARGET" <<'PY'
import statistics, sys
target = float(sys.argv[2])
pairs = [tuple(map(float, line.split())) for line in open(sys.argv[1])]
medians = [m for m, _ in pairs]
bests = [b for _, b in pairs]
n = len(medians)
print(f"Medians {min(medians) / 1e6:.2f}–{max(medians) / 1e6:.2f} M steps/s "
      f"(their median {statistics.median(medians) / 1e6:.2f} M): "
      f"{sum(m >= target for m in medians)} of {n} series at {target / 1e6:g} M or more by their median, "
      f"{sum(b >= target for b in bests)} of {n} by their best run.")
PY

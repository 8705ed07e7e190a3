#!/usr/bin/env bash
# Benchmark of the model checker on a user's broker: the worked example's queue
# (examples/queue: a queue with data structures of its own behind `CheckedBroker`) against
# leasehold's reference broker, on the same configurations, through the same binary (the
# example's command line: `check --backend in-memory` against `check`). The two run in turn,
# queue then reference, RUNS pairs per configuration, so that a drift of the machine's speed
# hits both; each pair gives a ratio. Prints a markdown table: unique states (the same for
# both: the queue implements the reference protocol), the median of each one's search
# seconds (as `check --json` reports them) and the median of the pairs' ratios. Not a test:
# timings depend on the machine and its load.
#
#   cargo build --release -p leasehold-example-queue && bash benches/broker.sh
#
# Environment: BIN (default target/release/leasehold-example-queue), RUNS (default 5).
set -euo pipefail
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/leasehold-example-queue}
RUNS=${RUNS:-5}
PLAIN="--crashes 1 --lost-replies 0 --drops 0 --dups 0 --renews 0 --broker-restarts 0"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# seconds ARGS... : the search's seconds and unique states of one `check ARGS --json`.
seconds() {
  # shellcheck disable=SC2068
  "$BIN" check --tailored $@ --json --out "$OUT/found" > "$OUT/run.json" || true
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["seconds"], r["counts"]["unique"], r["outcome"])' "$OUT/run.json"
}

# pair ARGS... : RUNS pairs (queue, reference) of `check ARGS`; prints one table row.
pair() {
  local rows=()
  for _ in $(seq "$RUNS"); do
    # shellcheck disable=SC2068
    rows+=("$(seconds $@ --backend in-memory) $(seconds $@)")
  done
  printf '%s\n' "${rows[@]}" > "$OUT/rows"
  python3 - "$OUT/rows" "$*" "$RUNS" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
queue = [float(r[0]) for r in rows]
reference = [float(r[3]) for r in rows]
assert all(r[1] == r[4] for r in rows), "the queue and the reference differ in unique states"
ratios = [q / b for q, b in zip(queue, reference)]
print(f"| `check --tailored {sys.argv[2]}` | {int(rows[0][1]):,} | {rows[0][2]} / {rows[0][5]} "
      f"| {statistics.median(queue):.2f} | {statistics.median(reference):.2f} "
      f"| {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}, {sys.argv[3]} pairs) |")
PY
}

echo "Run $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (binary $BIN)"
echo
echo "| command (\`--backend in-memory\` against the reference) | unique states | outcome (queue / reference) | queue s (median) | reference s (median) | queue / reference (median of pairs, range) |"
echo "|---|---|---|---|---|---|"
pair --threads 1
pair --no-symmetry --threads 1
pair --events 3 --workers 3 --max-attempts 2 $PLAIN --no-symmetry --threads 1

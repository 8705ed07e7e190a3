#!/usr/bin/env bash
# Partial-order reduction, paired: each configuration checked with it (the default) and with
# `--no-partial-order`, one after the other on the same binary, RUNS times alternated (best
# time of each kept). Prints a markdown table: unique states, generated, seconds, max RSS of
# both, and the ratios. Not a test: the times depend on the machine and its load; the state
# counts are exact.
#
#   cargo build --release && bash benches/por.sh > /tmp/por.md
set -euo pipefail
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/leasehold}
RUNS=${RUNS:-3}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# Partial order alone: without subsumption (benches/covering.sh measures it), when the binary
# has it.
NOSUB=""
if "$BIN" check --help 2> /dev/null | grep -- --no-subsumption > /dev/null; then NOSUB="--no-subsumption"; fi
if "$BIN" check --help 2> /dev/null | grep -- --no-late-duplicates > /dev/null; then NOSUB="$NOSUB --no-late-duplicates"; fi

# one FILE ARGS... : one run of `leasehold check ARGS --json`; appends "unique generated seconds rss_kib".
one() {
  local file=$1
  shift
  # shellcheck disable=SC2068
  /usr/bin/time -v "$BIN" check --tailored $@ $NOSUB --json --out "$OUT/found" > "$OUT/run.json" 2> "$OUT/time.txt" || true
  python3 - "$OUT/run.json" "$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$OUT/time.txt")" >> "$file" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(r["counts"]["unique"], r["counts"]["generated"], r["seconds"], sys.argv[2], r["outcome"])
PY
}

pair() {
  : > "$OUT/on" ; : > "$OUT/off"
  for _ in $(seq "$RUNS"); do
    one "$OUT/on" "$@"
    one "$OUT/off" "$@" --no-partial-order
  done
  python3 - "$OUT/on" "$OUT/off" "$* $NOSUB" <<'PY'
import sys
def best(path):
    rows = [line.split() for line in open(path)]
    row = min(rows, key=lambda r: float(r[2]))
    return int(row[0]), int(row[1]), float(row[2]), max(int(r[3]) for r in rows) / 1024, row[4]
on, off = best(sys.argv[1]), best(sys.argv[2])
print(f"| `leasehold check --tailored {sys.argv[3]}` | {off[0]:,} | {on[0]:,} | {off[0] / on[0]:.2f}× | "
      f"{off[2]:.2f} | {on[2]:.2f} | {off[2] / max(on[2], 1e-9):.2f}× | {off[3]:,.0f} | {on[3]:,.0f} | {on[4]} |")
PY
}

echo "Run $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), best of $RUNS alternated"
echo
echo "| command | unique states, off | on | fewer | seconds, off | on | faster | max RSS MiB, off | on | result |"
echo "|---|---|---|---|---|---|---|---|---|---|"
pair --threads 1
pair --events 3 --workers 3 --max-attempts 2 --crashes 1 --lost-replies 0 --drops 0 --dups 0 --renews 0 --broker-restarts 0 --threads 1
pair --events 2 --workers 2 --max-attempts 2 --outcomes all --renews 1 --crashes 1 --drops 1 --dups 1 --lost-replies 1 --broker-restarts 1 --threads 1
pair --groups 2 --events 1 --workers 2 --max-attempts 2 --outcomes all --renews 1 --crashes 1 --drops 1 --dups 0 --lost-replies 1 --broker-restarts 1 --threads 1
pair --events 2 --workers 2 --max-attempts 2 --crashes 1 --lost-replies 1 --renews 1 --time ticks --lease-ticks 2 --threads 1

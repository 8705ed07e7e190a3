#!/usr/bin/env bash
# Benchmark of `leasehold check`: states/s and peak memory (max RSS from /usr/bin/time -v) for
# the default configuration and a larger one, with and without symmetry reduction, at 1 and 2
# threads. Prints a markdown table, one row per run, with the exact command.
#
#   cargo build --release && bash benches/check.sh [LARGER_FLAGS...] > /tmp/bench.md
#
# Not a test: timings depend on the machine and its load.
set -euo pipefail
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/leasehold}
ZERO="--drops 0 --dups 0 --lost-replies 0 --broker-restarts 0 --renews 0"
LARGER=${*:-"--events 3 --workers 2 --max-attempts 2 --crashes 1 $ZERO"}
OUT=$(mktemp -d)
echo "| configuration | symmetry | threads | unique states | generated | seconds | unique states/s | max RSS (MiB) | result |"
echo "|---|---|---|---|---|---|---|---|---|"
for config in "" "$LARGER"; do
  for symmetry in "" "--no-symmetry"; do
    for threads in 1 2; do
      cmd="leasehold check $config $symmetry --threads $threads"
      # shellcheck disable=SC2086
      /usr/bin/time -v "$BIN" check $config $symmetry --threads "$threads" --json --out "$OUT" \
        > "$OUT/run.json" 2> "$OUT/time.txt" || true
      rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$OUT/time.txt")
      python3 - "$OUT/run.json" "$rss_kb" "$cmd" "${config:-default}" "${symmetry:-on}" "$threads" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
r = run["run"]
rss = int(sys.argv[2]) / 1024
sym = "off" if sys.argv[5] == "--no-symmetry" else "on"
print(f"| `{sys.argv[3]}` | {sym} | {sys.argv[6]} | {r['unique_states']:,} | {r['states_generated']:,} | {r['seconds']:.2f} | {r['unique_states'] / r['seconds']:,.0f} | {rss:,.0f} | {run['outcome']} |")
PY
    done
  done
done
rm -rf "$OUT"

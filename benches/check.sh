#!/usr/bin/env bash
# Benchmark of `leasehold check` (reports/check-bench.md): states, time, unique states/s and
# peak memory (max RSS from /usr/bin/time -v) of the configurations of its targets, each run
# RUNS times (best time kept), plus the --renews unbounded lassos and proofs and every mutant's
# counterexample length. Prints markdown tables, one row per configuration, with the exact
# command. Not a test: timings depend on the machine and its load.
#
#   cargo build --release && bash benches/check.sh > /tmp/check-bench.md
#
# Environment: BIN (default target/release/leasehold), RUNS (default 3), LONG=0 to skip the
# events 3 / workers 3 / max attempts 3 proof (minutes, GiBs).
set -euo pipefail
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/leasehold}
RUNS=${RUNS:-3}
LONG=${LONG:-1}
PLAIN="--crashes 1 --lost-replies 0 --drops 0 --dups 0 --renews 0 --broker-restarts 0"
# The proof rows measure the search itself, state for state: without subsumption (whose counts
# depend on the order states are met; benches/covering.sh measures it), when the binary has it.
NOSUB=""
if "$BIN" check --help 2> /dev/null | grep -- --no-subsumption > /dev/null; then NOSUB="--no-subsumption"; fi
if "$BIN" check --help 2> /dev/null | grep -- --no-late-duplicates > /dev/null; then NOSUB="$NOSUB --no-late-duplicates"; fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# run ARGS... : runs `leasehold check ARGS --json` RUNS times; prints one table row with the
# fastest run's figures and the largest max RSS.
run() {
  local best="" rss_max=0
  for _ in $(seq "$RUNS"); do
    # shellcheck disable=SC2068
    /usr/bin/time -v "$BIN" check --tailored $@ $NOSUB --json --out "$OUT/found" > "$OUT/run.json" 2> "$OUT/time.txt" || true
    local rss seconds
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$OUT/time.txt")
    seconds=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' "$OUT/run.json")
    (( rss > rss_max )) && rss_max=$rss
    if [[ -z "$best" ]] || python3 -c "import sys; sys.exit(0 if $seconds < $best else 1)"; then
      best=$seconds
      cp "$OUT/run.json" "$OUT/best.json"
    fi
  done
  python3 - "$OUT/best.json" "$rss_max" "$* $NOSUB" "$RUNS" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
rss = int(sys.argv[2]) / 1024
i6 = next(p for p in run["properties"] if p["kind"] == "eventually")
print(f"| `leasehold check --tailored {sys.argv[3]}` | {'on' if run['symmetry'] else 'off'} | {run['threads']} "
      f"| {run['counts']['unique']:,} | {run['counts']['generated']:,} | {run['seconds']:.2f} "
      f"(best of {sys.argv[4]}) | {run['unique_per_second']:,.0f} | {rss:,.0f} | {run['outcome']} "
      f"(I6 {i6['verdict']}) |")
PY
}

# When and under what load: this machine's speed is not constant, so a figure needs its time.
echo "Run $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (binary $BIN)"
echo
echo "| command | symmetry | threads | unique states | generated | seconds | unique states/s | max RSS (MiB) | result |"
echo "|---|---|---|---|---|---|---|---|---|"
run --events 2 --workers 2 --max-attempts 2 $PLAIN --no-symmetry --threads 1
run --events 3 --workers 3 --max-attempts 2 $PLAIN --no-symmetry --threads 1
run --events 3 --workers 3 --max-attempts 2 $PLAIN --threads 1
run --events 3 --workers 3 --max-attempts 2 $PLAIN --no-symmetry --threads 2
run --events 3 --workers 3 --max-attempts 2 $PLAIN --threads 2
run --threads 1
run --no-symmetry --threads 1
if [[ "$LONG" != 0 ]]; then
  RUNS=1 run --events 3 --workers 3 --max-attempts 3 $PLAIN --no-symmetry --threads 1
  RUNS=1 run --events 3 --workers 3 --max-attempts 3 $PLAIN --threads 1
fi

echo
echo "| command (--renews unbounded) | unique states | seconds | I6 | counterexample |"
echo "|---|---|---|---|---|"
for ew in "2 2" "2 3" "3 2" "3 3"; do
  set -- $ew
  for fairness in none weak; do
    args="--events $1 --workers $2 --max-attempts 2 --crashes 1 --lost-replies 0 --drops 0 --dups 0 --broker-restarts 0 --renews unbounded --fairness $fairness"
    # shellcheck disable=SC2086
    "$BIN" check --tailored $args --json --out "$OUT/found" > "$OUT/run.json" || true
    python3 - "$OUT/run.json" "$args" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
i6 = next(p for p in run["properties"] if p["kind"] == "eventually")
cx = [c for c in run["counterexamples"] if c["invariant"] == "I6"]
lasso = "—"
if cx:
    c = cx[0]
    kind = f"lasso: {c['loop_start']} steps, then a loop of {c['steps'] - c['loop_start']}" if c["loop_start"] is not None else f"{c['steps']} steps"
    lasso = f"{kind}; replays: {'yes' if c['replays'] else 'NO'}"
print(f"| `leasehold check --tailored {sys.argv[2]}` | {run['counts']['unique']:,} | {run['seconds']:.2f} | {i6['verdict']} | {lasso} |")
PY
  done
done

echo
echo "| variant | must break | violated | counterexample steps (replays) |"
echo "|---|---|---|---|"
for variant in $("$BIN" protocols --json | python3 -c 'import json,sys; print(" ".join(r["name"] for r in json.load(sys.stdin) if r["expected"]))'); do
  "$BIN" check --variant "$variant" --json --out "$OUT/found" > "$OUT/run.json" || true
  python3 - "$OUT/run.json" "$variant" "$("$BIN" protocols --json)" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
expected = next(r["expected"] for r in json.loads(sys.argv[3]) if r["name"] == sys.argv[2])
violated = [p["invariant"] for p in run["properties"] if p["verdict"] == "violated"]
steps = ", ".join(f"{c['invariant']}: {c['steps']} ({'yes' if c['replays'] else 'NO'})" for c in run["counterexamples"])
print(f"| `{sys.argv[2]}` | {expected} | {', '.join(violated)} | {steps} |")
PY
done

#!/usr/bin/env bash
# The covering configuration (what `leasehold check` runs with no flag on `fenced`):
#  1. the default with the reductions (symmetry, partial order, subsumption, late duplicates)
#     turned off in turn — the state counts before and after each, the time and the peak memory;
#  2. every variant expected to break an invariant checked exactly as the reference is
#     (`check --covering --variant NAME`): which invariants it breaks, how long it took; then
#     the same with `--first-violation` (the states and seconds to its first counterexample).
# Not a test: the times depend on the machine and its load; the state counts are exact.
#
#   cargo build --release && bash benches/covering.sh > /tmp/covering.md
#   MUTANTS=0 bash benches/covering.sh     # the first table only
#   REDUCTIONS=0 bash benches/covering.sh  # the second table only
#   WHOLE=0 REDUCTIONS=0 bash benches/covering.sh  # the second table, --first-violation only
set -euo pipefail
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/leasehold}
MUTANTS=${MUTANTS:-1}
REDUCTIONS=${REDUCTIONS:-1}
# A run that passes it is cut (reported as bounded, never as a verdict; a violation found
# before the cut is reported).
BUDGET=${BUDGET:-5m}
# Only these variants in the second table (default: every variant that breaks an invariant).
VARIANTS=${VARIANTS:-}
# The second table's whole searches (WHOLE=0: its --first-violation columns only).
WHOLE=${WHOLE:-1}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# row LABEL ARGS... : one `leasehold check ARGS --json` under /usr/bin/time; one table row.
row() {
  local label=$1
  shift
  if [[ "$label" == first ]]; then
    # The --first-violation columns of the row: states generated to the stop, seconds.
    # shellcheck disable=SC2068
    "$BIN" check $@ --first-violation --for "$BUDGET" --json --out "$OUT/found" > "$OUT/run.json" 2> /dev/null || true
    python3 - "$OUT/run.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
violated = [p["invariant"] for p in run["properties"] if p.get("verdict") == "violated"]
print(f"{run['counts']['generated']:,} | {run['seconds']:.2f} | {', '.join(violated) or run['outcome']} |")
PY
    return
  fi
  # shellcheck disable=SC2068
  /usr/bin/time -v "$BIN" check $@ --for "$BUDGET" --json --out "$OUT/found" > "$OUT/run.json" 2> "$OUT/time.txt" || true
  python3 - "$OUT/run.json" "$OUT/time.txt" "$label" "$*" <<'PY'
import json, re, sys
run = json.load(open(sys.argv[1]))
found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(sys.argv[2]).read())
rss = int(found.group(1)) / 1024 if found else float("nan")
violated = [p["invariant"] for p in run["properties"] if p.get("verdict") == "violated"]
result = run["outcome"] + (f" ({', '.join(violated)})" if violated else "")
cov = run.get("coverage", {})
rows = cov.get("rows", [])
cells = f"{sum(1 for r in rows if r['reached'] and r['supported'])} / {sum(1 for r in rows if r['supported'])}"
print(f"| {sys.argv[3]} | `leasehold check {sys.argv[4]}` | {run['counts']['unique']:,} | "
      f"{run['counts']['generated']:,} | {run['seconds']:.1f} | {rss:,.0f} | {cells} | {result} |")
PY
}

echo "Run $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (binary $BIN), one thread"
if [[ "$REDUCTIONS" != 0 ]]; then
  echo
  echo "| reductions | command | unique states | generated | seconds | max RSS (MiB) | cells reached | result |"
  echo "|---|---|---|---|---|---|---|---|"
  row "all four (the default)" --threads 1
  row "all but late duplicates" --no-late-duplicates --threads 1
  row "symmetry and partial order" --no-subsumption --no-late-duplicates --threads 1
  row "symmetry only" --no-partial-order --no-subsumption --no-late-duplicates --threads 1
  row "partial order only" --no-symmetry --no-subsumption --no-late-duplicates --threads 1
  row "subsumption only" --no-symmetry --no-partial-order --no-late-duplicates --threads 1
  row "late duplicates only" --no-symmetry --no-partial-order --no-subsumption --threads 1
  row "none" --no-symmetry --no-partial-order --no-subsumption --no-late-duplicates --threads 1
fi
if [[ "$MUTANTS" != 0 ]]; then
  echo
  if [[ "$WHOLE" != 0 ]]; then
    echo "| variant | command | unique states | generated | seconds | max RSS (MiB) | cells reached | result | --first-violation: generated | seconds | found |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
  else
    echo "| variant | command | --first-violation: generated | seconds | found |"
    echo "|---|---|---|---|---|"
  fi
  if [[ -z "$VARIANTS" ]]; then
    VARIANTS=$("$BIN" protocols --json | python3 -c 'import json,sys; print(" ".join(r["name"] for r in json.load(sys.stdin) if r["expected"]))')
  fi
  for variant in $VARIANTS; do
    if [[ "$WHOLE" != 0 ]]; then
      whole=$(row "\`$variant\`" --covering --variant "$variant" --threads 1)
    else
      whole="| \`$variant\` | \`leasehold check --covering --variant $variant --threads 1\` |"
    fi
    echo "$whole $(row first --covering --variant "$variant" --threads 1)"
  done
fi

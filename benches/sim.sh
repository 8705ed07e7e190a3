#!/usr/bin/env bash
# Benchmark of `leasehold sim` (reports/sim-bench.md): the default campaign's speed, the
# per-step cost and peak memory as the workload grows, large seeds of the protocols that hold,
# the mutants' seeds to first failure, determinism of the campaign hash, the coverage table.
# Prints markdown sections; every figure comes with the command that produced it.
#
#   cargo build --release && bash benches/sim.sh > /tmp/sim-bench.md
#
# Timed runs are repeated RUNS times and the best (fastest) is kept: on a shared machine the
# others measure the neighbours. Not a test: timings depend on the machine and its load.
set -euo pipefail
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/leasehold}
RUNS=${RUNS:-3}
SIZES=${SIZES:-"100:1000 1000:100 10000:10 100000:1 1000000:1"}
WINDOWS=${WINDOWS:-21}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# best_of CMD...: runs CMD RUNS times under /usr/bin/time -v; leaves the fastest run's stdout
# in $OUT/best.out and its time report in $OUT/best.time. With FILTER set (a command or
# function), the stdout kept is what FILTER makes of it (a long timeline is counted, not kept).
best_of() {
  local best=""
  for _ in $(seq "$RUNS"); do
    if [ -n "${FILTER:-}" ]; then
      /usr/bin/time -v "$@" 2> "$OUT/run.time" | "$FILTER" > "$OUT/run.out" || true
    else
      /usr/bin/time -v "$@" > "$OUT/run.out" 2> "$OUT/run.time" || true
    fi
    local wall
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$OUT/run.time" |
      awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    if [ -z "$best" ] || awk -v a="$wall" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$wall
      cp "$OUT/run.out" "$OUT/best.out"
      cp "$OUT/run.time" "$OUT/best.time"
    fi
  done
}

field() { sed -n "s/.*$1: //p" "$OUT/best.time" | head -1; }

# When and under what load: this machine's speed is not constant, so a figure needs its time.
echo "Run $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (binary $BIN)"
echo
echo "## The default 10,000-seed campaign, one thread"
echo
echo '```'
echo "/usr/bin/time -v $BIN sim --seeds 0..10000 --threads 1 --no-save --json   # best of $RUNS"
echo '```'
echo
best_of "$BIN" sim --seeds 0..10000 --threads 1 --no-save --json
python3 - "$OUT/best.out" "$(field 'Elapsed (wall clock) time (h:mm:ss or m:ss)')" \
  "$(field 'User time (seconds)')" "$(field 'Maximum resident set size (kbytes)')" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
wall = d["wall_ms"] / 1000
user = float(sys.argv[3])
print("| steps | simulated time | wall (in-process) | user CPU | steps/s (wall) | steps/s (CPU) | peak RSS | campaign hash |")
print("|---|---|---|---|---|---|---|---|")
print(f"| {d['steps']:,} | {d['sim_ms'] / 1000:,.0f} s | {wall:.2f} s | {user:.2f} s | "
      f"{d['steps'] / wall:,.0f} | {d['steps'] / user:,.0f} | {int(sys.argv[4]):,} KB | `{d['campaign_hash']}` |")
PY
echo

echo "## The default campaign against the core's clock and width"
echo
echo "Each round reads the core's clock and width (\`benches/clock.rs\`: a chain of dependent"
echo "one-cycle additions, then six independent chains), runs the campaign, and reads them again,"
echo "all on one core. Cycles per step are the two clock readings' mean over the steps per"
echo "second. The width is the additions the core retired a cycle: it falls when something else"
echo "competes for the same core (on a shared host, typically a neighbour on its other hardware"
echo "thread), and the campaign slows with it, while the clock may hold."
echo
echo '```'
echo "rustc -O --edition 2021 benches/clock.rs -o clock"
echo "taskset -c 1 ./clock 100; taskset -c 1 $BIN sim --seeds 0..10000 --threads 1 --no-save --json; taskset -c 1 ./clock 100"
echo '```'
echo
rustc -O --edition 2021 "$(dirname "$0")/clock.rs" -o "$OUT/clock"
probe() { taskset -c 1 "$OUT/clock" 100 | awk '{print $1, $3}'; }
echo "| round | time (UTC) | clock before | width before | steps/s | clock after | width after | cycles per step |"
echo "|---|---|---|---|---|---|---|---|"
: > "$OUT/cycles"
for round in $(seq "${CLOCK_ROUNDS:-9}"); do
  before=$(probe)
  taskset -c 1 "$BIN" sim --seeds 0..10000 --threads 1 --no-save --json > "$OUT/round.json"
  after=$(probe)
  python3 - "$OUT/round.json" "$round" "$(date -u +%H:%M:%S)" "$before" "$after" \
    "$OUT/cycles" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rate = d["steps"] / (d["wall_ms"] / 1000)
(before, width_before), (after, width_after) = (map(float, a.split()) for a in sys.argv[4:6])
cycles = (before + after) / 2 * 1e9 / rate
width = (width_before + width_after) / 2
open(sys.argv[6], "a").write(f"{cycles} {rate} {(before + after) / 2} {width}\n")
print(f"| {sys.argv[2]} | {sys.argv[3]} | {before:.2f} GHz | {width_before:.2f} | {rate:,.0f} | "
      f"{after:.2f} GHz | {width_after:.2f} | {cycles:,.0f} |")
PY
done
echo
python3 - "$OUT/cycles" <<'PY'
import statistics, sys
rows = [tuple(map(float, line.split())) for line in open(sys.argv[1])]
cycles = statistics.median(r[0] for r in rows)
print(f"Median: {cycles:,.0f} cycles per step (spread {min(r[0] for r in rows):,.0f}–"
      f"{max(r[0] for r in rows):,.0f}), at clocks of {min(r[2] for r in rows):.2f}–"
      f"{max(r[2] for r in rows):.2f} GHz. At that cost, 5,000,000 steps/s takes a core at "
      f"{cycles * 5e6 / 1e9:.2f} GHz or more.")
if len(rows) >= 4:
    # The rounds split at the median width: what the campaign ran at on the wider core and on
    # the narrower one.
    by_width = sorted(rows, key=lambda r: r[3])
    half = len(by_width) // 2
    narrow, wide = by_width[:half], by_width[-half:]
    def describe(part):
        return (f"{min(r[3] for r in part):.2f}–{max(r[3] for r in part):.2f} additions a cycle: "
                f"median {statistics.median(r[1] for r in part):,.0f} steps/s, "
                f"{statistics.median(r[0] for r in part):,.0f} cycles per step")
    print()
    print(f"The {half} widest rounds, {describe(wide)}; the {half} narrowest, {describe(narrow)}.")
    if len({r[3] for r in rows}) > 1 and len({r[1] for r in rows}) > 1:
        print(f"Correlation of width and steps/s over the {len(rows)} rounds: "
              f"{statistics.correlation([r[3] for r in rows], [r[1] for r in rows]):.2f}.")
PY
echo

echo "## Per-step cost and memory as the workload grows (default faults)"
echo
echo "Each row runs about 1.5 million steps or more: small workloads as a campaign of many seeds,"
echo "large ones as one seed (\`--seed 1\`), so that every row is timed with the same resolution."
echo
echo "| --events | command | records per seed (at most) | steps | every event settled | violations | wall | user CPU | steps/s (wall) | steps/s (CPU) | peak RSS |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for spec in $SIZES; do
  n=${spec%%:*}; k=${spec##*:}
  if [ "$k" = 1 ]; then
    args=(sim --events "$n" --seed 1 --no-save --json)
  else
    args=(sim --events "$n" --seeds "1..$((k + 1))" --threads 1 --no-save --json)
  fi
  best_of "$BIN" "${args[@]}"
  python3 - "$OUT/best.out" "$n" "$(field 'User time (seconds)')" \
    "$(field 'Maximum resident set size (kbytes)')" "leasehold ${args[*]}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2]); user = float(sys.argv[3]); wall = d["wall_ms"] / 1000
if "seeds_run" in d:
    settled = "yes" if d["seeds_inconclusive"] == 0 else f"{d['seeds_inconclusive']} inconclusive"
    violations = d["seeds_failed"]
else:
    settled = "yes" if d["end"] == "every event settled" else d["end"]
    violations = len(d["violations"])
command = sys.argv[5].replace(" --json", "")
# Two groups; the default workload publishes up to as many events again during the run.
print(f"| {n:,} | `{command}` | {4 * n:,} | {d['steps']:,} | {settled} | {violations} | {wall:.2f} s | "
      f"{user:.2f} s | {d['steps'] / max(wall, 1e-3):,.0f} | {d['steps'] / max(user, 1e-2):,.0f} | "
      f"{int(sys.argv[4]) / 1024:,.1f} MB |")
PY
done
echo

echo "## A recorded seed: --trace"
echo
echo "A recorded seed's timeline streams: each line is printed once final, and the recorder keeps"
echo "only what is still open, so its memory follows the live set and its time the steps."
echo
echo '```'
echo "/usr/bin/time -v $BIN sim --events N --seed 1 --trace --no-save | grep -c '^t[0-9]'   # best of $RUNS"
echo '```'
echo
echo "| --events | timeline lines | wall | peak RSS |"
echo "|---|---|---|---|"
count_timeline_lines() { grep -c '^t[0-9]' || true; }
for n in ${TRACE_SIZES:-1000 10000 100000 1000000}; do
  FILTER=count_timeline_lines best_of "$BIN" sim --events "$n" --seed 1 --trace --no-save
  lines=$(cat "$OUT/best.out")
  wall=$(field "Elapsed (wall clock) time (h:mm:ss or m:ss)")
  rss=$(field "Maximum resident set size (kbytes)")
  python3 -c 'import sys; n, lines, wall, rss = sys.argv[1:]
print(f"| {int(n):,} | {int(lines):,} | {wall} | {int(rss) / 1024:.1f} MB |")' "$n" "$lines" "$wall" "$rss"
done
echo

echo "## A large failing seed: its story and its replay"
echo
echo "A campaign re-runs its first failing seed, recorded up to the step that found its first"
echo "violation, to print the lines before it; \`replay\` streams the seed's whole timeline."
echo
FAIL_EVENTS=${FAIL_EVENTS:-100000}
"$BIN" sim --variant volatile-ack --events "$FAIL_EVENTS" --seed 1 --out "$OUT/found" > /dev/null || true
FOUND=$(ls "$OUT"/found/*.toml | head -1)
echo '```'
echo "/usr/bin/time -v $BIN sim --variant volatile-ack --events $FAIL_EVENTS --seeds 1..2 --threads 1 --no-save"
echo "$BIN sim --variant volatile-ack --events $FAIL_EVENTS --seed 1 --out DIR   # writes DIR/volatile-ack-seed1.toml"
echo "/usr/bin/time -v $BIN replay DIR/volatile-ack-seed1.toml > /dev/null"
echo '```'
echo
echo "| command | timeline lines printed | wall | peak RSS |"
echo "|---|---|---|---|"
best_of "$BIN" sim --variant volatile-ack --events "$FAIL_EVENTS" --seeds 1..2 --threads 1 --no-save
python3 -c 'import sys; lines, wall, rss = sys.argv[1:]
print(f"| sim --seeds 1..2 (the story of seed 1) | {int(lines):,} | {wall} | {int(rss) / 1024:.1f} MB |")' \
  "$(grep -c '^  t[0-9]' "$OUT/best.out" || true)" "$(field "Elapsed (wall clock) time (h:mm:ss or m:ss)")" \
  "$(field "Maximum resident set size (kbytes)")"
best_of "$BIN" replay "$FOUND"
python3 -c 'import sys; lines, wall, rss = sys.argv[1:]
print(f"| replay volatile-ack-seed1.toml | {int(lines):,} | {wall} | {int(rss) / 1024:.1f} MB |")' \
  "$(grep -c '^t[0-9]' "$OUT/best.out" || true)" "$(field "Elapsed (wall clock) time (h:mm:ss or m:ss)")" \
  "$(field "Maximum resident set size (kbytes)")"
# One record per timeline line; the object is one long line: counted as it streams.
json_timeline_lines() { tr ',' '\n' | grep -c '^"text":"t[0-9]' || true; }
FILTER=json_timeline_lines best_of "$BIN" replay "$FOUND" --json
python3 -c 'import sys; lines, wall, rss = sys.argv[1:]
print(f"| replay volatile-ack-seed1.toml --json (run three times: verdict, records, lines) | {int(lines):,} | {wall} | {int(rss) / 1024:.1f} MB |")' \
  "$(cat "$OUT/best.out")" "$(field "Elapsed (wall clock) time (h:mm:ss or m:ss)")" \
  "$(field "Maximum resident set size (kbytes)")"
# A drawing of 40 lines: those up to the first violation, and a stretch in the middle (the seed
# runs twice, streamed: once to find when the lines happened, once keeping that stretch).
MIDDLE=$(($(cat "$OUT/best.out") / 2))   # half the lines the --json run counted
for lines in "" "$MIDDLE..$((MIDDLE + 40))"; do
  best_of "$BIN" timeline "$FOUND" --svg "$OUT/drawn.svg" ${lines:+--lines "$lines"}
  python3 -c 'import re, sys; lines, told, wall, rss, size = sys.argv[1:]
flag = f" --lines {lines}" if lines else ""
a, b = map(int, re.match(r"t(\d+)\.\.t(\d+)", told).groups())
print(f"| timeline volatile-ack-seed1.toml --svg OUT{flag} (drew {told}; an SVG of {int(size):,} bytes) | {b - a:,} | {wall} | {int(rss) / 1024:.1f} MB |")' \
    "$lines" "$(sed -n 's/^drew \([^;]*\);.*/\1/p' "$OUT/best.out")" \
    "$(field "Elapsed (wall clock) time (h:mm:ss or m:ss)")" \
    "$(field "Maximum resident set size (kbytes)")" "$(wc -c < "$OUT/drawn.svg")"
done
echo

echo "## Large seeds of the protocols that hold"
echo
echo '```'
echo "$BIN sim --variant V --events N --seeds 0..20 --threads 2 --no-save --json   # N in 5000 100000"
echo '```'
echo
echo "| variant | --events | seeds | failed | inconclusive | steps | wall |"
echo "|---|---|---|---|---|---|---|"
for v in fenced redis-streams-fenced; do
  for n in 5000 100000; do
    "$BIN" sim --variant "$v" --events "$n" --seeds 0..20 --threads 2 --no-save --json \
      > "$OUT/large.json" || true
    python3 - "$OUT/large.json" "$v" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"| {sys.argv[2]} | {int(sys.argv[3]):,} | {d['seeds_run']} | {d['seeds_failed']} | "
      f"{d['seeds_inconclusive']} | {d['steps']:,} | {d['wall_ms'] / 1000:.1f} s |")
PY
  done
done
echo

echo "## Every mutant and redis-streams caught: seeds to the first failure"
echo
echo "For each variant, $WINDOWS campaigns over disjoint windows of 10,000 seeds, each stopping at"
echo "the first seed that breaks the variant's expected invariant; the figure is that seed's"
echo "position in its window (1 = the first seed)."
echo
echo '```'
echo "$BIN sim --variant V --seeds S..S+10000 --stop-on-failure --json --no-save --threads 2 [--swarm]"
echo '```'
echo
echo "| variant | expected | median (default mix) | min–max | median (--swarm) | min–max |"
echo "|---|---|---|---|---|---|"
for v in redis-streams unfenced-settle renew-revives lease-id-reuse max-seen-frontier \
  no-dead-letter volatile-ack nack-on-ambiguous worker-clock-expiry dlq-drop only-ack-fenced \
  attempts-reset stuck-lease; do
  for mode in default swarm; do
    flag=""; [ "$mode" = swarm ] && flag="--swarm"
    : > "$OUT/positions.$mode"
    for k in $(seq 0 $((WINDOWS - 1))); do
      s=$((k * 10000))
      # shellcheck disable=SC2086
      "$BIN" sim --variant "$v" --seeds "$s..$((s + 10000))" --stop-on-failure --json --no-save \
        --threads 2 $flag > "$OUT/window.json" || true
      python3 - "$OUT/window.json" "$s" >> "$OUT/positions.$mode" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["failures"].get(d["expected"])
print(f"{d['expected']} {f['seeds'][0] - int(sys.argv[2]) + 1 if f else 'none'}")
PY
    done
  done
  python3 - "$v" "$OUT/positions.default" "$OUT/positions.swarm" <<'PY'
import statistics, sys
cells, expected = [], "?"
for path in sys.argv[2:]:
    rows = [line.split() for line in open(path)]
    expected = rows[0][0]
    found = [int(p) for _, p in rows if p != "none"]
    missed = sum(1 for _, p in rows if p == "none")
    median = statistics.median(found) if found else "none"
    span = f"{min(found)}–{max(found)}" if found else "—"
    if missed:
        span += f" ({missed} windows missed)"
    cells += [f"{median:g}" if found else "none", span]
print(f"| {sys.argv[1]} | {expected} | " + " | ".join(cells) + " |")
PY
done
echo

echo "## The campaign hash: threads and backends"
echo
echo '```'
echo "$BIN sim --seeds 0..2000 --json --no-save --threads T --backend B   # T in 1 2, B in pure embedded"
echo '```'
echo
echo "| threads | backend | campaign hash |"
echo "|---|---|---|"
for t in 1 2; do
  for b in pure embedded; do
    hash=$("$BIN" sim --seeds 0..2000 --json --no-save --threads "$t" --backend "$b" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["campaign_hash"])')
    echo "| $t | $b | \`$hash\` |"
  done
done
echo

echo "## Coverage of the default 10,000-seed campaign"
echo
echo '```'
echo "$BIN sim --seeds 0..10000 --threads 2 --no-save"
echo '```'
echo
echo "| probe | seeds that reached it | occurrences | first seed |"
echo "|---|---|---|---|"
"$BIN" sim --seeds 0..10000 --threads 2 --no-save --json > "$OUT/coverage.json"
python3 - "$OUT/coverage.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for probe, t in d["coverage"].items():
    first = t["first_seed"] if t["first_seed"] is not None else "— (never reached)"
    print(f"| `{probe}` | {t['seeds']:,} of {d['seeds_run']:,} | {t['hits']:,} | {first} |")
PY

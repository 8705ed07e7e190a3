#!/usr/bin/env bash
# The two engines side by side: `leasehold check` (leasehold's own search) and `leasehold check
# --engine stateright` (stateright's breadth-first search on the same model), every variant, on
# the plain fault set without symmetry or partial-order reduction. Prints a markdown table: unique states, outcome and
# seconds of each, and whether they agree (the unique states and every property's verdict).
#
#   cargo build --release && bash benches/engines.sh > /tmp/engines.md
#   SIZES="2 3" bash benches/engines.sh        # events per configuration (default: 2 3)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/leasehold
sizes=${SIZES:-"2 3"}
plain="--workers 2 --max-attempts 2 --crashes 1 --lost-replies 0 --drops 0 --dups 0 --renews 0 --broker-restarts 0 --no-symmetry --no-partial-order --threads 1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"; }
echo "| variant | events | unique states (leasehold) | unique states (stateright) | outcome | seconds (leasehold) | seconds (stateright) | ratio | agree |"
echo "|---|---|---|---|---|---|---|---|---|"
disagree=0
for variant in $("$bin" protocols --json | python3 -c "import json,sys; print(' '.join(v['name'] for v in json.load(sys.stdin)))"); do
    for events in $sizes; do
        for engine in leasehold stateright; do
            "$bin" check --tailored --variant "$variant" --events "$events" $plain --engine "$engine" \
                --json --out "$out/found" > "$out/$engine.json" || true
        done
        ours=$(field "$out/leasehold.json" "r['counts']['unique']")
        theirs=$(field "$out/stateright.json" "r['counts']['unique']")
        outcome=$(field "$out/leasehold.json" "r['outcome']")
        t1=$(field "$out/leasehold.json" "'%.2f' % r['seconds']")
        t2=$(field "$out/stateright.json" "'%.2f' % r['seconds']")
        ratio=$(python3 -c "print('%.1f' % (max($t2,0.005)/max($t1,0.005)))")
        same=$(python3 - "$out/leasehold.json" "$out/stateright.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
print("yes" if a["counts"]["unique"] == b["counts"]["unique"] and a["properties"] == b["properties"] and a["outcome"] == b["outcome"] else "NO")
PY
)
        [ "$same" = yes ] || disagree=$((disagree + 1))
        echo "| \`$variant\` | $events | $ours | $theirs | $outcome | $t1 | $t2 | ${ratio}× | $same |"
    done
done
echo
echo "disagreements: $disagree"

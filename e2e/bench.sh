#!/usr/bin/env bash
# e2e/bench.sh — the one command that reproduces every table of
# docs/performance.md, on loopback only.
#
#   e2e/bench.sh                 # every table, the conformance module's short comparisons
#   DBXTOP_LONG=1 e2e/bench.sh   # + the conformance module's full comparisons
#   COUNT=3 e2e/bench.sh         # repeat each go benchmark 3 times (-count)
#   BASE=main e2e/bench.sh       # the scale goals side by side with that commit (e2e/goals.sh)
#   ONLY_SCALE=1 e2e/bench.sh    # the scale steps alone
#
# Raw outputs and the tables are kept in $OUT (default: a new temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${COUNT:-1}
OUT=${OUT:-$(mktemp -d -t dbxtop-bench.XXXXXX)}
mkdir -p "$OUT"
export DBXTOP_PERF_DIR="$OUT"
rm -f "$OUT"/*.md
# The e2e benchmarks drive the packages in-process and never run the
# binary, so e2e's TestMain need not build it.
export DBXTOP_BIN=${DBXTOP_BIN:-/bin/true}

# benchtable FILE: go benchmark lines as a Markdown table (every metric of
# a line, in order: value unit; value unit; ...).
benchtable() {
	[ -f "$1" ] || { echo "(no output: the step did not run)"; return 0; }
	echo "| benchmark | iterations | figures |"
	echo "|---|---|---|"
	awk '/^Benchmark/ {
		name=$1; sub(/-[0-9]+$/, "", name)
		figs=""
		for (i = 3; i + 1 <= NF; i += 2) figs = figs (figs == "" ? "" : "; ") $i " " $(i+1)
		printf "| %s | %s | %s |\n", name, $2, figs
	}' "$1"
}

# orphantable FILE: the conformance module's ORPHANS key=value log lines
# as a Markdown table, sorted by scenario and contender.
orphantable() {
	echo "| scenario | contender | n | ok | client errors | abandoned | leaked | requests | status polls |"
	echo "|---|---|---|---|---|---|---|---|---|"
	{ grep -o 'ORPHANS .*' "$1" 2>/dev/null || true; } | sort | awk '{
		delete v
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v["scenario"], v["contender"], v["n"], v["ok"], v["errors"], v["abandoned"], v["leaked"], v["requests"], v["status_polls"]
	}'
}

step() { printf '\n== %s\n' "$*" >&2; }

# run FILE CMD...: run a step, keep its output in $OUT/FILE, remember a
# failure but go on, so the tables of the other steps still print.
failed=0
run() {
	local file=$1
	shift
	if ! "$@" 2>&1 | tee "$OUT/$file" >&2; then
		echo "bench.sh: FAILED: $*" >&2
		failed=1
	fi
}

{
	echo "# dbxtop performance run"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- $(go version)"
	echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
} >"$OUT/machine.md"

other() { [ -z "${ONLY_SCALE:-}" ]; } # the steps that are not the scale goals'

other && step "simulator: GetOperationStatus/s (sources/sim)"
other && run sim.txt go test -run '^$' -bench 'GetOperationStatus' -benchtime 3s -benchmem -count "$COUNT" ./sources/sim/

other && step "frames (tui BenchmarkFrameOperationsView120x40)"
other && run frames.txt go test -run '^$' -bench 'FrameOperationsView120x40' -benchmem -count "$COUNT" ./tui/

step "refresh (engine snapshot + TUI rebuild + one frame), its parts, heap per operation (tui)"
# 2 s each, not a count: a refresh's garbage is collected some refreshes
# later, and five iterations caught or missed a collection by chance.
run refresh.txt go test -run '^$' -bench 'RefreshEngineSnapshotTUIRebuildFrame|EngineSnapshot|TUIRebuildRowsFromSnapshot' -benchtime 2s -benchmem -count "$COUNT" -timeout 20m ./tui/
run heap.txt go test -run '^$' -bench 'HeapPerOperationEngineTUISnapshot' -benchtime 1x -benchmem -count "$COUNT" -timeout 20m ./tui/

step "scale goals, this tree${BASE:+ against $BASE} (e2e/goals.sh)"
run goals.txt env OUT="$OUT/goals" e2e/goals.sh ${BASE:-}

step "server calls per operation-minute and staleness at 1k/10k live ops, 50 ms latency, contenders side by side (e2e)"
run scale.txt go test -run '^$' -bench 'ScaleCallsAndStaleness' -benchtime 1x -count "$COUNT" -timeout 40m ./e2e/

step "TUI process CPU, 10,000 and 1,000 live ops, 5 %/s replaced, 50 ms latency (real binaries in tmux)"
run cpu.txt e2e/bench_cpu.sh "$OUT"
run cpu1k.txt env CPU_OPS=1000 e2e/bench_cpu.sh "$OUT"

other && step "heap per followed operation (poller)"
other && run memory.txt go test -run '^$' -bench 'FollowedOperationMemory' -benchtime 1x -benchmem -count "$COUNT" -timeout 20m ./poller/

other && step "frames side by side, terminal bytes per second; polling cost vs freshness (e2e)"
other && run e2e.txt go test -run '^$' -bench 'FramesSideBySide|TerminalBytes|PollingCost' -benchtime 1x -benchmem -count "$COUNT" -timeout 30m ./e2e/

other && step "time to a truthful error, orphans: conformance module (sources/sim/conformance)"
if ! other; then
	: # the scale steps alone
elif [ "${DBXTOP_LONG:-}" = 1 ]; then
	run conformance.txt env -C sources/sim/conformance DBXTOP_LONG=1 go test -count=1 -v -timeout 30m \
		-run 'TestSDKUpsertExhaustedAnchor|TestOrphansUnderFaults|TestDbxtopProbe' .
else
	run conformance.txt env -C sources/sim/conformance go test -count=1 -v -timeout 10m \
		-run 'TestOrphans|TestDbxtopProbe|TestSDKUpsertExhausted' .
fi

{
	cat "$OUT/machine.md"
	echo
	echo "## Simulator: GetOperationStatus over loopback"
	echo
	benchtable "$OUT/sim.txt"
	echo
	echo "## Polling cost vs freshness (one run, three contenders side by side)"
	echo
	cat "$OUT"/polling.md 2>/dev/null || echo "(no table: see $OUT/e2e.txt)"
	echo
	echo "## Calls per operation-minute and staleness (one run, contenders side by side)"
	echo
	cat "$OUT"/scale.md 2>/dev/null || echo "(no table: see $OUT/scale.txt)"
	echo
	echo "## Refresh and heap"
	echo
	benchtable "$OUT/refresh.txt"
	echo
	benchtable "$OUT/heap.txt"
	echo
	echo "## Scale goals${BASE:+, side by side with $BASE}"
	echo
	cat "$OUT/goals/goals.md" 2>/dev/null || echo "(no table: see $OUT/goals.txt)"
	echo
	echo "## TUI process CPU"
	echo
	cat "$OUT"/cpu-10000.md "$OUT"/cpu-1000.md 2>/dev/null || echo "(no table: see $OUT/cpu.txt)"
	echo
	echo "## Frames"
	echo
	benchtable "$OUT/frames.txt"
	echo
	echo "Side by side (e2e BenchmarkFramesSideBySide; ratio to 1,000 operations):"
	echo
	echo "| measure | 1,000 operations | 10,000 | 100,000 |"
	echo "|---|---|---|---|"
	cat "$OUT"/frames.md 2>/dev/null || true
	echo
	echo "| workload | bytes to the terminal | writes | refreshes |"
	echo "|---|---|---|---|"
	cat "$OUT"/terminal-*.md 2>/dev/null || true
	echo
	echo "## Memory"
	echo
	benchtable "$OUT/memory.txt"
	echo
	echo "## Time to a truthful error; orphans under faults (conformance log lines)"
	echo
	orphantable "$OUT/conformance.txt"
	echo
	echo '```'
	grep -E 'ANCHOR|DBXTOP|^(--- (PASS|FAIL)|ok|FAIL)' "$OUT/conformance.txt" 2>/dev/null || echo "(no figure lines: see $OUT/conformance.txt)"
	echo '```'
} | tee "$OUT/tables.md"

echo >&2
echo "tables: $OUT/tables.md (raw outputs beside it)" >&2
exit "$failed"

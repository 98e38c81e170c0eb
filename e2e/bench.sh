#!/usr/bin/env bash
# e2e/bench.sh — the one command that reproduces every table of
# docs/performance.md (issue 9), on loopback only.
#
#   e2e/bench.sh                 # items 3, 4, 5, the simulator's rate, short items 1-2 (~8 min)
#   DBXTOP_LONG=1 e2e/bench.sh   # + the conformance module's full comparisons (items 1-2, ~20 min more)
#   COUNT=3 e2e/bench.sh         # repeat each go benchmark 3 times (-count)
#   ONLY16=1 e2e/bench.sh        # issue 16's steps alone (~30 min)
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

other() { [ -z "${ONLY16:-}" ]; } # the steps that are not issue 16's

other && step "simulator: GetOperationStatus/s (sources/sim)"
other && run sim.txt go test -run '^$' -bench 'GetOperationStatus' -benchtime 3s -benchmem -count "$COUNT" ./sources/sim/

other && step "item 4: frames (tui BenchmarkFrameOperationsView120x40)"
other && run frames.txt go test -run '^$' -bench 'FrameOperationsView120x40' -benchmem -count "$COUNT" ./tui/

step "issue 16: refresh (engine snapshot + TUI rebuild + one frame), its parts, heap per operation (tui)"
# 2 s each, not a count: a refresh's garbage is collected some refreshes
# later, and five iterations caught or missed a collection by chance.
run refresh.txt go test -run '^$' -bench 'RefreshEngineSnapshotTUIRebuildFrame|EngineSnapshot|TUIRebuildRowsFromSnapshot' -benchtime 2s -benchmem -count "$COUNT" -timeout 20m ./tui/
run heap.txt go test -run '^$' -bench 'HeapPerOperationEngineTUISnapshot' -benchtime 1x -benchmem -count "$COUNT" -timeout 20m ./tui/

# The same figures from the code before issue 16 (BEFORE, default the
# commit issue 16 started from), in the same run: its engine snapshot at
# 10,000, its TUI rebuild at 1k/10k/100k and its heap per operation.
BEFORE=${BEFORE:-76485b7}
step "issue 16: the same from $BEFORE (before), side by side"
if git cat-file -e "$BEFORE^{commit}" 2>/dev/null; then
	rm -rf "$OUT/before" && mkdir -p "$OUT/before"
	git archive "$BEFORE" | tar -x -C "$OUT/before"
	run before.txt env -C "$OUT/before" go test -run '^$' -bench 'BenchmarkSnapshot10k|BenchmarkRefresh$|FollowedOperationMemory' -benchtime 5x -benchmem -count "$COUNT" -timeout 20m ./poller/ ./tui/
else
	echo "bench.sh: no commit $BEFORE here; the before column is left out" >&2
fi

# And from the start of the second round of issue 16 (ROUND, default
# ef07434: query-history batches, AIMD concurrency, but full snapshots per
# refresh), whose benchmarks have today's names: the copy-on-write views
# are measured against it, and its binary is bench_cpu.sh's third column.
ROUND=${ROUND:-ef07434}
step "issue 16: the same from $ROUND (start of round two), side by side"
if git cat-file -e "$ROUND^{commit}" 2>/dev/null; then
	rm -rf "$OUT/round" && mkdir -p "$OUT/round"
	git archive "$ROUND" | tar -x -C "$OUT/round"
	run round.txt env -C "$OUT/round" go test -run '^$' -bench 'RefreshEngineSnapshotTUIRebuildFrame' -benchtime 2s -benchmem -count "$COUNT" -timeout 20m ./tui/
	run round-heap.txt env -C "$OUT/round" go test -run '^$' -bench 'HeapPerOperationEngineTUISnapshot' -benchtime 1x -benchmem -count "$COUNT" -timeout 20m ./tui/
else
	echo "bench.sh: no commit $ROUND here; the round-start column is left out" >&2
fi

# And the tree this session of issue 16 started from (PREV, default
# 662ece3, the end of round six): its refresh and heap benchmarks side by
# side, and its binary is bench_cpu.sh's session-start column.
PREV=${PREV:-662ece3}
step "issue 16: refresh and heap from $PREV (session start), side by side"
if git cat-file -e "$PREV^{commit}" 2>/dev/null; then
	rm -rf "$OUT/prev" && mkdir -p "$OUT/prev"
	git archive "$PREV" | tar -x -C "$OUT/prev"
	run prev.txt env -C "$OUT/prev" go test -run '^$' -bench 'RefreshEngineSnapshotTUIRebuildFrame' -benchtime 2s -benchmem -count "$COUNT" -timeout 20m ./tui/
	run prev-heap.txt env -C "$OUT/prev" go test -run '^$' -bench 'HeapPerOperationEngineTUISnapshot' -benchtime 1x -benchmem -count "$COUNT" -timeout 20m ./tui/
else
	echo "bench.sh: no commit $PREV here; the session-start column is left out" >&2
fi

step "issue 16: server calls per operation-minute and staleness at 1k/10k live ops, 50 ms latency, side by side (e2e, ~8 min)"
run scale.txt go test -run '^$' -bench 'ScaleCallsAndStaleness' -benchtime 1x -count "$COUNT" -timeout 40m ./e2e/

step "issue 16: TUI process CPU, 10,000 and 1,000 live ops, 5 %/s replaced, 50 ms latency (real binaries in tmux, 60 s each)"
run cpu.txt e2e/bench_cpu.sh "$OUT"
run cpu1k.txt env CPU_OPS=1000 e2e/bench_cpu.sh "$OUT"

other && step "item 5: heap per followed operation (poller)"
other && run memory.txt go test -run '^$' -bench 'FollowedOperationMemory' -benchtime 1x -benchmem -count "$COUNT" -timeout 20m ./poller/

other && step "item 4: frames side by side, terminal bytes per second; item 3: polling cost vs freshness (e2e, ~3 min each count)"
other && run e2e.txt go test -run '^$' -bench 'FramesSideBySide|TerminalBytes|PollingCost' -benchtime 1x -benchmem -count "$COUNT" -timeout 30m ./e2e/

other && step "items 1-2: conformance module (sources/sim/conformance)"
if ! other; then
	: # issue 16 alone
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
	echo "## Item 3: polling cost vs freshness (one run, three contenders side by side)"
	echo
	cat "$OUT"/polling.md 2>/dev/null || echo "(no table: see $OUT/e2e.txt)"
	echo
	echo "## Issue 16: calls per operation-minute and staleness (one run, contenders side by side)"
	echo
	cat "$OUT"/scale.md 2>/dev/null || echo "(no table: see $OUT/scale.txt)"
	echo
	echo "## Issue 16: refresh and heap (now)"
	echo
	benchtable "$OUT/refresh.txt"
	echo
	benchtable "$OUT/heap.txt"
	echo
	echo "## Issue 16: the same from the code before ($BEFORE)"
	echo
	benchtable "$OUT/before.txt"
	echo
	echo "## Issue 16: the same from the start of round two ($ROUND)"
	echo
	benchtable "$OUT/round.txt"
	echo
	benchtable "$OUT/round-heap.txt"
	echo
	echo "## Issue 16: the same from the start of this session ($PREV)"
	echo
	benchtable "$OUT/prev.txt"
	echo
	benchtable "$OUT/prev-heap.txt"
	echo
	echo "## Issue 16: TUI process CPU"
	echo
	cat "$OUT"/cpu-10000.md "$OUT"/cpu-1000.md 2>/dev/null || echo "(no table: see $OUT/cpu.txt)"
	echo
	echo "## Item 4: frames"
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
	echo "## Item 5: memory"
	echo
	benchtable "$OUT/memory.txt"
	echo
	echo "## Items 1-2: time to a truthful error; orphans under faults (conformance log lines)"
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

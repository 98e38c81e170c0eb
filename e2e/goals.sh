#!/usr/bin/env bash
# e2e/goals.sh [BASE] — the scale goals of docs/performance.md, this tree
# against BASE (a commit, default: this tree alone), in one run, one
# figure at a time with the two trees back to back, so that the machine's
# noise falls on both alike and the ratio is the figure. Loopback only.
#
#   e2e/goals.sh main          # this tree against main
#
# Figures (each go benchmark's metric; the TUI's CPU from pairs.sh cpu):
#   calls per operation-minute and p95 staleness, 10,000 live, 50 ms (e2e BenchmarkScaleCallsAndStaleness)
#   refresh at 100,000 operations, every one flagged (tui BenchmarkRefreshEngineSnapshotTUIRebuildFrame)
#   heap per followed operation at 10,000, flagged and not (tui BenchmarkHeapPerOperationEngineTUISnapshot)
#   TUI CPU at 10,000 live, 5 %/s replaced, 50 ms (e2e/pairs.sh cpu, both TUIs at once)
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:-}
OUT=${OUT:-$(mktemp -d -t dbxtop-goals.XXXXXX)}
mkdir -p "$OUT"
export DBXTOP_BIN=${DBXTOP_BIN:-/bin/true} # the e2e benchmarks run in-process
trees=(now)
rm -rf "${OUT:?}/now" && mkdir -p "$OUT/now"
git archive HEAD | tar -x -C "$OUT/now"
if [ -n "$BASE" ]; then
	rm -rf "$OUT/base" && mkdir -p "$OUT/base"
	git archive "$BASE" | tar -x -C "$OUT/base"
	trees=(base now)
fi

# bench NAME PKG FILTER [BENCHTIME]: run one benchmark in every tree, back to back.
bench() {
	local name=$1 pkg=$2 filter=$3 bt=${4:-1x}
	for t in "${trees[@]}"; do
		echo "== $name: $t" >&2
		env -C "$OUT/$t" DBXTOP_SCALE_OPS=10000 go test -run '^$' -bench "$filter" -benchtime "$bt" -benchmem -count 1 -timeout 40m "./$pkg/" >"$OUT/$t-$name.txt" 2>&1 || echo "goals.sh: $name failed in $t (see $OUT/$t-$name.txt)" >&2
	done
}
# metric TREE NAME SUB METRIC: METRIC of the result line whose name contains SUB.
metric() {
	awk -v s="$3" -v m="$4" '/^Benchmark/ && index($1, s) {for (i = 3; i <= NF; i++) if ($i == m) v = $(i-1)} END {print (v == "" ? "n/a" : v)}' "$OUT/$1-$2.txt"
}

bench scale e2e 'ScaleCallsAndStaleness'
bench refresh tui 'RefreshEngineSnapshotTUIRebuildFrame/ops=100000/flagged=all' 2s
bench heap tui 'HeapPerOperationEngineTUISnapshot/ops=10000$'

cpu_now=n/a cpu_base=n/a
if command -v tmux >/dev/null; then
	if [ -n "$BASE" ]; then
		PAIRS=${PAIRS:-1} OUT="$OUT/cpu" e2e/pairs.sh cpu "$BASE" HEAD | tee "$OUT/cpu.txt" >&2 || true
		cpu_base=$(awk '/^median A/ {sub(",", "", $3); print $3}' "$OUT/cpu.txt")
		cpu_now=$(awk '/^median A/ {print $6}' "$OUT/cpu.txt")
	else
		PAIRS=1 OUT="$OUT/cpu" e2e/pairs.sh cpu HEAD HEAD | tee "$OUT/cpu.txt" >&2 || true
		cpu_now=$(awk '/^median A/ {sub(",", "", $3); print $3}' "$OUT/cpu.txt")
	fi
else
	echo "goals.sh: tmux is not installed, the TUI's CPU is not measured" >&2
fi

row() { # LABEL GOAL BASEVALUE NOWVALUE
	local ratio=n/a
	if [[ $3 != n/a && $4 != n/a && $3 != "" && $4 != "" ]]; then ratio=$(awk -v a="$3" -v b="$4" 'BEGIN{printf "%.2f", b/a}'); fi
	echo "| $1 | $2 | ${3:-n/a} | ${4:-n/a} | $ratio |"
}
get() { if [ -f "$OUT/$1-$2.txt" ]; then metric "$1" "$2" "$3" "$4"; else echo n/a; fi; }
{
	echo "| figure | goal | base ${BASE:-(none)} | now $(git rev-parse --short HEAD) | now / base |"
	echo "|---|---|---|---|---|"
	row "calls per operation-minute, 10,000 live, 50 ms" "≤ 1" "$(get base scale Scale 'calls/op-min@10000')" "$(get now scale Scale 'calls/op-min@10000')"
	row "p95 staleness (s), 10,000 live, 50 ms" "≤ 3" "$(get base scale Scale 'p95-stale-s@10000')" "$(get now scale Scale 'p95-stale-s@10000')"
	row "refresh (ms), 100,000 flagged" "≤ 100" "$(awk -v v="$(get base refresh flagged=all ns/op)" 'BEGIN{print (v == "n/a" ? v : sprintf("%.1f", v/1e6))}')" "$(awk -v v="$(get now refresh flagged=all ns/op)" 'BEGIN{print (v == "n/a" ? v : sprintf("%.1f", v/1e6))}')"
	row "heap per operation (B), 10,000, none flagged" "≤ 2048" "$(get base heap flagged=none B/op-followed)" "$(get now heap flagged=none B/op-followed)"
	row "heap per operation (B), 10,000, all flagged" "≤ 2048" "$(get base heap flagged=all B/op-followed)" "$(get now heap flagged=all B/op-followed)"
	row "TUI CPU (% of a core), 10,000 live" "≤ 5" "$cpu_base" "$cpu_now"
	echo
	echo "- $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3)"
} | tee "$OUT/goals.md"
echo "table: $OUT/goals.md (raw outputs beside it)" >&2

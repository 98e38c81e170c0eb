#!/usr/bin/env bash
# e2e/proxybench.sh — dbxtop proxy against its anchors, one interleaved
# run (docs/performance.md, "dbxtop proxy against nginx and a plain Go
# proxy"): direct to the simulator, Debian's nginx (2 workers, upstream
# keepalive), a plain httputil.ReverseProxy (no observation: the floor for
# a Go proxy), the same with a lean same-goroutine upstream client, and
# dbxtop proxy at its default flags, each driven in turn (A B C D E A B …)
# by the three drivers, unchanged — databricks-sql-go, @databricks/sql (TLS
# only, so no direct row) and hive-driver — with 4 clients of SELECT 1.
# CPU per 1,000 statements is the proxy processes' utime+stime from
# /proc/PID/stat (nginx: master and workers).
#
#   e2e/proxybench.sh                          # 3 rounds of 5 s windows
#   BENCH_ROUNDS=5 BENCH_WINDOW=10s e2e/proxybench.sh
#   BENCH_DRIVERS=databricks-sql-go e2e/proxybench.sh
#   e2e/proxybench.sh soak                     # 10 minutes through dbxtop proxy (BENCH_SOAK=10m,
#                                              # BENCH_CLIENTS=4), judged against direct
#
# Needs nginx (Debian nginx-light), Node >= 20 and the pinned Node drivers
# (npm install --prefix sources/sim/conformance/node --no-audit --no-fund
# --no-save). Loopback only. Raw output and the table are kept in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d -t dbxtop-proxybench.XXXXXX)}
mkdir -p "$OUT"
export PATH="$PATH:/usr/sbin" # Debian's nginx

echo "proxybench: building dbxtop and plainproxy into $OUT" >&2
go build -o "$OUT/dbxtop" .
(cd sources/sim/conformance && go build -o "$OUT/plainproxy" ./plainproxy)

export DBXTOP_BIN="$OUT/dbxtop" PLAIN_PROXY_BIN="$OUT/plainproxy"

if [ "${1:-}" = soak ]; then
	(cd sources/sim/conformance &&
		nice go test -count=1 -run '^$' -bench '^BenchmarkProxySoak$' -benchtime 1x -v -timeout 60m .) 2>&1 |
		tee "$OUT/soak.txt" | grep --line-buffered -E 'SOAK|FAIL|panic' >&2 || true
	grep -q '^PASS' "$OUT/soak.txt" || { echo "proxybench: the soak failed; see $OUT/soak.txt" >&2; exit 1; }
	exit 0
fi
(cd sources/sim/conformance &&
	go test -count=1 -run '^$' -bench '^BenchmarkProxyAnchors$' -benchtime 1x -v -timeout 60m .) 2>&1 |
	tee "$OUT/raw.txt" | grep --line-buffered -E 'ANCHOR|FAIL|panic' >&2 || true

{
	echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- $(go version); nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'); node $(node --version 2>/dev/null || echo none)"
	echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
	echo
	echo "| driver | target | statements | failed | statements/s (4 clients) | CPU s per 1,000 statements |"
	echo "|---|---|---|---|---|---|"
	grep -o 'ANCHOR driver=.*' "$OUT/raw.txt" | awk '{
		delete v
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "| %s | %s | %s | %s | %s | %s |\n", v["driver"], v["target"], v["statements"], v["failed"], v["rate"], v["cpu_s_per_1000"]
	}'
	echo
	echo "| driver | CPU dbxtop / plain Go | CPU dbxtop / nginx | rate dbxtop / nginx | rate dbxtop / plain Go | rate dbxtop / direct | rate plain Go / nginx | rate plain Go lean / nginx |"
	echo "|---|---|---|---|---|---|---|---|"
	grep -o 'ANCHOR-RATIO driver=.*' "$OUT/raw.txt" | awk '{
		delete v
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", v["driver"], v["cpu_dbxtop_vs_plain"], v["cpu_dbxtop_vs_nginx"], v["rate_dbxtop_vs_nginx"], v["rate_dbxtop_vs_plain"], v["rate_dbxtop_vs_direct"], v["rate_plain_vs_nginx"], v["rate_lean_vs_nginx"]
	}'
} | tee "$OUT/table.md"
grep -q '^PASS' "$OUT/raw.txt" || { echo "proxybench: the benchmark failed; see $OUT/raw.txt" >&2; exit 1; }

#!/usr/bin/env bash
# e2e/bench_cpu.sh OUT — the TUI's CPU: the simulator (its own process)
# serves 10,000 live operations replaced at 5 % a second (--load-run 20s)
# with 50 ms ± 20 % latency; dbxtop's TUI runs against it in a detached
# tmux window for 60 s, and its process's CPU (utime+stime from /proc) is
# divided by the wall time. The binary runs twice: as shipped (the TUI
# takes one core, GOMAXPROCS=1) and with GOMAXPROCS=2. Writes
# $OUT/cpu-$OPS.md. Side by side with another tree: e2e/pairs.sh cpu.
# Loopback only.
set -euo pipefail
OUT=$1
OPS=${CPU_OPS:-10000}
SECS=${CPU_SECS:-60}
command -v tmux >/dev/null || { echo "bench_cpu.sh: tmux is not installed" >&2; exit 1; }
go build -o "$OUT/dbxtop-now" .
bins=("now:$OUT/dbxtop-now:" "now-on-2-cores:$OUT/dbxtop-now:GOMAXPROCS=2")
hz=$(getconf CLK_TCK)
echo "| binary | live ops | replaced | latency | TUI CPU (% of one core) | peak RSS | over |" >"$OUT/cpu-$OPS.md"
echo "|---|---|---|---|---|---|---|" >>"$OUT/cpu-$OPS.md"
for b in "${bins[@]}"; do
	name=${b%%:*} rest=${b#*:}
	bin=${rest%%:*} envs=${rest#*:}
	"$OUT/dbxtop-now" sim --scenario load --ops "$OPS" --load-run 20s --latency 50ms >"$OUT/sim-$name.out" 2>&1 &
	sim=$!
	for _ in $(seq 100); do [ -s "$OUT/sim-$name.out" ] && break; sleep 0.2; done
	host=$(head -1 "$OUT/sim-$name.out" | sed 's/^host=\([^ ]*\).*/\1/')
	token=$(head -1 "$OUT/sim-$name.out" | sed 's/.*token=\([^ ]*\).*/\1/')
	sleep 25 # every operation started (the load scenario spreads them over 20 s)
	sess=dbxtop-cpu-$$-$name
	tmux new-session -d -s "$sess" -x 120 -y 40 "$envs DATABRICKS_TOKEN=$token exec $bin --host $host"
	sleep 2
	pid=$(tmux list-panes -t "$sess" -F '#{pane_pid}')
	t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
	s0=$(date +%s.%N)
	sleep "$SECS"
	t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
	s1=$(date +%s.%N)
	rss=$(awk '/^VmHWM:/{printf "%.0f MB", $2/1024}' "/proc/$pid/status")
	tmux kill-session -t "$sess" || true
	kill "$sim" && wait "$sim" || true
	pct=$(awk -v a="$t0" -v b="$t1" -v x="$s0" -v y="$s1" -v hz="$hz" 'BEGIN{printf "%.1f", 100*(b-a)/hz/(y-x)}')
	echo "$name: $pct % of a core over $SECS s, peak RSS $rss" >&2
	echo "| $name | $OPS | 5 %/s | 50 ms | $pct % | $rss | ${SECS} s |" >>"$OUT/cpu-$OPS.md"
done

cat "$OUT/cpu-$OPS.md"

#!/usr/bin/env bash
# e2e/bench_cpu.sh OUT — issue 16's TUI CPU figure: the simulator (its own
# process) serves 10,000 live operations replaced at 5 % a second
# (--load-run 20s) with 50 ms ± 20 % latency; dbxtop's TUI runs against it
# in a detached tmux window for 60 s, and its process's CPU (utime+stime
# from /proc) is divided by the wall time. Run for the binary built from
# this tree and, when $OUT/before holds the earlier tree (bench.sh puts it
# there), for that one too, one after the other against the same kind of
# workspace; likewise for $OUT/round (the start of issue 16's second
# round), and for $OUT/prev (the start of this session). The tree's
# binary runs twice: as shipped (the TUI takes one core, GOMAXPROCS=1)
# and with GOMAXPROCS=2, so that the table tells the engine's changes
# from the choice of one core. Writes $OUT/cpu-$OPS.md. Loopback only.
set -euo pipefail
OUT=$1
OPS=${CPU_OPS:-10000}
SECS=${CPU_SECS:-60}
command -v tmux >/dev/null || { echo "bench_cpu.sh: tmux is not installed" >&2; exit 1; }
go build -o "$OUT/dbxtop-now" .
bins=("now:$OUT/dbxtop-now:" "now-on-2-cores:$OUT/dbxtop-now:GOMAXPROCS=2")
if [ -d "$OUT/before" ]; then
	(cd "$OUT/before" && go build -o "$OUT/dbxtop-before" .) && bins+=("before:$OUT/dbxtop-before:")
fi
if [ -d "$OUT/round" ]; then
	(cd "$OUT/round" && go build -o "$OUT/dbxtop-round" .) && bins+=("round-start:$OUT/dbxtop-round:")
fi
if [ -d "$OUT/prev" ]; then
	(cd "$OUT/prev" && go build -o "$OUT/dbxtop-prev" .) && bins+=("session-start:$OUT/dbxtop-prev:")
fi
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

# Side by side at once: this tree's binary and the session start's watch
# ONE simulator at the same time for the same 60 s, so the machine's noise
# (±10 % between runs one after the other here) falls on both alike and
# their ratio is the figure.
if [ -x "$OUT/dbxtop-prev" ]; then
	"$OUT/dbxtop-now" sim --scenario load --ops "$OPS" --load-run 20s --latency 50ms >"$OUT/sim-pair.out" 2>&1 &
	sim=$!
	for _ in $(seq 100); do [ -s "$OUT/sim-pair.out" ] && break; sleep 0.2; done
	host=$(head -1 "$OUT/sim-pair.out" | sed 's/^host=\([^ ]*\).*/\1/')
	token=$(head -1 "$OUT/sim-pair.out" | sed 's/.*token=\([^ ]*\).*/\1/')
	sleep 25
	sa=dbxtop-cpu-$$-pair-now sb=dbxtop-cpu-$$-pair-prev
	tmux new-session -d -s "$sa" -x 120 -y 40 "DATABRICKS_TOKEN=$token exec $OUT/dbxtop-now --host $host"
	tmux new-session -d -s "$sb" -x 120 -y 40 "DATABRICKS_TOKEN=$token exec $OUT/dbxtop-prev --host $host"
	sleep 2
	pa=$(tmux list-panes -t "$sa" -F '#{pane_pid}') pb=$(tmux list-panes -t "$sb" -F '#{pane_pid}')
	a0=$(awk '{print $14+$15}' "/proc/$pa/stat") b0=$(awk '{print $14+$15}' "/proc/$pb/stat")
	sleep "$SECS"
	a1=$(awk '{print $14+$15}' "/proc/$pa/stat") b1=$(awk '{print $14+$15}' "/proc/$pb/stat")
	tmux kill-session -t "$sa" || true
	tmux kill-session -t "$sb" || true
	kill "$sim" && wait "$sim" || true
	line=$(awk -v a0="$a0" -v a1="$a1" -v b0="$b0" -v b1="$b1" -v hz="$hz" -v s="$SECS" 'BEGIN{a=100*(a1-a0)/hz/s; b=100*(b1-b0)/hz/s; printf "%.1f %% | %.1f %% | %.2f×", a, b, a/b}')
	echo "pair: now | session-start | ratio: $line" >&2
	{
		echo
		echo "| at once, one simulator ($OPS live) | now | session start | ratio |"
		echo "|---|---|---|---|"
		echo "| ${SECS} s | $line |"
	} >>"$OUT/cpu-$OPS.md"
fi
cat "$OUT/cpu-$OPS.md"

#!/usr/bin/env bash
# e2e/pairs.sh — with against without: an optimization's effect as the
# median of alternating pairs, each pair run in one go so that the
# machine's noise falls on both sides alike. The trees are two commits of
# this repository (A: with it, B: without it), taken with git archive.
#
#   e2e/pairs.sh bench A B PKG BENCH [METRIC]  # go benchmark BENCH of PKG, A then B, B then A, ...
#   e2e/pairs.sh cpu A B                       # TUI CPU, both TUIs watching one simulator at once
#   e2e/pairs.sh cpu --change 'SUBJECT'        # A: the parent of the commit SUBJECT names
#                                              # (a git :/ regex), B: that commit (its removal)
#
#   PAIRS=5 (default)   how many pairs
#   BENCHTIME=2s        -benchtime of a bench pair
#   CPU_OPS=10000       live operations of a cpu pair (50 ms latency, 5 %/s replaced)
#   CPU_SECS=60         how long a cpu pair measures
#
# Prints each pair and the median of the B/A ratios (above 1: B costs
# more, so A's optimization buys that much). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=$1
if [ "${2:-}" = --change ]; then
	c=$(git rev-parse --verify "${3:?--change needs a commit subject}^{commit}" 2>/dev/null ||
		git rev-parse --verify ":/$3")
	A=$c~ B=$c
else
	A=$2 B=$3
fi
shift 3
PAIRS=${PAIRS:-5}
OUT=${OUT:-$(mktemp -d -t dbxtop-pairs.XXXXXX)}
for t in A B; do
	rm -rf "${OUT:?}/$t" && mkdir -p "$OUT/$t"
	git archive "${!t}" | tar -x -C "$OUT/$t"
done

median() { sort -g | awk '{v[NR]=$1} END{if (NR%2) print v[(NR+1)/2]; else printf "%.4g\n", (v[NR/2]+v[NR/2+1])/2}'; }

case $mode in
bench)
	pkg=$1 bench=$2 metric=${3:-ns/op}
	figure() { # TREE: the metric of the benchmark's (last) result line
		env -C "$OUT/$1" go test -run '^$' -bench "$bench" -benchtime "${BENCHTIME:-2s}" -benchmem -count 1 -timeout 30m "./$pkg/" 2>&1 |
			tee -a "$OUT/$1.txt" |
			awk -v m="$metric" '/^Benchmark/ {for (i = 3; i <= NF; i++) if ($i == m) v = $(i-1)} END {print v}'
	}
	for i in $(seq "$PAIRS"); do
		if ((i % 2)); then a=$(figure A) b=$(figure B); else b=$(figure B) a=$(figure A); fi
		echo "pair $i: A $a $metric, B $b $metric, B/A $(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.3f", b/a}')"
		echo "$a $b" >>"$OUT/pairs"
	done
	;;
cpu)
	command -v tmux >/dev/null || { echo "pairs.sh: tmux is not installed" >&2; exit 1; }
	OPS=${CPU_OPS:-10000} SECS=${CPU_SECS:-60}
	(cd "$OUT/A" && go build -o "$OUT/dbxtop-A" .)
	(cd "$OUT/B" && go build -o "$OUT/dbxtop-B" .)
	hz=$(getconf CLK_TCK)
	ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
	for i in $(seq "$PAIRS"); do
		"$OUT/dbxtop-A" sim --scenario load --ops "$OPS" --load-run 20s --latency 50ms >"$OUT/sim.out" 2>&1 &
		sim=$!
		for _ in $(seq 100); do [ -s "$OUT/sim.out" ] && break; sleep 0.2; done
		host=$(head -1 "$OUT/sim.out" | sed 's/^host=\([^ ]*\).*/\1/')
		token=$(head -1 "$OUT/sim.out" | sed 's/.*token=\([^ ]*\).*/\1/')
		sleep 25 # every operation started (the load scenario spreads them over 20 s)
		order="A B"
		((i % 2)) || order="B A"
		for t in $order; do
			tmux new-session -d -s "dbxtop-pairs-$$-$t" -x 120 -y 40 "DATABRICKS_TOKEN=$token exec $OUT/dbxtop-$t --host $host"
		done
		sleep 2
		pa=$(tmux list-panes -t "dbxtop-pairs-$$-A" -F '#{pane_pid}') pb=$(tmux list-panes -t "dbxtop-pairs-$$-B" -F '#{pane_pid}')
		a0=$(ticks "$pa") b0=$(ticks "$pb")
		sleep "$SECS"
		a1=$(ticks "$pa") b1=$(ticks "$pb")
		tmux kill-session -t "dbxtop-pairs-$$-A" || true
		tmux kill-session -t "dbxtop-pairs-$$-B" || true
		kill "$sim" && wait "$sim" || true
		a=$(awk -v x="$a0" -v y="$a1" -v hz="$hz" -v s="$SECS" 'BEGIN{printf "%.2f", 100*(y-x)/hz/s}')
		b=$(awk -v x="$b0" -v y="$b1" -v hz="$hz" -v s="$SECS" 'BEGIN{printf "%.2f", 100*(y-x)/hz/s}')
		echo "pair $i: A $a % of a core, B $b %, B/A $(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.3f", b/a}')"
		echo "$a $b" >>"$OUT/pairs"
	done
	;;
*)
	echo "usage: e2e/pairs.sh bench|cpu A B [PKG BENCH [METRIC]]" >&2
	exit 2
	;;
esac
echo "median A: $(awk '{print $1}' "$OUT/pairs" | median), median B: $(awk '{print $2}' "$OUT/pairs" | median)"
echo "median B/A over $PAIRS pairs: $(awk '{printf "%.4f\n", $2/$1}' "$OUT/pairs" | median)"

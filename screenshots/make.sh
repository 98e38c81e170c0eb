#!/usr/bin/env bash
# Regenerates screenshots/*.png from a real `dbxtop demo` run (and
# `dbxtop sim` runs for the unreachable banner and the fleet): the binary
# is built, the demo runs in a private tmux server at a fixed 120x40, keys
# reach each view, `tmux capture-pane -e` takes the screen with its colours
# and charmbracelet/freeze renders it to PNG.
#
#   screenshots/make.sh            # all screenshots
#   KEEP=1 screenshots/make.sh     # keep the .ansi captures in screenshots/ansi/
#   ONLY=fleet screenshots/make.sh # only the multi-workspace screenshot
#
# Needs: go, tmux, rsvg-convert (Debian: librsvg2-bin) and a monospace font
# (fonts-dejavu-core). freeze writes SVG and rsvg-convert rasterises it:
# freeze's own PNG path (resvg in wazero) crashes under Go 1.26 here.
# Nothing leaves the machine: the demo's simulated
# workspace listens on 127.0.0.1 only. Look at every PNG before committing.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=screenshots
FREEZE=(go run github.com/charmbracelet/freeze@v0.2.2)
WORK=$(mktemp -d)
SOCK="dbxtop-shots-$$"
COLS=120
ROWS=40
# Bound every wait: the demo raises every flag kind within three minutes
# (e2e TestDemoShowsEveryFlagUnattended checks it).
FLAG_TIMEOUT=${FLAG_TIMEOUT:-180}

tm() { tmux -L "$SOCK" -f "$WORK/tmux.conf" "$@"; }
cleanup() {
	tm kill-server 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

for tool in tmux rsvg-convert; do
	command -v "$tool" >/dev/null || { echo "make.sh: $tool is required (apt-get install tmux librsvg2-bin fonts-dejavu-core)" >&2; exit 1; }
done

echo "building dbxtop..."
go build -o "$WORK/dbxtop" .

# No status line: the pane gets all 40 rows.
printf 'set -g status off\nset -g default-terminal "tmux-256color"\n' >"$WORK/tmux.conf"
if [[ ${ONLY:-} != fleet ]]; then
	tm new-session -d -s shots -x "$COLS" -y "$ROWS" \
		"env TERM=xterm-256color COLORTERM=truecolor '$WORK/dbxtop' demo --seed 7; sleep 600"
fi

screen() { tm capture-pane -p -t shots; }

# wait_for TEXT SECONDS [-E]: poll the pane until TEXT (with -E an extended
# regular expression) shows, or fail.
wait_for() {
	local text=$1 limit=$2 mode=${3:--F} waited=0
	until screen | grep -q "$mode" -- "$text"; do
		if ((waited >= limit * 2)); then
			echo "make.sh: \"$text\" did not show within ${limit}s; screen:" >&2
			screen >&2
			exit 1
		fi
		sleep 0.5
		waited=$((waited + 1))
	done
}

# key KEY...: one key at a time, so "Escape" then "x" is never read as alt+x.
key() {
	for k in "$@"; do
		tm send-keys -t shots "$k"
		sleep 0.4
	done
}

# shot NAME: capture with colours and render NAME.png.
shot() {
	local name=$1
	sleep 0.6 # let the frame that follows the last key land
	# freeze 0.2.2 ignores SGR 39/49 (default colours, which tmux emits to
	# end a coloured span) and 7 (reverse, the selected row): map them to
	# explicit colours so the PNG shows what the terminal shows.
	tm capture-pane -e -p -t shots |
		perl -pe 's/\e\[0;7m/\e[0;48;5;238m/g; s/\e\[7m/\e[48;5;238m/g; s/\e\[39m/\e[38;5;252m/g; s/\e\[49m//g' \
			>"$WORK/$name.ansi"
	"${FREEZE[@]}" "$WORK/$name.ansi" --language ansi --window --padding 20 \
		--font.family "DejaVu Sans Mono" --font.size 14 -o "$WORK/$name.svg" >/dev/null
	rsvg-convert --zoom 1.5 "$WORK/$name.svg" -o "$OUT/$name.png"
	if [[ -n ${KEEP:-} ]]; then
		mkdir -p "$OUT/ansi"
		cp "$WORK/$name.ansi" "$OUT/ansi/"
	fi
	echo "wrote $OUT/$name.png"
}

# fleet: three contexts (docs/fleet.md) — two simulators and one workspace
# that refuses connections — watched by one TUI with --context all. The
# simulators look handles up leniently: with no proxy in this picture,
# dbxtop reads the owners' activity through handles it rebuilds.
fleet() {
	"$WORK/dbxtop" sim --seed 3 --owner-activity --lenient-handles >"$WORK/sa.out" 2>/dev/null &
	"$WORK/dbxtop" sim --seed 9 --owner-activity --lenient-handles >"$WORK/sb.out" 2>/dev/null &
	local a b
	for f in sa sb; do
		until [[ -s $WORK/$f.out ]]; do sleep 0.2; done
	done
	read -r a _ <"$WORK/sa.out"
	read -r b _ <"$WORK/sb.out"
	{
		printf '[prod]\nhost = %s\ntoken = %s\n\n' "${a#host=}" "$(sed -n 's/.* token=\([^ ]*\).*/\1/p' "$WORK/sa.out")"
		printf '[staging]\nhost = %s\ntoken = %s\n\n' "${b#host=}" "$(sed -n 's/.* token=\([^ ]*\).*/\1/p' "$WORK/sb.out")"
		printf '[dr]\nhost = http://127.0.0.1:9\ntoken = unused\n'
	} >"$WORK/databrickscfg"
	printf '[contexts.prod]\nprofile = "prod"\n[contexts.staging]\nprofile = "staging"\n[contexts.dr]\nprofile = "dr"\n' >"$WORK/config.toml"
	tm new-session -d -s shots -x "$COLS" -y "$ROWS" \
		"env TERM=xterm-256color COLORTERM=truecolor DATABRICKS_CONFIG_FILE='$WORK/databrickscfg' '$WORK/dbxtop' --config '$WORK/config.toml' --context all --inactivity-warn 15s --server-idle-timeout 90s --leak-after 20s; sleep 600"
	wait_for "[Operations]" 30
	wait_for "dr DOWN" 60
	wait_for "INACTIVE" "$FLAG_TIMEOUT"
	key g
	shot multi-workspace
	wait_for "REAPED" "$FLAG_TIMEOUT"
	key Tab Tab Tab
	wait_for "[Clients]" 10
	wait_for "orphans" 10 # the abandoning driver is the first row
	shot clients
	key q
	tm kill-session -t shots
	kill %1 %2 2>/dev/null || true
}
if [[ ${ONLY:-} == fleet ]]; then
	fleet
	exit 0
fi

echo "waiting for the demo's flags (at most ${FLAG_TIMEOUT}s)..."
wait_for "[Operations]" 30
wait_for "CRIT" "$FLAG_TIMEOUT"
# EXHAUSTED, or its short name when the header needs them.
wait_for "EXHAUST" "$FLAG_TIMEOUT"

# Operations, most severe first, cursor on the top row.
key g
shot operations

# Detail of the most severe operation (g again: the one under the cursor
# may have been closed since, and then nothing is selected).
key g Enter
wait_for "Polls and closes" 10
shot detail
key Escape

# Endpoints: the exhausted ones' badges, messages and request ids, and
# the incident's endpoint (vs-endpoint-1, second in the list) after its
# first refusal, its limit learned, with its seven indexes expanded.
key Tab
wait_for "[Endpoints]" 10
wait_for 'vs-endpoint-1 .* lrn' "$FLAG_TIMEOUT" -E
key j Enter
shot endpoints
key Enter k

key Tab
wait_for "[Events]" 10
shot events

# Warehouses: each listed warehouse, dbxtop's counts and flags on it.
key Tab Tab
wait_for "[Warehouses]" 10
wait_for "RUNNING" 10
shot warehouses
key BTab BTab
wait_for "[Events]" 10

key "?"
wait_for "[Help]" 10
shot help
# ? returns to the view help was opened from (Events); back to Operations.
key "?" BTab BTab

# A confirmation dialog: cancel the most severe running operation
# (answered No). The filter keeps finished ones, which have nothing to
# cancel, out of the way.
wait_for "[Operations]" 10
key / R U N N I N G Enter g x
wait_for "c cancels and closes" 10
shot confirm
key n Escape

# One action over a set: every UNCLOSED operation the filter lists,
# re-closed after one confirmation (answered No).
wait_for "UNCLOSED" "$FLAG_TIMEOUT"
tm send-keys -t shots "/"
tm send-keys -t shots -l "flag:unclosed"
key Enter C
wait_for "UNCLOSED operation" 10
shot set-action
key n Escape

# The same demo at 80x24, the size the screen is designed for, once
# REAPED (the last operation kind) has come: the header shows every
# raised kind.
tm resize-window -t shots -x 80 -y 24
key Escape g
wait_for "[Operations]" 10
wait_for "REAPED" "$FLAG_TIMEOUT"
shot operations-80x24

key q
tm kill-session -t shots 2>/dev/null || true

# The unreachable-workspace banner: dbxtop with a wrong token against a
# simulator (`dbxtop sim`) at 80x24.
tm new-session -d -s sim "'$WORK/dbxtop' sim --seed 7 >'$WORK/sim.out'; sleep 600"
for _ in $(seq 1 40); do [[ -s $WORK/sim.out ]] && break; sleep 0.25; done
host=$(grep -o 'host=[^ ]*' "$WORK/sim.out" | cut -d= -f2)
tm new-session -d -s shots -x 80 -y 24 \
	"env TERM=xterm-256color COLORTERM=truecolor DATABRICKS_HOST='$host' DATABRICKS_TOKEN=dapiWRONG0123456789abcdef '$WORK/dbxtop' --refresh 2s; sleep 600"
wait_for "cannot observe the workspace" 30
shot unreachable
key q
tm kill-session -t shots 2>/dev/null || true
tm kill-session -t sim 2>/dev/null || true

fleet
echo "done: look at every PNG before committing."

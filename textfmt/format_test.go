package textfmt

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestDuration(t *testing.T) {
	cases := map[time.Duration]string{
		0: "0s", 499 * ms: "0s", 500 * ms: "1s", 45 * time.Second: "45s", 72 * time.Second: "1m12s",
		time.Hour + 5*time.Minute: "1h05m", 27 * time.Hour: "1d03h", -90 * time.Second: "-1m30s",
	}
	for d, want := range cases {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
	if got := Count(-1234567); got != "-1,234,567" {
		t.Errorf("Count = %q", got)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		12 << 20: "12.0 MiB", -2048: "-2.0 KiB", math.MinInt64: "-8.0 EiB", math.MaxInt64: "8.0 EiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCountShortAndElapsed(t *testing.T) {
	for n, want := range map[int64]string{950: "950", 12345: "12.3k", 1_900_000: "1.9M", 2_000_000_000: "2.0B"} {
		if got := CountShort(n); got != want {
			t.Errorf("CountShort(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Elapsed(1234 * ms); got != "1.2s" {
		t.Errorf("Elapsed = %q", got)
	}
	if got := Elapsed(250400 * time.Microsecond); got != "250ms" {
		t.Errorf("Elapsed = %q", got)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := Age(now, now.Add(-90*time.Second)); got != "1m30s" {
		t.Errorf("Age = %q", got)
	}
	if got := Age(now, now.Add(time.Second)); got != "0s" {
		t.Errorf("Age of a future time = %q", got)
	}
	if OrDash("") != "-" || OrDash("x") != "x" || DurationOr(nil, "?") != "?" {
		t.Error("OrDash/DurationOr")
	}
}

func TestCountApprox(t *testing.T) {
	cases := map[int64]string{0: "0", 9_999: "9,999", 45_200: "45.2 k", 2_000_000: "2 M", 1_984_112: "1.98 M",
		320_000_000: "320 M", 1_000_000_000: "1 B", 161_000_000: "161 M", 999_999_999: "1000 M"}
	for n, want := range cases {
		if got := CountApprox(n); got != want {
			t.Errorf("CountApprox(%d) = %q, want %q", n, got, want)
		}
	}
}

// readDuration reads Duration's output back: its sign and its two units
// as seconds; ok is false for anything not in Duration's form (a second
// unit of two digits, below its limit).
func readDuration(s string) (sec int64, neg, ok bool) {
	s, neg = strings.CutPrefix(s, "-")
	units := map[byte]int64{'s': 1, 'm': 60, 'h': 3600, 'd': 86400}
	next := map[byte]byte{'m': 's', 'h': 'm', 'd': 'h'}
	limit := map[byte]int64{'s': 60, 'm': 60, 'h': 24}
	i := strings.IndexAny(s, "smhd")
	if i <= 0 {
		return 0, neg, false
	}
	first, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || first < 0 || strconv.FormatInt(first, 10) != s[:i] {
		return 0, neg, false
	}
	u := s[i]
	rest := s[i+1:]
	if u == 's' {
		return first, neg, rest == "" && first < 60
	}
	v := next[u]
	if len(rest) != 3 || rest[2] != v {
		return 0, neg, false
	}
	second, err := strconv.ParseInt(rest[:2], 10, 64)
	if err != nil || second < 0 || second >= limit[v] {
		return 0, neg, false
	}
	return first*units[u] + second*units[v], neg, true
}

// Duration's text, read back, is the duration rounded to the second and
// then cut to the text's smaller unit, in the form the table cells expect.
func FuzzDurationReadsBack(f *testing.F) {
	for _, d := range []int64{0, 499e6, 500e6, 59499e6, 59500e6, 3599e9, 3600e9, 86399e9, 86400e9, -61e9, math.MaxInt64 - 1e9, math.MinInt64, math.MaxInt64} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		d := time.Duration(n)
		got := Duration(d)
		sec, neg, ok := readDuration(got)
		if !ok || neg != (n < 0) {
			t.Fatalf("Duration(%d) = %q: not a duration in two units", n, got)
		}
		if n <= math.MinInt64+int64(time.Second) || n >= math.MaxInt64-int64(time.Second) {
			return // rounding at the ends of the range is a nanosecond off
		}
		if d < 0 {
			d = -d
		}
		s := int64((d + time.Second/2) / time.Second)
		want := s
		switch {
		case s >= 86400:
			want = s - s%3600
		case s >= 3600:
			want = s - s%60
		}
		if sec != want {
			t.Fatalf("Duration(%d) = %q reads back as %ds, want %ds", n, got, sec, want)
		}
	})
}

func TestPlural(t *testing.T) {
	for n, want := range map[int64]string{0: "0 orphans", 1: "1 orphan", 2: "2 orphans", -1: "-1 orphans"} {
		if got := Plural(n, "orphan", "orphans"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

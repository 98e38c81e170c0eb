package textfmt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration renders a duration the way an operator reads it in a table
// cell or flag detail: whole seconds (rounded), at most two units ("45s",
// "1m12s", "2h05m", "3d04h"). Negative durations get a minus sign.
func Duration(d time.Duration) string {
	if d < 0 {
		if d == math.MinInt64 {
			d++ // its negation overflows; a nanosecond does not show
		}
		return "-" + Duration(-d)
	}
	s := int64((d + time.Second/2) / time.Second)
	if d > math.MaxInt64-time.Second/2 {
		s = int64(d / time.Second) // rounding would overflow
	}
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, (s%3600)/60)
	default:
		return fmt.Sprintf("%dd%02dh", s/86400, (s%86400)/3600)
	}
}

// DurationOr is Duration(*d), or unknown when d is nil (a value dbxtop
// could not establish).
func DurationOr(d *time.Duration, unknown string) string {
	if d == nil {
		return unknown
	}
	return Duration(*d)
}

// Age is how long ago t was at now, as Duration renders it. An age is
// never negative: a t slightly ahead of now (clock skew) reads "0s".
func Age(now, t time.Time) string { return Duration(max(now.Sub(t), 0)) }

// Elapsed renders a measured time (a retry wait, a call's elapsed time)
// with the precision that matters for it: 100 ms steps from a second up,
// milliseconds below ("1.2s", "250ms").
func Elapsed(d time.Duration) string {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// Count renders a count with thousands separators (1,234,567).
func Count(n int64) string {
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-(n + 1)) + 1 // safe for math.MinInt64
	}
	digits := strconv.FormatUint(u, 10)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// CountShort renders a count compactly for narrow columns: 950, 12.3k,
// 1.9M, 2.0B.
func CountShort(n int64) string {
	f := float64(n)
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", f/1e3)
	case n < 1_000_000_000:
		return fmt.Sprintf("%.1fM", f/1e6)
	}
	return fmt.Sprintf("%.1fB", f/1e9)
}

// CountApprox renders a large count for prose, three significant digits
// and a spaced unit: 2 M, 1.98 M, 320 M, 1 B, 45.2 k (counts under 10,000
// exactly, with separators). The published capacity figures use it
// ("≈2 M": they are approximate, so a decimal would claim too much).
func CountApprox(n int64) string {
	f := float64(n)
	unit := ""
	switch {
	case n >= 1_000_000_000:
		f, unit = f/1e9, " B"
	case n >= 1_000_000:
		f, unit = f/1e6, " M"
	case n >= 10_000:
		f, unit = f/1e3, " k"
	default:
		return Count(n)
	}
	s := strconv.FormatFloat(f, 'g', 3, 64)
	if strings.Contains(s, "e") {
		s = strconv.FormatFloat(f, 'f', 0, 64)
	}
	return s + unit
}

// Bytes renders a size in IEC units with one decimal from KiB up
// ("512 B", "1.5 KiB", "12.0 MiB"); negative sizes get a minus sign.
func Bytes(n int64) string {
	if n < 0 {
		if n == -n { // math.MinInt64
			return "-8.0 EiB"
		}
		return "-" + Bytes(-n)
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// OrDash is s, or "-" when s is empty, so an empty cell still reads as
// "nothing here" rather than as a layout glitch.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Plural is n with its noun, singular for exactly one: "1 attempt",
// "3 attempts", "0 attempts".
func Plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

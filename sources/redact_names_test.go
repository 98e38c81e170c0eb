package sources

import "testing"

// TestRedactKeepsNames: redaction hides values, never the header's name
// or scheme.
func TestRedactKeepsNames(t *testing.T) {
	for in, want := range map[string]string{
		"the admin API needs Authorization: Bearer <admin token>": "the admin API needs Authorization: Bearer [REDACTED]",
		"Authorization: Bearer dapi0123456789abcdef":              "Authorization: Bearer [REDACTED]",
		"sent Bearer abcdef123456 upstream":                       "sent Bearer [REDACTED] upstream",
		"Authorization: Basic dXNlcjpwYXNz":                       "Authorization: Basic [REDACTED]",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

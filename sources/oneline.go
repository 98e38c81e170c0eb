package sources

import (
	"html"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/dbxtop/dbxtop/textfmt"
)

// MaxMessage bounds a server or SDK message as dbxtop prints it (stderr,
// --log-file, the error objects): enough for any real error message.
const MaxMessage = 400

var (
	// The SDK appends a multi-line dump of the request and the raw
	// response ("Request log: ```…```") to errors about answers it could
	// not decode; the raw bytes are the server's and unbounded.
	sdkDump = regexp.MustCompile(`(?s)(\.\s*)?This is likely a bug in the Databricks SDK.*$|(?s)\s*Request log:.*$`)
	// HTML pages from gateways and load balancers: their title says it.
	htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	htmlTag   = regexp.MustCompile(`(?s)<[^>]*>`)
	spaces    = regexp.MustCompile(`\s+`)
)

// OneLine makes a message from a server or the SDK fit one line of
// stderr or of the log: credentials redacted, the SDK's request-log dump
// cut off, an HTML page reduced to its title (or its text), control
// characters and escape sequences made visible and harmless
// (textfmt.Line), runs of white space collapsed, and at most max bytes
// (MaxMessage when max ≤ 0) with "…" when cut.
func OneLine(s string, max int) string {
	if max <= 0 {
		max = MaxMessage
	}
	s = Redact(s)
	s = sdkDump.ReplaceAllString(s, "")
	if looksHTML(s) {
		if m := htmlTitle.FindStringSubmatch(s); m != nil {
			s = "HTML page: " + m[1]
		} else {
			s = "HTML page: " + htmlTag.ReplaceAllString(s, " ")
		}
		s = html.UnescapeString(s)
	}
	s = strings.TrimSpace(spaces.ReplaceAllString(textfmt.Line(s), " "))
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func looksHTML(s string) bool {
	t := strings.ToLower(strings.TrimSpace(s))
	return strings.HasPrefix(t, "<!doctype html") || strings.HasPrefix(t, "<html") || strings.Contains(t, "<html")
}

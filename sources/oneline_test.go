package sources

import (
	"strings"
	"testing"
)

func TestOneLine(t *testing.T) {
	sdk := "failed to unmarshal response body: invalid character 'h' in literal true (expecting 'r'). This is likely a bug in the Databricks SDK for Go or the underlying REST API. Please report this issue. Request log:\n```\nGET /api/2.0/sql/history/queries\n> * Authorization: Bearer dapiSECRET0123456789\n< HTTP/1.1 200 OK\n< this is not json\n< line2\x1b[2J\n```"
	for _, tc := range []struct{ in, want string }{
		{sdk, "failed to unmarshal response body: invalid character 'h' in literal true (expecting 'r')"},
		{"<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n</body></html>\n", "HTML page: 502 Bad Gateway"},
		{"<html><body><h1>Gateway &amp; timeout</h1>\n</body></html>", "HTML page: Gateway & timeout"},
		{"bad \x1b[31mred\x1b[0m\nsecond line\r\n", "bad ␛red␛ second line"},
		{strings.Repeat("é", 300), strings.Repeat("é", 200) + "…"},
	} {
		got := OneLine(tc.in, 400)
		if got != tc.want {
			t.Errorf("OneLine(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if strings.ContainsAny(got, "\n\r\x1b") || strings.Contains(got, "SECRET") {
			t.Errorf("not one clean line: %q", got)
		}
	}
}

package databricks

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// A gateway's HTML 502 and a non-JSON 200 (the SDK appends its request-log
// dump with the raw answer) become one bounded, clean line.
func TestErrorTextsAreOneBoundedLine(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("filter_by.statuses") == "QUEUED" {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			w.Write([]byte("<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n\x1b[31mred</body></html>\n"))
			return
		}
	})
	c := f.client(t)
	_, err := c.Discover(context.Background(), nil)
	if s := err.Error(); s != "ListQueries: HTTP 502 UNKNOWN: HTML page: 502 Bad Gateway" {
		t.Errorf("502: %q", s)
	}
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("this is not json\nline2\x1b[2J"))
	})
	_, err = c.Discover(context.Background(), nil)
	if s := err.Error(); strings.ContainsAny(s, "\n\x1b") || strings.Contains(s, "Request log") || !strings.HasPrefix(s, "ListQueries: failed to unmarshal response body") {
		t.Errorf("non-JSON 200: %q", s)
	}
}

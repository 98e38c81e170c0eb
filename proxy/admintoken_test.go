package proxy

import (
	"context"
	"errors"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dbxtop/dbxtop/sources"
)

// TestWrongAdminTokenNamesTheVariable: a proxy that refuses the token
// gives an error naming DBXTOP_PROXY_TOKEN and the proxy (not the
// workspace), still an HTTP 401 for the retry policy, and the redacted
// text keeps the header's name and scheme.
func TestWrongAdminTokenNamesTheVariable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "the admin API needs Authorization: Bearer <admin token>")
	}))
	defer srv.Close()
	c, err := adminapi.NewAdminClient(srv.URL, "wrong-token-value", "dbxtop/test")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Operations(context.Background())
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusUnauthorized {
		t.Fatalf("not an HTTP 401: %v", err)
	}
	msg := sources.Redact(err.Error())
	for _, want := range []string{"DBXTOP_PROXY_TOKEN", "the proxy at " + strings.TrimPrefix(srv.URL, "http://"), "Authorization: Bearer [REDACTED]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q missing from %q", want, msg)
		}
	}
	if strings.Contains(msg, "workspace") || strings.Contains(msg, "wrong-token-value") {
		t.Errorf("blames the workspace or shows the token: %q", msg)
	}
}

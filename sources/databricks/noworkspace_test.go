package databricks

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// noDatabricksEnv leaves the SDK nothing to find: an empty HOME and PATH
// (no ~/.databrickscfg, no Databricks or cloud CLI), no DATABRICKS_* or
// cloud variables.
func noDatabricksEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range []string{"DATABRICKS_", "ARM_", "AZURE_", "GOOGLE_"} {
			if strings.HasPrefix(k, p) {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
		}
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir())
}

// TestCheckWorkspaceNamesWhatIsMissing: no host, then a host without
// credentials, each a NoWorkspaceError whose one line says what to set
// and suggests the demo; a host with a token passes without a request.
func TestCheckWorkspaceNamesWhatIsMissing(t *testing.T) {
	noDatabricksEnv(t)
	ctx := context.Background()
	c, err := New(ctx, Config{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var nw *NoWorkspaceError
	err = c.CheckWorkspace(ctx)
	if !errors.As(err, &nw) || nw.Host != "" {
		t.Fatalf("no host: %v", err)
	}
	mustContain(t, err.Error(), "no host", "DATABRICKS_HOST", "dbxtop demo")

	c, err = New(ctx, Config{Host: "https://example.cloud.databricks.com"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	err = c.CheckWorkspace(ctx)
	if !errors.As(err, &nw) || nw.Host == "" {
		t.Fatalf("no credentials: %v", err)
	}
	mustContain(t, err.Error(), "no credentials for https://example.cloud.databricks.com", "DATABRICKS_TOKEN", "dbxtop demo")
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("more than one line: %q", err)
	}

	f := newFakeWS(t)
	if err := f.client(t).CheckWorkspace(ctx); err != nil {
		t.Errorf("host and token: %v", err)
	}
	if f.total() != 0 {
		t.Errorf("CheckWorkspace made %d requests", f.total())
	}
}

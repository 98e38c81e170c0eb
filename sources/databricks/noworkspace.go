package databricks

import (
	"context"
	"errors"
	"net/http"

	"github.com/databricks/databricks-sdk-go/config"
)

// NoWorkspaceError is a configuration that names no workspace to watch:
// the SDK's unified auth (flags, DATABRICKS_* environment, profiles,
// OAuth, the Databricks and cloud CLIs) found no host, or no credentials
// for it. Nothing will change that while dbxtop runs, so a command stops
// at once instead of retrying.
type NoWorkspaceError struct {
	Host string // "" when no host was found
}

func (e *NoWorkspaceError) Error() string {
	if e.Host == "" {
		return "no Databricks workspace configured: no host (set DATABRICKS_HOST, --host or --profile); `dbxtop demo` runs without one"
	}
	return "no credentials for " + e.Host + " (set DATABRICKS_TOKEN, --token, a --profile, or run `databricks auth login`); `dbxtop demo` runs without a workspace"
}

// CheckWorkspace resolves the SDK's auth once, bounded by ctx, and
// returns a *NoWorkspaceError when it finds no host or no credentials.
// Any other failure (a token endpoint that does not answer, a CLI that
// fails) is left to the first call, where the poller reports and retries
// it: only the certain "nothing configured" stops a command here.
func (c *Client) CheckWorkspace(ctx context.Context) error {
	if c.host == "" {
		return &NoWorkspaceError{}
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, c.host, nil)
	if err != nil {
		return nil // the first call reports a host it cannot use
	}
	err = resolveBounded(ctx, func() error { return c.sdk.Authenticate(r) })
	if errors.Is(err, config.ErrCannotConfigureDefault) {
		return &NoWorkspaceError{Host: c.host}
	}
	return nil
}

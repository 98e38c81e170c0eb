package sources

import "context"

type freshConnKey struct{}

// WithFreshConn marks ctx for an attempt that retries a transport error.
// The poller's policy sets it; sources read it with FreshConnRequested.
func WithFreshConn(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshConnKey{}, true)
}

// FreshConnRequested reports that this attempt retries a transport error:
// a source should send it on a new connection (for example through a
// client whose transport has DisableKeepAlives set), because any pooled
// connection may be as stale as the one that just failed. Dropping idle
// connections alone races with other calls returning theirs to the pool.
func FreshConnRequested(ctx context.Context) bool {
	v, _ := ctx.Value(freshConnKey{}).(bool)
	return v
}

package cmd

import (
	"context"

	"github.com/databricks/databricks-sdk-go/logger"
)

// The databricks SDK logs through a package-global logger that prints to
// stderr with log.Printf. Under the TUI those lines would draw over the
// screen, and in `snapshot` they would add timestamped noise around the
// one-line error that scripts parse. dbxtop reports every failure itself
// (through the retry policy, with the call, cause, error_code and
// request_id), so the SDK's lines are dropped by default; a command that
// has a --log-file routes the SDK's warnings and errors there instead
// (sdkLogContext).
func init() { logger.DefaultLogger = sdkLog{} }

// sdkLog forwards the SDK's warnings and errors to logf (nil: dropped).
// Trace, debug and info lines are never forwarded: at those levels the SDK
// dumps requests, and dbxtop's own log already says what matters.
type sdkLog struct{ logf func(string, ...any) }

func (l sdkLog) Enabled(_ context.Context, level logger.Level) bool {
	return l.logf != nil && level >= logger.LevelWarn
}

func (sdkLog) Tracef(context.Context, string, ...any) {}
func (sdkLog) Debugf(context.Context, string, ...any) {}
func (sdkLog) Infof(context.Context, string, ...any)  {}

func (l sdkLog) Warnf(_ context.Context, format string, v ...any) {
	if l.logf != nil {
		l.logf("databricks-sdk: warning: "+format, v...)
	}
}

func (l sdkLog) Errorf(_ context.Context, format string, v ...any) {
	if l.logf != nil {
		l.logf("databricks-sdk: error: "+format, v...)
	}
}

// sdkLogContext makes the SDK calls made with ctx log through logf (which
// redacts the token).
func sdkLogContext(ctx context.Context, logf func(string, ...any)) context.Context {
	return logger.NewContext(ctx, sdkLog{logf: logf})
}

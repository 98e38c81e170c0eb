package cmd

import (
	"context"
	"fmt"
	"log/slog"

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

// sdkLog forwards the SDK's warnings and errors to log, at their level
// (serve), or to logf (the TUI's and snapshot's --log-file); with neither
// they are dropped. Trace, debug and info lines are never forwarded: at
// those levels the SDK dumps requests, and dbxtop's own log already says
// what matters.
type sdkLog struct {
	logf func(string, ...any)
	log  *slog.Logger
}

func (l sdkLog) Enabled(_ context.Context, level logger.Level) bool {
	return (l.logf != nil || l.log != nil) && level >= logger.LevelWarn
}

func (sdkLog) Tracef(context.Context, string, ...any) {}
func (sdkLog) Debugf(context.Context, string, ...any) {}
func (sdkLog) Infof(context.Context, string, ...any)  {}

func (l sdkLog) Warnf(_ context.Context, format string, v ...any) {
	if l.log != nil {
		l.log.Warn(fmt.Sprintf(format, v...), "source", "databricks-sdk")
		return
	}
	if l.logf != nil {
		l.logf("databricks-sdk: warning: "+format, v...)
	}
}

func (l sdkLog) Errorf(_ context.Context, format string, v ...any) {
	if l.log != nil {
		l.log.Error(fmt.Sprintf(format, v...), "source", "databricks-sdk")
		return
	}
	if l.logf != nil {
		l.logf("databricks-sdk: error: "+format, v...)
	}
}

// sdkLogContext makes the SDK calls made with ctx log through logf (which
// redacts the token).
func sdkLogContext(ctx context.Context, logf func(string, ...any)) context.Context {
	return logger.NewContext(ctx, sdkLog{logf: logf})
}

// sdkSlogContext makes the SDK calls made with ctx log through a service's
// *slog.Logger (serve: its handler redacts the secrets).
func sdkSlogContext(ctx context.Context, log *slog.Logger) context.Context {
	return logger.NewContext(ctx, sdkLog{log: log})
}

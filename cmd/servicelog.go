package cmd

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/dbxtop/dbxtop/internal/safefile"
	"github.com/dbxtop/dbxtop/sources"
)

// Log formats of the service commands (--log-format).
const (
	logText = "text"
	logJSON = "json"
)

func checkLogFormat(s string) error {
	if s != logText && s != logJSON {
		return fmt.Errorf("must be %s or %s", logText, logJSON)
	}
	return nil
}

// logFileError words a --log-file that cannot be opened: safefile's
// refusal (a FIFO, a device) names the path, the system's error already
// does.
func logFileError(path string, err error) error {
	if safefile.IsRefused(err) {
		return fmt.Errorf("--log-file %s is %w; without --log-file the log goes to stderr", path, err)
	}
	return fmt.Errorf("open --log-file: %w", err)
}

// serviceLog is a service's log (serve): log/slog, one line per event,
// to stderr unless --log-file names a file ("-" and /dev/stderr mean
// stderr: under journald stderr is a socket that cannot be opened by
// name). Every string that reaches it — the message and each attribute —
// is one clean line with the secrets redacted.
type serviceLog struct {
	*slog.Logger
	toStderr bool
	close    func()
}

// openServiceLog opens the log; secrets are redacted wherever they appear.
func openServiceLog(path, format, who string, stderr io.Writer, secrets ...string) (*serviceLog, error) {
	var w io.Writer = stderr
	closeFn := func() {}
	toStderr := path == "" || path == "-" || path == "/dev/stderr"
	if !toStderr {
		f, err := safefile.OpenAppend(path, 0o600)
		if err != nil {
			return nil, logFileError(path, err)
		}
		w, closeFn = f, func() { _ = f.Close() }
	}
	clean := func(s string) string {
		for _, sec := range secrets {
			s = sources.RedactToken(s, sec)
		}
		return sources.OneLine(s, maxLogLine)
	}
	opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		switch a.Value.Kind() {
		case slog.KindString:
			a.Value = slog.StringValue(clean(a.Value.String()))
		case slog.KindAny:
			if err, ok := a.Value.Any().(error); ok {
				a.Value = slog.StringValue(clean(err.Error()))
			}
		}
		return a
	}}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if format == logJSON {
		h = slog.NewJSONHandler(w, opts)
	}
	return &serviceLog{Logger: slog.New(h).With("component", who), toStderr: toStderr, close: closeFn}, nil
}

// logf takes the lines that still come as text — the learned-limit
// store's problems and connect's fallback from Thrift — as WARN records
// (each says something degraded); the engines log through the
// *slog.Logger itself (WorkspaceConfig.serviceLogger), with their levels
// and attributes.
func (l *serviceLog) logf(format string, args ...any) {
	l.Warn(fmt.Sprintf(format, args...))
}

package cmd

import (
	"bytes"
	"context"
	"errors"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/databricks/databricks-sdk-go/logger"

	"github.com/dbxtop/dbxtop/model"
)

// A bad DATABRICKS_HOST is refused like a bad --host, before anything
// runs; --host wins over the environment; demo ignores it.
func TestBadDatabricksHostEnv(t *testing.T) {
	h := newHooks()
	env := map[string]string{"DATABRICKS_HOST": "ftp://x"}
	r := h.run(t, env, "snapshot")
	want := "dbxtop: invalid DATABRICKS_HOST \"ftp://x\": scheme \"ftp\": want https:// (or http:// for a local simulator)\n"
	if r.code != exitSnapshotUsage || r.stderr != want || h.called != "" {
		t.Fatalf("exit %d stderr %q called %q", r.code, r.stderr, h.called)
	}
	if r := h.run(t, env); r.code != exitUsage || !strings.Contains(r.stderr, "invalid DATABRICKS_HOST") {
		t.Fatalf("root: exit %d stderr %q", r.code, r.stderr)
	}
	if r := h.run(t, env, "snapshot", "--host", "http://127.0.0.1:9"); r.code != 1 || h.called != "snapshot" {
		t.Fatalf("--host should win: exit %d stderr %q", r.code, r.stderr)
	}
	h.called = ""
	if r := h.run(t, env, "demo"); r.code != 0 || h.called != "demo" {
		t.Fatalf("demo: exit %d stderr %q", r.code, r.stderr)
	}
}

// The SDK's global logger never writes to the process's stderr; with a
// log function its warnings and errors go there, and nothing below.
func TestSDKLogQuiet(t *testing.T) {
	var std bytes.Buffer
	old := log.Writer()
	log.SetOutput(&std)
	t.Cleanup(func() { log.SetOutput(old) })
	ctx := context.Background()
	logger.Warnf(ctx, "Failed to resolve host metadata: %v", errors.New("boom"))
	logger.Errorf(ctx, "an error")
	if std.Len() != 0 {
		t.Fatalf("SDK logged to the standard logger: %q", std.String())
	}
	var got []string
	lctx := sdkLogContext(ctx, func(f string, a ...any) { got = append(got, f) })
	logger.Debugf(lctx, "request dump")
	logger.Infof(lctx, "info")
	logger.Warnf(lctx, "warn %d", 1)
	logger.Errorf(lctx, "err %d", 2)
	if len(got) != 2 || got[0] != "databricks-sdk: warning: warn %d" || got[1] != "databricks-sdk: error: err %d" {
		t.Fatalf("forwarded %q", got)
	}
	if std.Len() != 0 {
		t.Fatalf("SDK logged to the standard logger: %q", std.String())
	}
}

func TestSimErrText(t *testing.T) {
	err := errors.New("sim: listening on 127.0.0.1:1: bind: address already in use")
	if got := simErrText(err); got != "listening on 127.0.0.1:1: bind: address already in use" {
		t.Fatal(got)
	}
}

// A token pasted into a URL is never echoed back by validation: URL
// userinfo and secret-looking query values are redacted, whatever flag or
// variable carried them.
func TestValidationRedactsURLSecrets(t *testing.T) {
	h := newHooks()
	const secret = "S3CRETTOKENVALUE"
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"snapshot", "--host", "ftp://user:" + secret + "@h.example.com"}},
		{nil, []string{"snapshot", "--host", "https://" + secret + "@h.example.com/sql/1.0/warehouses/a"}},
		{nil, []string{"snapshot", "--host", "https://h.example.com/?token=" + secret}},
		{map[string]string{"DATABRICKS_HOST": "ftp://u:" + secret + "@h"}, []string{"snapshot"}},
		{nil, []string{"snapshot", "-w", "a,b", "--http-path", "/sql/1.0/warehouses/a?sig=" + secret}},
	} {
		r := h.run(t, tc.env, tc.args...)
		if r.code == 0 || strings.Contains(r.stderr+r.stdout, secret) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v %v: exit %d, stderr %q", tc.env, tc.args, r.code, r.stderr)
		}
	}
}

// A truncated listing alone is a warning (exit 1): what was seen is right,
// not everything was seen; a round that could not read its operations'
// status is UNKNOWN (exit 3), never OK.
func TestExitCodeTruncatedAndUnread(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	snap := func(errs ...model.ErrorInfo) model.Snapshot {
		return model.NewSnapshot(now, model.Workspace{}, nil, nil, errs, model.DefaultThresholds)
	}
	trunc := model.ErrorInfo{Kind: model.KindTruncated, Call: "ListQueries", Message: "listing truncated after 10 pages, 5000 live statements seen: the page cap of 10 pages was reached", Seen: 5000}
	unread := model.ErrorInfo{Kind: model.KindUnread, Call: "GetOperationStatus", Message: "could not read the status of any of the 3 operations this round: reset"}
	if got := exitCodeFor(snap(), nil); got != 0 {
		t.Errorf("clean: %d", got)
	}
	if got := exitCodeFor(snap(trunc), nil); got != 1 {
		t.Errorf("truncated: exit %d, want 1", got)
	}
	if got := exitCodeFor(snap(trunc, unread), nil); got != 3 {
		t.Errorf("unread: exit %d, want 3", got)
	}
	line := failureLine(snap(trunc), nil, SnapshotConfig{})
	if !strings.HasPrefix(line, "dbxtop snapshot: incomplete: ListQueries listing truncated after 10 pages, 5000 live statements seen") {
		t.Errorf("truncation line %q", line)
	}
	line = failureLine(snap(trunc, unread), nil, SnapshotConfig{})
	if !strings.Contains(line, "could not observe the workspace: GetOperationStatus failed: could not read the status") {
		t.Errorf("unread line %q", line)
	}
}

// Every --log-file line is one clean, bounded line: an SDK request-log
// dump with raw response bytes and escape sequences is cut off.
func TestLogFileLinesAreOneCleanLine(t *testing.T) {
	path := t.TempDir() + "/x.log"
	logf, closeLog, err := openLog(path, "dapiTOKEN123456789", "test")
	if err != nil {
		t.Fatal(err)
	}
	logf("ListQueries: %s", "failed to unmarshal response body: bad. This is likely a bug in the Databricks SDK for Go. Request log:\n```\nGET /x\n< HTTP/1.1 200 OK\n< \x1b]0;pwned\x07garbage\n```")
	logf("give-up: %s", strings.Repeat("x", 5000))
	closeLog()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(ls) != 2 || strings.Contains(ls[0], "Request log") || strings.ContainsAny(string(b), "\x1b\x07") || len(ls[1]) > maxLogLine+100 {
		t.Fatalf("log:\n%q", b)
	}
}

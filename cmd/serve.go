package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dbxtop/dbxtop/internal/safefile"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/serve"
	"github.com/dbxtop/dbxtop/sources"
)

// ServeConfig is `dbxtop serve`'s configuration.
type ServeConfig struct {
	WorkspaceConfig
	Listen         string
	ServeToken     string // "" → random, printed on the first line
	ServeTokenFile string // the read token's file (--serve-token-file)
	ActTokenFile   string // the act token's file; "" → actions refused
	LogFormat      string // --log-format: text or json
	WebConfigFile  string // --web.config.file: TLS, basic auth, headers
	TLSCert        string
	TLSKey         string
	InsecureListen bool // --insecure-listen: plain HTTP off loopback
}

func (a *app) newServeCmd() *cobra.Command {
	var cfg ServeConfig
	c := &cobra.Command{
		Use:   "serve",
		Short: "One poller for many consumers: Prometheus /metrics, snapshot and events API, attached TUIs",
		Long: `Watch one or more workspaces with a single poller and serve what it sees:
  /metrics          Prometheus exposition (every series dbxtop_…)
  /api/v1/snapshot  the dbxtop.snapshot/v1 JSON (per workspace with several)
  /api/v1/events    newline-delimited JSON events, streamed
  /healthz /readyz  liveness and readiness probes (no token)

Every endpoint but the probes needs "Authorization: Bearer TOKEN": the read
token (--serve-token-file) to read, the act token (--act-token-file) for
adopt, close and cancel; without --act-token-file serve refuses actions.
A bare token without "Bearer " is refused; a token is at least 16
characters (openssl rand -hex 16 makes one of 32), and a token file that
others than its owner may read gets a warning. A connection that has not
authenticated is closed after 10 s idle; an authenticated one after 2 min.
The first line of stdout is exactly:
  listen=http://HOST:PORT token=TOKEN
with token=… only when serve generated the read token (no --serve-token-file).
Plain HTTP is refused on an address that is not loopback (the token would
cross the network in clear) unless --insecure-listen says otherwise.
See docs/fleet.md for the Prometheus scrape configuration and alert rules.`,
		Example: `  dbxtop serve --context prod --listen 127.0.0.1:9464
  dbxtop serve --context all --listen 0.0.0.0:9464 --serve-token-file /etc/dbxtop/read.token \
      --act-token-file /etc/dbxtop/act.token --web.config.file /etc/dbxtop/web.yml`,
		Args: noArgs,
		PreRunE: func(c *cobra.Command, _ []string) error {
			fs := c.Flags()
			if fs.Changed("tls-cert") != fs.Changed("tls-key") {
				return usagef("--tls-cert and --tls-key go together")
			}
			if fs.Changed("web.config.file") && (fs.Changed("tls-cert") || fs.Changed("tls-key")) {
				return usagef("--web.config.file replaces --tls-cert and --tls-key: put the certificate in its tls_server_config")
			}
			if fs.Changed("serve-token") && fs.Changed("serve-token-file") {
				return usagef("--serve-token and --serve-token-file are two ways to give one token: keep --serve-token-file")
			}
			// TLS from a web configuration counts: serve.New refuses the
			// address again if that file turns out to hold no TLS.
			if err := serve.CheckListen(cfg.Listen, cfg.TLSCert != "" || cfg.WebConfigFile != "", cfg.InsecureListen); err != nil {
				return invalidFlag("listen", cfg.Listen, strings.TrimPrefix(err.Error(), "listen address "+cfg.Listen+" "))
			}
			return a.finishWorkspace(fs, &cfg.WorkspaceConfig, false)
		},
		RunE: func(c *cobra.Command, _ []string) error {
			a.code = runServe(c.Context(), cfg, a.stdout, a.stderr)
			return nil
		},
	}
	fs := c.Flags()
	addWorkspaceFlags(fs, &cfg.WorkspaceConfig, flagsServe)
	fs.Var(&checkedString{p: &cfg.Listen, typ: "addr", check: checkListen}, "listen", "where to serve, host:port (port 0: a free port)")
	cfg.Listen = serve.DefaultListen
	fs.Var(&checkedString{p: &cfg.ServeToken, typ: "token", check: nonEmpty("the serve token"), hide: true}, "serve-token",
		"read token clients must send (visible in the process list: prefer --serve-token-file)")
	fs.Var(&checkedString{p: &cfg.ServeTokenFile, typ: "file", check: checkReadable(safefile.MaxToken)}, "serve-token-file",
		"file holding the read token (metrics, snapshot, events), at least 16 characters; default: a random token, printed on the first line")
	fs.Var(&checkedString{p: &cfg.ActTokenFile, typ: "file", check: checkReadable(safefile.MaxToken)}, "act-token-file",
		"file holding the act token (adopt, close, cancel), at least 16 characters; without it serve refuses actions")
	cfg.LogFormat = logText
	fs.Var(&checkedString{p: &cfg.LogFormat, typ: "format", check: checkLogFormat}, "log-format",
		"log format: text or json (log/slog; to stderr unless --log-file)")
	fs.Var(&checkedString{p: &cfg.WebConfigFile, typ: "file", check: checkReadable(serve.MaxWebConfigFile)}, "web.config.file",
		"Prometheus exporter web configuration (exporter-toolkit): TLS, mTLS, basic auth, headers")
	fs.Var(&checkedString{p: &cfg.TLSCert, typ: "file", check: checkReadable(serve.MaxTLSFile)}, "tls-cert", "PEM certificate: serve HTTPS")
	fs.Var(&checkedString{p: &cfg.TLSKey, typ: "file", check: checkReadable(serve.MaxTLSFile)}, "tls-key", "PEM private key for --tls-cert")
	addCapacityProbeFlag(fs, &cfg.CapacityProbe)
	fs.BoolVar(&cfg.InsecureListen, "insecure-listen", false,
		"allow plain HTTP on a non-loopback address (the serve token crosses the network in clear)")
	_ = fs.MarkDeprecated("tls-cert", "use --web.config.file (tls_server_config: cert_file)")
	_ = fs.MarkDeprecated("tls-key", "use --web.config.file (tls_server_config: key_file)")
	return c
}

// readTokenFile reads a token from a file (a systemd credential, a
// secret mount) with safefile.ReadToken: one line, a FIFO or a device
// refused, errors that name the flag and the file, never the content,
// and a warning line when others than the owner may read the file.
func readTokenFile(path, flag string) (tok, warn string, err error) {
	return safefile.ReadToken(path, flag)
}

// checkReadable checks a file when its flag is parsed: it can be opened
// without blocking and is a regular file of at most max bytes.
func checkReadable(max int64) func(string) error {
	return func(p string) error {
		_, err := safefile.Check(p, max)
		if safefile.IsRefused(err) {
			return err
		}
		return errors.Unwrap(err)
	}
}

// readTokens reads the token files, with a warning line for each that
// others may read.
func readTokens(cfg ServeConfig) (readToken, actToken string, warns []string, err error) {
	readToken = cfg.ServeToken
	for _, f := range []struct {
		path, flag string
		tok        *string
	}{{cfg.ServeTokenFile, "--serve-token-file", &readToken}, {cfg.ActTokenFile, "--act-token-file", &actToken}} {
		if f.path == "" {
			continue
		}
		var warn string
		if *f.tok, warn, err = readTokenFile(f.path, f.flag); err != nil {
			return "", "", nil, err
		}
		if warn != "" {
			warns = append(warns, warn)
		}
	}
	return readToken, actToken, warns, nil
}

// runServe is `dbxtop serve`: engines per workspace, one fleet, the HTTP
// server; until interrupted (SIGTERM drains: the HTTP server shuts down,
// event streams end, the engines stop). Its log is log/slog, to stderr
// unless --log-file; stdout carries only the first line.
func runServe(ctx context.Context, cfg ServeConfig, stdout, stderr io.Writer) int {
	const name = "dbxtop serve"
	ws := cfg.WorkspaceConfig
	// The token files are read first, so their content is redacted from
	// everything logged afterwards.
	readToken, actToken, warns, err := readTokens(cfg)
	if err != nil {
		fmt.Fprintln(stderr, name+": "+err.Error())
		return exitError
	}
	log, err := openServiceLog(ws.LogFile, cfg.LogFormat, "serve", stderr, ws.Token, ws.ProxyToken, readToken, actToken)
	if err != nil {
		fmt.Fprintln(stderr, name+": "+sources.RedactToken(err.Error(), ws.Token))
		return exitError
	}
	defer log.close()
	for _, w := range warns {
		log.Warn(w)
	}
	// fail reports a fatal error: in the log, and on stderr too when the
	// log is a file (the operator at the terminal sees why it stopped).
	fail := func(msg string, err error) int {
		log.Error(msg, "err", err)
		if !log.toStderr {
			fmt.Fprintln(stderr, name+": "+sources.RedactToken(sources.RedactToken(err.Error(), ws.Token), readToken))
		}
		return exitError
	}
	logf := log.logf
	ctx = sdkSlogContext(ctx, log.Logger)
	counters := serve.NewCounters()
	// Learned-limit warnings go to the log; to stderr as well only when
	// the log is elsewhere.
	learnedOut := stderr
	if log.toStderr {
		learnedOut = io.Discard
	}
	ws.Learned = openLearned(ws, learnedOut, logf, false)
	ws.serviceLogger = log.Logger
	fleet, closeConns, _, err := fleetOf(ctx, ws, false, logf, func(w string) retry.PolicyOptions {
		return retry.PolicyOptions{Observe: counters.Observer(w), Done: counters.Done(w)}
	})
	if err != nil {
		return fail("cannot watch the workspaces", err)
	}
	defer closeConns()
	srv, err := serve.New(serve.Options{Listen: cfg.Listen, Token: readToken, ActToken: actToken, TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey,
		WebConfigFile: cfg.WebConfigFile,
		Fleet:         fleet, Counters: counters, Logger: log.Logger, Version: Version, Revision: Commit, Refresh: ws.Refresh, InsecureListen: cfg.InsecureListen})
	if err != nil {
		return fail("cannot serve", errors.New(strings.TrimPrefix(err.Error(), "serve: ")))
	}
	fmt.Fprintln(stdout, srv.FirstLine())
	if f, ok := stdout.(*os.File); ok {
		_ = f.Sync()
	}
	log.Info("serving", "listen", srv.URL(), "workspaces", len(fleet.Members()), "read_only", ws.ReadOnly,
		"actions", actToken != "" && !ws.ReadOnly, "read_token", tokenSource(cfg), "version", Version)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	fleetDone := make(chan struct{})
	go func() { _ = fleet.Run(runCtx); close(fleetDone) }()
	serr := srv.Run(runCtx)
	stop()
	<-fleetDone
	if serr != nil {
		return fail("serving failed", serr)
	}
	log.Info("stopped")
	return exitOK
}

// tokenSource says where the read token came from, for the log (never
// the token itself).
func tokenSource(cfg ServeConfig) string {
	switch {
	case cfg.ServeTokenFile != "":
		return "file"
	case cfg.ServeToken != "":
		return "flag"
	}
	return "generated"
}

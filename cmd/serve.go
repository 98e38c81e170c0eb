package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/serve"
	"github.com/dbxtop/dbxtop/sources"
)

// ServeConfig is `dbxtop serve`'s configuration.
type ServeConfig struct {
	WorkspaceConfig
	Listen          string
	ServeToken      string // "" → random, printed on the first line
	TLSCert, TLSKey string
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
  /healthz /readyz  liveness (no token) and readiness

Every endpoint but /healthz needs "Authorization: Bearer TOKEN". The first
line of stdout is exactly:
  listen=http://HOST:PORT token=TOKEN
See docs/fleet.md for the Prometheus scrape configuration and alert rules.`,
		Example: `  dbxtop serve --context prod --listen 127.0.0.1:9464
  dbxtop serve --context all --listen 0.0.0.0:9464 --tls-cert cert.pem --tls-key key.pem --read-only`,
		Args: noArgs,
		PreRunE: func(c *cobra.Command, _ []string) error {
			fs := c.Flags()
			if fs.Changed("tls-cert") != fs.Changed("tls-key") {
				return usagef("--tls-cert and --tls-key go together")
			}
			return a.finishWorkspace(fs, &cfg.WorkspaceConfig, false)
		},
		RunE: func(c *cobra.Command, _ []string) error {
			a.code = runServe(c.Context(), cfg, a.stdout, a.stderr)
			return nil
		},
	}
	fs := c.Flags()
	addWorkspaceFlags(fs, &cfg.WorkspaceConfig, true)
	fs.Var(&checkedString{p: &cfg.Listen, typ: "addr", check: checkListen}, "listen", "where to serve, host:port (port 0: a free port)")
	cfg.Listen = serve.DefaultListen
	fs.Var(&checkedString{p: &cfg.ServeToken, typ: "token", check: nonEmpty("the serve token"), hide: true}, "serve-token",
		"bearer token clients must send (default: random, printed on the first line)")
	fs.Var(&checkedString{p: &cfg.TLSCert, typ: "file", check: checkReadable}, "tls-cert", "PEM certificate: serve HTTPS")
	fs.Var(&checkedString{p: &cfg.TLSKey, typ: "file", check: checkReadable}, "tls-key", "PEM private key for --tls-cert")
	return c
}

func checkReadable(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return errors.Unwrap(err)
	}
	return f.Close()
}

// runServe is `dbxtop serve`: engines per workspace, one fleet, the HTTP
// server; until interrupted.
func runServe(ctx context.Context, cfg ServeConfig, stdout, stderr io.Writer) int {
	const name = "dbxtop serve"
	ws := cfg.WorkspaceConfig
	logf, closeLog, err := openLog(ws.LogFile, ws.Token, "serve")
	if err != nil {
		fmt.Fprintln(stderr, name+": "+sources.RedactToken(err.Error(), ws.Token))
		return exitError
	}
	defer closeLog()
	ctx = sdkLogContext(ctx, logf)
	counters := serve.NewCounters()
	ws.Learned = openLearned(ws, stderr, logf, false)
	fleet, closeConns, _, err := fleetOf(ctx, ws, false, logf, func(w string) poller.PolicyOptions {
		return poller.PolicyOptions{Observe: counters.Observer(w), Done: counters.Done(w)}
	})
	if err != nil {
		fmt.Fprintln(stderr, name+": "+sources.RedactToken(err.Error(), ws.Token))
		return exitError
	}
	defer closeConns()
	srv, err := serve.New(serve.Options{Listen: cfg.Listen, Token: cfg.ServeToken, TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey,
		Fleet: fleet, Counters: counters, Logf: logf, Version: Version, Revision: Commit})
	if err != nil {
		fmt.Fprintln(stderr, name+": "+strings.TrimPrefix(err.Error(), "serve: "))
		return exitError
	}
	fmt.Fprintln(stdout, srv.FirstLine())
	if f, ok := stdout.(*os.File); ok {
		_ = f.Sync()
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	fleetDone := make(chan struct{})
	go func() { _ = fleet.Run(runCtx); close(fleetDone) }()
	serr := srv.Run(runCtx)
	stop()
	<-fleetDone
	if serr != nil {
		fmt.Fprintln(stderr, name+": "+serr.Error())
		return exitError
	}
	fmt.Fprintln(stderr, name+": stopped")
	return exitOK
}

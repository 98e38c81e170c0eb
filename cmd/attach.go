package cmd

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dbxtop/dbxtop/serve"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/tui"
)

// AttachConfig is `dbxtop attach`'s configuration.
type AttachConfig struct {
	URL     string
	Token   string // DBXTOP_SERVE_TOKEN; never a flag (the process list)
	Act     string // DBXTOP_ACT_TOKEN: actions; "" → read-only
	NoColor bool
	ASCII   bool
	Mouse   bool
	// Insecure allows plain HTTP to a serve that is not on loopback.
	Insecure bool
}

// attachBody runs the TUI on a serve; a variable so the command line's
// tests never need a terminal.
var attachBody = runAttach

func (a *app) newAttachCmd() *cobra.Command {
	var cfg AttachConfig
	c := &cobra.Command{
		Use:   "attach URL",
		Short: "The TUI on a running dbxtop serve (tokens in DBXTOP_SERVE_TOKEN, DBXTOP_ACT_TOKEN)",
		Long: `Run the TUI on a running dbxtop serve instead of polling the workspace
yourself: ten operators attached to one serve cost the workspace what one
costs. The read token (serve's --serve-token-file, or token=… on its first
line) is read from DBXTOP_SERVE_TOKEN. Actions (adopt, re-close, cancel) go
through serve with its act token, read from DBXTOP_ACT_TOKEN, and obey its
--read-only; without DBXTOP_ACT_TOKEN the TUI is read-only.`,
		Example: `  DBXTOP_SERVE_TOKEN=… dbxtop attach http://127.0.0.1:9464
  DBXTOP_SERVE_TOKEN=… DBXTOP_ACT_TOKEN=… dbxtop attach https://dbxtop.internal:9464`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("attach takes one argument: the serve URL (listen=… on serve's first line)")
			}
			return nil
		},
		PreRunE: func(c *cobra.Command, args []string) error {
			if err := checkHost(args[0]); err != nil {
				return usagef("invalid serve URL %q: %s", args[0], err)
			}
			cfg.URL = args[0]
			if u, err := url.Parse(cfg.URL); err == nil && u.Scheme == "http" && !serve.IsLoopbackHost(u.Hostname()) && !cfg.Insecure {
				return usagef("refusing plain HTTP to %s: it is not loopback and the serve token would cross the network in clear; use https:// (serve --tls-cert/--tls-key) or --insecure", u.Host)
			}
			tok, ok := a.getenv("DBXTOP_SERVE_TOKEN")
			if !ok || strings.TrimSpace(tok) == "" {
				return usagef("DBXTOP_SERVE_TOKEN is not set: put serve's token (token=… on its first line) there")
			}
			cfg.Token = strings.TrimSpace(tok)
			if act, ok := a.getenv("DBXTOP_ACT_TOKEN"); ok {
				cfg.Act = strings.TrimSpace(act)
			}
			if v, ok := a.getenv("NO_COLOR"); ok && v != "" {
				cfg.NoColor = true
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			a.code = attachBody(c.Context(), cfg, a.stdout, a.stderr)
			return nil
		},
	}
	fs := c.Flags()
	fs.BoolVar(&cfg.NoColor, "no-color", false, "no colours (also env NO_COLOR)")
	fs.BoolVar(&cfg.ASCII, "ascii", false, "ASCII-only borders, bars and symbols")
	fs.BoolVar(&cfg.Mouse, "mouse", false, "wheel scrolls, click selects")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "allow plain HTTP to a serve that is not on loopback (the token crosses the network in clear)")
	return c
}

func runAttach(ctx context.Context, cfg AttachConfig, stdout, stderr io.Writer) int {
	const name = "dbxtop attach"
	if code, ok := needTerminal(name, stdout, stderr); !ok {
		return code
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cl, err := serve.Attach(cctx, cfg.URL, cfg.Token, cfg.Act, nil)
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, name+": "+sources.RedactToken(sources.RedactToken(err.Error(), cfg.Token), cfg.Act))
		return exitError
	}
	oneCore()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	streamDone := make(chan struct{})
	go func() { _ = cl.Run(runCtx); close(streamDone) }()
	snap := cl.Snapshot()
	uiErr := tui.Run(runCtx, cl, tui.Options{
		NoColor: cfg.NoColor, ASCII: cfg.ASCII, Mouse: cfg.Mouse, ReadOnly: cl.ReadOnly(), SourceRefresh: cl.Refresh(),
		Workspace: snap.Workspace, Version: Version,
	}, os.Stdin, stdout)
	stop()
	<-streamDone
	if uiErr != nil {
		fmt.Fprintln(stderr, name+": "+sources.RedactToken(sources.RedactToken(uiErr.Error(), cfg.Token), cfg.Act))
		return exitError
	}
	return exitOK
}

package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
)

// ProxyConfig is `dbxtop proxy`'s configuration.
type ProxyConfig struct {
	Upstream       string
	Listen         string
	AdminListen    string
	AdminToken     string // "" → random, printed on the first line
	Heal           bool
	CloseAbandoned time.Duration // 0: off
	// FailFastExhausted rewrites a Vector Search capacity refusal to a
	// status the SDKs do not retry (docs/proxy-vector.md).
	FailFastExhausted bool
	TLSCert           string
	TLSKey            string
	InsecureListen    bool
	// Profile and Token: the proxy's own workspace credentials, used only
	// when it holds no client's (docs/proxy.md).
	Profile string
	Token   string
	LogFile string
}

// onOff is a --flag=on|off boolean.
type onOff struct{ p *bool }

func (v *onOff) String() string {
	if v.p != nil && *v.p {
		return "on"
	}
	return "off"
}
func (v *onOff) Type() string { return "on|off" }
func (v *onOff) Set(s string) error {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on", "true":
		*v.p = true
	case "off", "false":
		*v.p = false
	default:
		return fmt.Errorf("want on or off")
	}
	return nil
}

func (a *app) newProxyCmd() *cobra.Command {
	var cfg ProxyConfig
	c := &cobra.Command{
		Use:   "proxy --upstream URL",
		Short: "Forward Thrift clients to a workspace, observe and heal their operations",
		Long: `A transparent Thrift-over-HTTP reverse proxy for JDBC, ODBC, databricks-sql-go
and any HiveServer2 HTTP client. Point a job's connection at it instead of the
workspace: requests and answers pass through unchanged (Authorization and
User-Agent included), while the proxy records each operation's last client
call and close outcome, retries idempotent calls that fail on the way to the
workspace (--heal), and closes operations whose client's close failed.

dbxtop reads what it saw with --proxy ADMIN_URL (token in DBXTOP_PROXY_TOKEN):
INACTIVE with the countdown from the client's last call, and CLOSE_FAILED for
a client's own failed close. See docs/proxy.md.

The first line of stdout is
  listen=http://HOST:PORT admin=http://HOST:PORT admin_token=TOKEN`,
		Example: `  dbxtop proxy --upstream https://adb-123.4.azuredatabricks.net
  dbxtop proxy --upstream https://adb-123.4.azuredatabricks.net --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0
  dbxtop proxy --upstream https://adb-123.4.azuredatabricks.net --listen 0.0.0.0:8444 --tls-cert c.pem --tls-key k.pem --close-abandoned 10m`,
		Args: noArgs,
		PreRunE: func(c *cobra.Command, _ []string) error {
			return a.finishProxy(c.Flags(), &cfg)
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if a.runProxy == nil {
				a.code = a.notBuilt("dbxtop proxy")
				return nil
			}
			a.code = a.runProxy(c.Context(), cfg, a.stdout, a.stderr)
			return nil
		},
	}
	addProxyFlags(c.Flags(), &cfg)
	return c
}

func addProxyFlags(fs *pflag.FlagSet, cfg *ProxyConfig) {
	cfg.Listen, cfg.AdminListen, cfg.Heal = "127.0.0.1:8444", "127.0.0.1:8445", true
	fs.Var(&checkedString{p: &cfg.Upstream, typ: "url", check: checkUpstream}, "upstream",
		"the workspace to forward to, https://host[:port] (http:// only to loopback, e.g. dbxtop sim)")
	fs.Var(&checkedString{p: &cfg.Listen, typ: "addr", check: checkListen}, "listen",
		"address clients connect to; port 0 picks a free one (the first line of stdout says which)")
	fs.Var(&checkedString{p: &cfg.AdminListen, typ: "addr", check: checkListen}, "admin-listen",
		"address of the admin API dbxtop --proxy reads; port 0 picks a free one")
	fs.Var(&checkedString{p: &cfg.AdminToken, typ: "token", check: nonEmpty("the admin token"), hide: true}, "admin-token",
		"bearer token of the admin API (default: random, printed on the first line)")
	fs.Var(&onOff{p: &cfg.Heal}, "heal", "retry idempotent calls that fail on the way to the workspace, on a fresh connection (on|off)")
	abandoned := newDuration(&cfg.CloseAbandoned, 0, time.Second)
	abandoned.zeroOK = true
	fs.Var(abandoned, "close-abandoned",
		"close (cancelling first if running) an operation whose client has not called it or its session for this long (default off)")
	fs.BoolVar(&cfg.FailFastExhausted, "fail-fast-exhausted", false,
		"answer a Vector Search upsert refused for endpoint capacity (429 RESOURCE_EXHAUSTED about capacity, nothing else)\n"+
			"with 400 QUOTA_EXCEEDED and the same message, so SDKs stop retrying it (docs/proxy-vector.md)")
	fs.Var(&checkedString{p: &cfg.TLSCert, typ: "file", check: nonEmpty("the certificate file")}, "tls-cert", "serve clients and the admin API over TLS with this certificate (PEM)")
	fs.Var(&checkedString{p: &cfg.TLSKey, typ: "file", check: nonEmpty("the key file")}, "tls-key", "the private key of --tls-cert (PEM)")
	fs.BoolVar(&cfg.InsecureListen, "insecure-listen", false,
		"allow plain HTTP on a non-loopback address (clients' tokens cross the network in clear)")
	fs.StringVarP(&cfg.Profile, "profile", "p", "", "~/.databrickscfg profile for the proxy's own calls when it holds no client's credentials")
	fs.Var(&checkedString{p: &cfg.Token, typ: "token", check: nonEmpty("the token"), hide: true}, "token",
		"token for the proxy's own calls; prefer env DATABRICKS_TOKEN")
	fs.Var(&checkedString{p: &cfg.LogFile, typ: "path", check: checkLogFile}, "log-file",
		"append the proxy's actions (heals, queued closes, abandonment) to this file (never a token)")
}

func checkProxyURL(s string) error {
	if _, err := proxy.NewAdminClient(s, "x", ""); err != nil {
		return fmt.Errorf("want the admin URL dbxtop proxy printed, e.g. http://127.0.0.1:8445")
	}
	return nil
}

func checkUpstream(s string) error {
	_, err := proxy.ParseUpstream(s)
	if err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "proxy: "))
	}
	return nil
}

func (a *app) finishProxy(fs *pflag.FlagSet, cfg *ProxyConfig) error {
	if cfg.Upstream == "" {
		return usagef("dbxtop proxy needs --upstream https://<workspace host>")
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	for _, name := range []string{"listen", "admin-listen"} {
		if err := proxy.CheckListen(fs.Lookup(name).Value.String(), cfg.TLSCert != "", cfg.InsecureListen); err != nil {
			return invalidFlag(name, fs.Lookup(name).Value.String(), strings.TrimPrefix(err.Error(), "listen address "+fs.Lookup(name).Value.String()+" "))
		}
	}
	if fs.Changed("token") {
		fmt.Fprintln(a.stderr, "dbxtop proxy: warning: --token is visible to other users in the process list; set DATABRICKS_TOKEN instead")
	} else if tok, ok := a.getenv("DATABRICKS_TOKEN"); ok {
		cfg.Token = strings.TrimSpace(tok)
	}
	return nil
}

// serveProxy is `dbxtop proxy`: serve until interrupted.
func serveProxy(ctx context.Context, c ProxyConfig, stdout, stderr io.Writer) int {
	logf, closeLog, err := openLog(c.LogFile, c.Token, "proxy")
	if err != nil {
		fmt.Fprintln(stderr, "dbxtop proxy: "+sources.RedactToken(err.Error(), c.Token))
		return 1
	}
	defer closeLog()
	o := proxy.Options{Upstream: c.Upstream, Heal: c.Heal, CloseAbandoned: c.CloseAbandoned,
		FailFastExhausted: c.FailFastExhausted, UserAgent: "dbxtop-proxy/" + Version, Logf: logf}
	if c.Profile != "" || c.Token != "" {
		ws, err := databricks.New(ctx, databricks.Config{Profile: c.Profile, Host: c.Upstream, Token: c.Token, UserAgent: "dbxtop-proxy/" + Version})
		if err != nil {
			fmt.Fprintln(stderr, "dbxtop proxy: workspace credentials: "+sources.RedactToken(err.Error(), c.Token))
			return 1
		}
		o.Authenticate = ws.Authenticate
		// The proxy's own Thrift calls go only to running warehouses
		// (a Thrift call starts a stopped one): a gate fed by
		// ListWarehouses every 20 s (its states expire after 1 min).
		o.Gate = ws.Gate()
		go func() {
			t := time.NewTicker(20 * time.Second)
			defer t.Stop()
			for {
				if err := ws.RefreshGate(ctx, nil); err != nil && ctx.Err() == nil {
					logf("warehouse states (ListWarehouses): %v", err)
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	srv, err := proxy.Start(ctx, o, proxy.ServeOptions{Listen: c.Listen, AdminListen: c.AdminListen, AdminToken: c.AdminToken,
		TLSCert: c.TLSCert, TLSKey: c.TLSKey, InsecureListen: c.InsecureListen})
	if err != nil {
		fmt.Fprintln(stderr, "dbxtop proxy: "+strings.TrimPrefix(sources.RedactToken(err.Error(), c.Token), "proxy: "))
		return 1
	}
	return serveUntilDone(ctx, "dbxtop proxy", srv.FirstLine(), srv.Close, stdout, stderr)
}

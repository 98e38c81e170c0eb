package cmd

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dbxtop/dbxtop/internal/safefile"
	"github.com/dbxtop/dbxtop/internal/targets"
	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
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
	// Profile and Token: the proxy's own workspace credentials, for its
	// calls with --act-as proxy and the warehouse gate (docs/proxy.md).
	Profile string
	Token   string
	LogFile string
	// LogFormat is text or json (stderr, or --log-file).
	LogFormat         string
	ActAs             string
	ForceShortWindow  bool
	RetainFinished    time.Duration
	MaxOperations     int
	ServerIdleTimeout time.Duration
	UpstreamIdle      time.Duration
	DrainTimeout      time.Duration
	MaxConns          int
	MaxConnsPerClient int
	QueueWait         time.Duration
	// StateFile persists the close queue ("" with StateErr: memory only).
	StateFile string
	StateErr  error

	// AdminTokenFile holds the admin token (a systemd credential).
	AdminTokenFile string
	// Peers are the other replicas (--peers, internal/targets forms);
	// PeerTokenFile holds their admin token (default: AdminToken),
	// PeerToken its content. DNSServer is the hidden --dns-server: the
	// one DNS server dns+ peers are resolved with (tests).
	Peers         []string
	PeerTokenFile string
	PeerToken     string
	DNSServer     string
	// PeerCA is the PEM file of the CAs the peers' certificates are
	// checked against (--peer-ca); PeerRoots its certificates.
	PeerCA    string
	PeerRoots *x509.CertPool
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
	fs.Var(&checkedString{p: &cfg.AdminTokenFile, typ: "file", check: checkReadable(safefile.MaxToken)}, "admin-token-file",
		"file holding the admin API's bearer token (one line; a systemd credential); default: random, printed on the first line")
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
	fs.StringVarP(&cfg.Profile, "profile", "p", "", "~/.databrickscfg profile: the proxy's own credentials (its calls with --act-as proxy; warehouse states for its gate)")
	fs.Var(&checkedString{p: &cfg.Token, typ: "token", check: nonEmpty("the token"), hide: true}, "token",
		"the proxy's own token (--act-as proxy; warehouse states); prefer env DATABRICKS_TOKEN")
	fs.Var(&checkedString{p: &cfg.LogFile, typ: "path", check: checkLogFile}, "log-file",
		"append the proxy's log to this file instead of stderr (never a token or SQL text)")
	cfg.LogFormat, cfg.ActAs = "text", proxy.ActAsClient
	fs.Var(&checkedString{p: &cfg.LogFormat, typ: "text|json", check: oneOf("text", "json")}, "log-format",
		"log records as text or json lines (log/slog)")
	fs.Var(&checkedString{p: &cfg.ActAs, typ: "client|proxy", check: oneOf(proxy.ActAsClient, proxy.ActAsProxy)}, "act-as",
		"whose credentials the proxy's own calls use: the owning client's (held in memory for its session only) or the proxy's (--profile/DATABRICKS_TOKEN)")
	fs.BoolVar(&cfg.ForceShortWindow, "force-short-window", false,
		"accept a --close-abandoned window under 30s (a client's own pauses may be longer)")
	fs.Var(newDuration(&cfg.RetainFinished, proxy.DefaultRetainFinished, time.Second), "retain-finished",
		"keep a finished operation this long for dbxtop to see how it ended")
	fs.Var(newInt(&cfg.MaxOperations, proxy.DefaultMaxOperations, 1, 10_000_000), "max-operations",
		"operations (and sessions) held at most; the oldest finished go first, and when all are open new ones are forwarded but not recorded")
	fs.Var(newDuration(&cfg.UpstreamIdle, proxy.DefaultUpstreamIdleTimeout, time.Second), "upstream-idle-timeout",
		"retire a pooled upstream connection idle this long, before the server or a load balancer closes it")
	fs.Var(newInt(&cfg.MaxConns, 0, 0, 1_000_000), "max-conns",
		"client requests in flight at most (idle connections hold no slot); beyond, a request waits up to --queue-wait, then 503 with Retry-After (0: no limit)")
	fs.Var(newInt(&cfg.MaxConnsPerClient, 0, 0, 1_000_000), "max-conns-per-client",
		"requests in flight per client (one credential: Bearer T and Basic token:T are one); beyond, a request waits up to --queue-wait, then 503 (0: off)")
	fs.Var(newDuration(&cfg.QueueWait, proxy.DefaultQueueWait, time.Millisecond), "queue-wait",
		"how long a request over --max-conns or --max-conns-per-client waits for a slot before it is refused")
	fs.Var(newDuration(&cfg.DrainTimeout, proxy.DefaultDrainTimeout, time.Second), "drain-timeout",
		"on SIGTERM/SIGINT, serve held sessions and operations (new sessions refused, /v1/ready failing) until they end or this long")
	fs.Var(newDuration(&cfg.ServerIdleTimeout, proxy.DefaultServerIdleTimeout, time.Second), "server-idle-timeout",
		"the server's inactivity reaper: an operation with result pages left is not closed for abandonment before it")
	fs.StringArrayVar(&cfg.Peers, "peers", nil,
		"the other replicas behind the same load balancer, asked before an operation is treated as abandoned (repeatable):\n"+
			targets.Usage)
	fs.Var(&checkedString{p: &cfg.PeerTokenFile, typ: "file", check: checkReadable(safefile.MaxToken)}, "peer-token-file",
		"file holding the admin token of the --peers (one line); default: this proxy's own admin token")
	fs.Var(&checkedString{p: &cfg.PeerCA, typ: "file", check: checkReadable(maxPeerCA)}, "peer-ca",
		"PEM file of the CA certificates the https --peers' certificates are checked against (default: the system roots)")
	fs.Var(&checkedString{p: &cfg.DNSServer, typ: "addr", check: checkDNSServer}, "dns-server",
		"resolve dns+ --peers with only this DNS server, IP:PORT (tests)")
	_ = fs.MarkHidden("dns-server")
}

// maxPeerCA bounds --peer-ca: a bundle of CA certificates.
const maxPeerCA = 1 << 20

func checkDNSServer(s string) error {
	_, err := targets.NewResolver(s)
	return err
}

func checkProxyURL(s string) error {
	if _, err := adminapi.NewAdminClient(s, "x", ""); err != nil {
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
	if cfg.AdminTokenFile != "" {
		if fs.Changed("admin-token") {
			return usagef("--admin-token and --admin-token-file are two ways to give one token: keep --admin-token-file")
		}
		tok, err := a.proxyTokenFile(cfg.AdminTokenFile, "--admin-token-file")
		if err != nil {
			return err
		}
		cfg.AdminToken = tok
	}
	for _, name := range []string{"listen", "admin-listen"} {
		if err := proxy.CheckListen(fs.Lookup(name).Value.String(), cfg.TLSCert != "", cfg.InsecureListen); err != nil {
			return invalidFlag(name, fs.Lookup(name).Value.String(), strings.TrimPrefix(err.Error(), "listen address "+fs.Lookup(name).Value.String()+" "))
		}
	}
	if cfg.CloseAbandoned > 0 && cfg.CloseAbandoned < proxy.MinCloseAbandoned && !cfg.ForceShortWindow {
		return invalidFlag("close-abandoned", cfg.CloseAbandoned.String(),
			fmt.Sprintf("is under %s: a live client's own pause between pages or polls could get its operation closed; add --force-short-window if you mean it", proxy.MinCloseAbandoned))
	}
	if fs.Changed("token") {
		fmt.Fprintln(a.stderr, "dbxtop proxy: warning: --token is visible to other users in the process list; set DATABRICKS_TOKEN instead")
	} else if tok, ok := a.getenv("DATABRICKS_TOKEN"); ok {
		cfg.Token = strings.TrimSpace(tok)
	}
	if cfg.ActAs == proxy.ActAsProxy && cfg.Profile == "" && cfg.Token == "" {
		return usagef("--act-as proxy needs the proxy's own credentials: --profile or DATABRICKS_TOKEN")
	}
	if err := a.finishPeers(fs, cfg); err != nil {
		return err
	}
	cfg.StateFile, cfg.StateErr = proxy.StateFile(func(k string) string { v, _ := a.getenv(k); return v }, cfg.Listen)
	return nil
}

// finishPeers checks --peers and reads the peers' admin token: the
// replicas must know the token the others' admin APIs take.
func (a *app) finishPeers(fs *pflag.FlagSet, cfg *ProxyConfig) error {
	if _, err := peerSource(*cfg); err != nil {
		return usagef("invalid --peers: %s", err.Error())
	}
	if cfg.PeerCA != "" {
		b, _, err := safefile.Read(cfg.PeerCA, maxPeerCA)
		if err != nil {
			return usagef("--peer-ca: %s", err.Error())
		}
		cfg.PeerRoots = x509.NewCertPool()
		if !cfg.PeerRoots.AppendCertsFromPEM(b) {
			return usagef("--peer-ca: %s holds no PEM certificate", cfg.PeerCA)
		}
	}
	switch {
	case len(cfg.Peers) == 0 && (cfg.PeerTokenFile != "" || cfg.PeerCA != ""):
		return usagef("--peer-token-file and --peer-ca are about the --peers: give --peers too")
	case len(cfg.Peers) == 0:
		return nil
	case cfg.PeerTokenFile != "":
		tok, err := a.proxyTokenFile(cfg.PeerTokenFile, "--peer-token-file")
		if err != nil {
			return err
		}
		cfg.PeerToken = tok
	case cfg.AdminToken == "" && !fs.Changed("admin-token"):
		return usagef("--peers needs the admin token the peers take: give every replica the same --admin-token-file, or --peer-token-file")
	}
	return nil
}

// proxyTokenFile reads a token file a flag of the proxy names, with the
// permission warning on stderr.
func (a *app) proxyTokenFile(path, flag string) (string, error) {
	tok, warn, err := readTokenFile(path, flag)
	if err != nil {
		return "", usagef("%s", err.Error())
	}
	if warn != "" {
		fmt.Fprintln(a.stderr, "dbxtop proxy: warning: "+warn)
	}
	return tok, nil
}

// peerSource is the --peers as one discovery source (nil without peers).
func peerSource(c ProxyConfig) (targets.Source, error) {
	if len(c.Peers) == 0 {
		return nil, nil
	}
	var opt targets.Options
	if c.DNSServer != "" {
		r, err := targets.NewResolver(c.DNSServer)
		if err != nil {
			return nil, err
		}
		opt.Resolver = r
	}
	return targets.ParseAll(c.Peers, opt)
}

// serveProxy is `dbxtop proxy`: serve until interrupted.
func serveProxy(ctx context.Context, c ProxyConfig, stdout, stderr io.Writer) int {
	// The log's writer goroutine and this function both write to stderr.
	stderr = &lockedWriter{w: stderr}
	logger, closeLog, err := proxyLogger(c, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dbxtop proxy: "+sources.RedactToken(err.Error(), c.Token))
		return 1
	}
	defer closeLog()
	logf := func(format string, args ...any) {
		logger.Info(sources.RedactToken(fmt.Sprintf(format, args...), c.Token))
	}
	o := proxy.Options{Upstream: c.Upstream, Heal: c.Heal, CloseAbandoned: c.CloseAbandoned,
		FailFastExhausted: c.FailFastExhausted, UserAgent: "dbxtop-proxy/" + Version, Logger: logger, ActAs: c.ActAs,
		RetainFinished: c.RetainFinished, MaxOperations: c.MaxOperations, ServerIdleTimeout: c.ServerIdleTimeout,
		UpstreamIdleTimeout: c.UpstreamIdle, MaxConns: c.MaxConns, MaxConnsPerClient: c.MaxConnsPerClient, QueueWait: c.QueueWait}
	if o.Peers, err = peerSource(c); err != nil {
		fmt.Fprintln(stderr, "dbxtop proxy: --peers: "+err.Error())
		return 1
	}
	o.PeerToken, o.PeerRootCAs = c.PeerToken, c.PeerRoots
	if c.StateErr != nil {
		logger.Warn("the close queue is kept in memory only", "reason", c.StateErr.Error())
	}
	o.StateFile = c.StateFile
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
	drain := func(context.Context) error {
		// The drain has its own bound: --drain-timeout, not the generic
		// grace; then requests in flight get a few seconds more.
		sctx, scancel := context.WithTimeout(context.Background(), c.DrainTimeout)
		defer scancel()
		return srv.Drain(sctx)
	}
	first := srv.FirstLine()
	if c.AdminTokenFile != "" {
		first = srv.FirstLineTokenFrom("--admin-token-file")
	}
	return serveUntilDone(ctx, "dbxtop proxy", first, drain, stdout, stderr)
}

// proxyLogger is the proxy's structured log: text or JSON lines on
// stderr, or appended to --log-file (0600). The proxy never hands it a
// token or SQL text; the workspace token is redacted once more here.
func proxyLogger(c ProxyConfig, stderr io.Writer) (*slog.Logger, func(), error) {
	w, closeW := stderr, func() {}
	if c.LogFile != "" {
		f, err := safefile.OpenAppend(c.LogFile, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("open --log-file: %w", err)
		}
		w, closeW = f, func() { _ = f.Close() }
	}
	aw := newAsyncWriter(&redactWriter{w: w, token: c.Token}, 4096)
	var h slog.Handler = slog.NewTextHandler(aw, nil)
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(aw, nil)
	}
	return slog.New(h).With("component", "proxy"), func() {
		if n := aw.Close(); n > 0 {
			fmt.Fprintf(stderr, "dbxtop proxy: %d log records dropped (the log's destination was too slow)\n", n)
		}
		closeW()
	}, nil
}

// asyncWriter hands log records to a goroutine that writes them, so the
// proxy never waits on a disk or a pipe while it holds its table's lock;
// when the goroutine falls behind by cap records, records are dropped
// and counted.
type asyncWriter struct {
	mu      sync.RWMutex
	closed  bool
	ch      chan []byte
	done    chan struct{}
	dropped atomic.Int64
}

func newAsyncWriter(w io.Writer, capacity int) *asyncWriter {
	a := &asyncWriter{ch: make(chan []byte, capacity), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			_, _ = w.Write(b)
		}
	}()
	return a
}

func (a *asyncWriter) Write(b []byte) (int, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.dropped.Add(1) // a late record, after the proxy stopped
		return len(b), nil
	}
	select {
	case a.ch <- append([]byte(nil), b...):
	default:
		a.dropped.Add(1)
	}
	return len(b), nil
}

// Close writes what is queued and stops; it returns the records dropped.
func (a *asyncWriter) Close() int64 {
	a.mu.Lock()
	a.closed = true
	close(a.ch)
	a.mu.Unlock()
	<-a.done
	return a.dropped.Load()
}

// lockedWriter serialises writers sharing one destination.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// redactWriter removes the proxy's own token from every record.
type redactWriter struct {
	mu    sync.Mutex
	w     io.Writer
	token string
}

func (r *redactWriter) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := io.WriteString(r.w, sources.RedactToken(string(b), r.token)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Package databricks is dbxtop's REST source: query history discovery,
// statement status and actions through the Statement Execution API, SQL
// warehouses, and Vector Search capacity. It keeps databricks-sdk-go's
// unified auth and typed request/response structs but neutralises the SDK's
// own retry loop, so every method makes exactly ONE HTTP attempt and the
// poller's policy alone decides about retries (the SDK would retry a 429
// RESOURCE_EXHAUSTED for five minutes and never read Retry-After).
//
// It imports only sources, model and textfmt from dbxtop, never poller,
// proxy, tui or cmd.
package databricks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/databricks/databricks-sdk-go/client"
	"github.com/databricks/databricks-sdk-go/config"
	"github.com/databricks/databricks-sdk-go/httpclient"
	"github.com/databricks/databricks-sdk-go/service/sql"
	"github.com/databricks/databricks-sdk-go/service/vectorsearch"
	"golang.org/x/time/rate"

	"github.com/dbxtop/dbxtop/sources"
)

// Config says which workspace to reach and how. Zero values follow
// databricks-sdk-go unified auth: explicit fields, then DATABRICKS_* env,
// then the ~/.databrickscfg profile, then OAuth and cloud credentials.
type Config struct {
	Profile, Host, Token string
	Warehouses           []string // discovery filter; empty → every visible warehouse
	UserAgent            string   // e.g. "dbxtop/1.2.3"; prefixed to the SDK's own agent
	ConfigFile           string   // "" → default ~/.databrickscfg

	// DiscoveryWindow is how far back discovery lists finished, failed and
	// canceled statements (UNCLOSED and REAPED candidates); 0 → 30 min.
	DiscoveryWindow time.Duration
	// PageSize is max_results per query-history page (must be < 1000); 0 → 500.
	PageSize int
	// MaxPages bounds the pages read per listing (query history, warehouses,
	// endpoints, indexes); 0 → 200 (100,000 statements at 500 a page).
	// Reaching it is reported (sources.TruncatedError), never silent.
	MaxPages int
	// DiscoveryBudget bounds the time one Discover spends paging through
	// query history; 0 → 20 s (under snapshot's default 30 s --timeout).
	// Running out of it is reported like the page cap.
	DiscoveryBudget time.Duration
	// Transport carries every request; nil → a clone of http.DefaultTransport.
	// The client owns it: CloseIdleConnections drops its pooled connections.
	Transport *http.Transport
	// HTTPTimeout bounds one request's inactivity; 0 → 30 s.
	HTTPTimeout time.Duration
	// Now is the clock for the discovery window and samples; nil → time.Now.
	Now func() time.Time
	// MaxBody bounds every REST answer's body; 0 → MaxBody (32 MiB).
	MaxBody int64
}

const (
	defaultWindow   = 30 * time.Minute
	defaultPageSize = 500
	defaultMaxPages = 200
	defaultBudget   = 20 * time.Second
)

// Client talks to one workspace. It implements sources.Discoverer,
// sources.StatusSource, sources.ActionSource, sources.CapacitySource and
// sources.IdleCloser. Safe for concurrent use.
type Client struct {
	conf      Config
	sdk       *config.Config
	host      string
	dc        *client.DatabricksClient
	transport *http.Transport
	// pages makes query-history requests (history_page.go): the SDK's
	// transport, auth and user agent, without its in-memory copy; paced
	// by pageRate, the SDK client's own rate limit (its limiter is its
	// own).
	pages    *http.Client
	pageRate *rate.Limiter
	now      func() time.Time

	history    *sql.QueryHistoryAPI
	statements *sql.StatementExecutionAPI
	warehouses *sql.WarehousesAPI
	indexes    *vectorsearch.VectorSearchIndexesAPI

	// lastDiscovered is how many operations the last discovery of each
	// scope listed (sizes the next; scopeIndex).
	lastDiscovered [4]atomic.Int64
	gate           *sources.WarehouseGate // fed by Discover (ListWarehouses)

	mu         sync.Mutex
	firstIndex map[string]string // endpoint → first Direct Access index ("" none), for Probe
}

// New resolves configuration and credentials and builds the client. It
// makes no request to the workspace except what the credential provider
// itself needs (OAuth token exchanges); a wrong token therefore surfaces on
// the first call as an HTTPError saying the credentials were refused.
func New(ctx context.Context, c Config) (*Client, error) {
	c = c.withDefaults()
	now := c.Now
	if err := checkConfigFile(c); err != nil {
		return nil, err
	}
	if err := resolveBounded(ctx, func() error { return checkProfile(c) }); err != nil {
		return nil, err
	}
	tr := c.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	sdk := sdkConfig(c, tr)
	pages := &http.Client{Transport: sdk.HTTPTransport, Timeout: c.HTTPTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var hc httpclient.ClientConfig
	err := resolveBounded(ctx, func() error {
		var err error
		hc, err = config.HTTPClientConfigFromConfig(sdk)
		return err
	})
	if err != nil {
		return nil, configError(c, err)
	}
	hc.ErrorRetriable = func(context.Context, error) bool { return false }
	hc.TransientErrors = nil
	pageRate := hc.RateLimitPerSecond
	if pageRate <= 0 {
		pageRate = 15 // the SDK client's default (DATABRICKS_RATE_LIMIT unset)
	}
	dc, err := client.NewWithClient(sdk, httpclient.NewApiClient(hc))
	if err != nil {
		return nil, configError(c, err)
	}
	return &Client{
		conf: c,
		sdk:  sdk,
		// Resolved once: CanonicalHostName writes to the config, which
		// other calls read concurrently.
		host:       strings.TrimRight(sdk.CanonicalHostName(), "/"),
		dc:         dc,
		transport:  tr,
		pages:      pages,
		pageRate:   rate.NewLimiter(rate.Limit(pageRate), pageRate),
		now:        now,
		history:    sql.NewQueryHistory(dc),
		statements: sql.NewStatementExecution(dc),
		warehouses: sql.NewWarehouses(dc),
		indexes:    vectorsearch.NewVectorSearchIndexes(dc),
		firstIndex: map[string]string{},
		gate:       &sources.WarehouseGate{Now: now},
	}, nil
}

// withDefaults fills in what c leaves zero.
func (c Config) withDefaults() Config {
	if c.PageSize <= 0 || c.PageSize >= 1000 {
		c.PageSize = defaultPageSize
	}
	if c.MaxPages <= 0 {
		c.MaxPages = defaultMaxPages
	}
	if c.DiscoveryBudget <= 0 {
		c.DiscoveryBudget = defaultBudget
	}
	if c.DiscoveryWindow <= 0 {
		c.DiscoveryWindow = defaultWindow
	}
	if c.HTTPTimeout <= 0 {
		c.HTTPTimeout = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// sdkConfig is the SDK configuration of c: its unified auth, one attempt
// per call, and dbxtop's transport over tr.
func sdkConfig(c Config, tr *http.Transport) *config.Config {
	sdk := &config.Config{
		Profile:    c.Profile,
		Host:       c.Host,
		Token:      c.Token,
		ConfigFile: c.ConfigFile,
		// A backstop only: with the predicates below nothing is retriable,
		// so the SDK's loop makes one attempt and returns.
		RetryTimeoutSeconds: 1,
		HTTPTimeoutSeconds:  int((c.HTTPTimeout + time.Second - 1) / time.Second),
		HTTPTransport:       &sdkTransport{base: tr, userAgent: c.UserAgent, fresh: noKeepAlive(tr), maxBody: c.MaxBody},
	}
	// Host metadata (/.well-known/databricks-config) only matters for OAuth
	// discovery on real https hosts; skip it for plain-http hosts (the
	// simulator, local proxies) so no unexpected request is made.
	sdk.HostMetadataResolver = func(ctx context.Context, host string) (*config.HostMetadata, error) {
		if strings.HasPrefix(host, "http://") {
			return nil, nil
		}
		return sdk.DefaultHostMetadataResolver()(ctx, host)
	}
	return sdk
}

// Authenticate adds the workspace credentials to r (for the Thrift client,
// which shares this client's unified auth).
func (c *Client) Authenticate(r *http.Request) error { return c.sdk.Authenticate(r) }

// CloseIdleConnections drops idle pooled connections so the next request
// (a retry after a transport error) dials a fresh one.
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// Host is the resolved workspace URL (scheme and host, no path).
func (c *Client) Host() string { return c.host }

// WarehouseFilter is the configured warehouse filter (empty: all visible).
func (c *Client) WarehouseFilter() []string { return append([]string(nil), c.conf.Warehouses...) }

// checkProfile turns "no such profile" into an error naming the profile and
// the file before the SDK resolves anything (the SDK silently ignores a
// missing file and then fails with a generic "cannot configure default
// credentials").
func checkProfile(c Config) error {
	profile := c.Profile
	if profile == "" {
		profile = os.Getenv("DATABRICKS_CONFIG_PROFILE")
	}
	if profile == "" {
		return nil
	}
	path := c.ConfigFile
	if path == "" {
		path = os.Getenv("DATABRICKS_CONFIG_FILE")
	}
	f, err := config.LoadFile(path)
	if err != nil {
		shown := path
		if shown == "" {
			shown = "~/.databrickscfg"
		}
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("databricks profile %q: config file %s does not exist", profile, shown)
		}
		return fmt.Errorf("databricks profile %q: cannot read config file %s: %w", profile, shown, err)
	}
	if sec, err := f.GetSection(profile); err == nil && len(sec.Keys()) > 0 {
		return nil
	}
	var names []string
	for _, s := range f.SectionStrings() {
		if s != "DEFAULT" || len(f.Section(s).Keys()) > 0 {
			names = append(names, s)
		}
	}
	sort.Strings(names)
	return fmt.Errorf("databricks profile %q not found in config file %s (profiles there: %s)", profile, f.Path(), profileList(names))
}

// configError says which configuration could not be resolved, without any
// secret (the SDK's own debug suffix masks tokens; redact is a second guard).
func configError(c Config, err error) error {
	return &redactedError{msg: "databricks configuration: " + sources.RedactToken(err.Error(), c.Token), cause: err}
}

// noKeepAlive is tr without connection reuse, for retries that must not
// meet a stale pooled connection.
func noKeepAlive(tr *http.Transport) *http.Transport {
	f := tr.Clone()
	f.DisableKeepAlives = true
	return f
}

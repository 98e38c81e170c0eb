// Package targets finds the `dbxtop proxy` instances dbxtop reads
// (--proxy) and a proxy's replicas ask (--peers), in the forms operators
// already run: a static URL, every address of a DNS name (Prometheus'
// dns_sd, a Kubernetes headless Service) and a Prometheus file_sd file.
// A Source is asked again on each refresh: a name is re-resolved, a file
// re-read when it changed. See docs/proxy.md "Finding proxies".
//
// Tokens never travel through discovery: a target's TokenFile names a
// file read with safefile.ReadToken (the same checks and permission
// warning as every token file). It imports internal/safefile and textfmt
// only.
package targets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/internal/safefile"
)

// Bounds of discovery.
const (
	// MaxTargets is the default cap on the targets of one Source: a
	// name or file that lists more is cut to this many, with an error.
	MaxTargets = 256
	// MaxFile bounds a file_sd file.
	MaxFile = 1 << 20
	// DefaultTimeout bounds one DNS lookup.
	DefaultTimeout = 5 * time.Second
)

// Labels of a file_sd target that dbxtop reads. Labels whose names begin
// with "__" are consumed here and not passed on in Target.Labels, as
// Prometheus drops them after relabelling.
const (
	// LabelTokenFile names the file holding the target's admin token;
	// a relative path is relative to the file_sd file's directory.
	LabelTokenFile = "__dbxtop_token_file__"
	// LabelScheme is "http" (the default) or "https", as in Prometheus.
	LabelScheme = "__scheme__"
)

// Target is one proxy's admin API.
type Target struct {
	// URL is the admin API's base: http(s)://HOST:PORT, no path.
	URL string
	// Labels are the file_sd group's labels (those not beginning with
	// "__"), each value one clean line; nil for other forms.
	Labels map[string]string
	// TokenFile names the file holding this target's admin token; ""
	// means the token the consumer holds for every target.
	TokenFile string
	// ServerName is, for dns+https, the DNS name the URL's address came
	// from: the name to verify the certificate against. "" otherwise.
	ServerName string
}

// Token returns the target's admin token: the content of TokenFile read
// with safefile.ReadToken, or common when the target names no file. warn
// is one line when others may read the file.
func (t Target) Token(common string) (tok, warn string, err error) {
	if t.TokenFile == "" {
		return common, "", nil
	}
	return safefile.ReadToken(t.TokenFile, "target "+t.URL+" ("+LabelTokenFile+")")
}

// Source lists targets. Targets always returns the best list it has,
// sorted by URL without duplicates; a non-nil error says what is wrong
// with it: a name that did not resolve or a file that could not be read
// or parsed leaves the last list read (nil before the first), so a
// half-written file or a DNS hiccup does not drop every target at once;
// a list over the cap is cut to it. Safe for concurrent use.
type Source interface {
	Targets(ctx context.Context) ([]Target, error)
	// String is the spec, for messages.
	String() string
}

// Resolver is what a dns+ spec resolves names with; *net.Resolver is one.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Options tunes Parse.
type Options struct {
	// Resolver resolves dns+ names; nil is net.DefaultResolver.
	Resolver Resolver
	// MaxTargets caps each Source; 0 is MaxTargets.
	MaxTargets int
	// Timeout bounds one DNS lookup; 0 is DefaultTimeout.
	Timeout time.Duration
}

func (o Options) max() int {
	if o.MaxTargets > 0 {
		return o.MaxTargets
	}
	return MaxTargets
}

func (o Options) resolver() Resolver {
	if o.Resolver != nil {
		return o.Resolver
	}
	return net.DefaultResolver
}

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

// NewResolver is a resolver that asks only the DNS server at addr
// (IP:PORT), over Go's own resolver: the hidden --dns-server option,
// for tests that serve a name from a DNS server on loopback. /etc/hosts
// is still read first, as Go's resolver always does.
func NewResolver(addr string) (*net.Resolver, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || net.ParseIP(host) == nil {
		return nil, fmt.Errorf("DNS server %q: want IP:PORT", addr)
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}, nil
}

// Usage is the forms Parse takes, for flag help and errors.
const Usage = "http(s)://HOST:PORT, dns+http(s)://NAME:PORT (every address of NAME) or file://PATH (a Prometheus file_sd JSON or YAML file)"

// Parse reads one spec: http(s)://HOST:PORT (one target),
// dns+http(s)://NAME:PORT (every A and AAAA record of NAME, resolved on
// each Targets call) or file://PATH (a Prometheus file_sd file, JSON when
// PATH ends in .json, YAML otherwise, re-read when it changed; PATH is
// what follows file://, so file:///etc/x.json is absolute).
func Parse(spec string, opt Options) (Source, error) {
	s := strings.TrimSpace(spec)
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return nil, fmt.Errorf("%q: want %s", show(spec), Usage)
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
		u, err := baseURL(strings.ToLower(scheme), rest)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", show(spec), err)
		}
		return static{spec: show(s), t: Target{URL: u}}, nil
	case "dns+http", "dns+https":
		name, port, err := splitHostPort(rest)
		if err != nil {
			return nil, fmt.Errorf("%q: %w (want dns+http://NAME:PORT)", show(spec), err)
		}
		return &dnsSource{spec: s, scheme: strings.TrimPrefix(strings.ToLower(scheme), "dns+"), name: name, port: port, opt: opt}, nil
	case "file":
		if rest == "" {
			return nil, fmt.Errorf("%q: want file://PATH", show(spec))
		}
		return &fileSource{spec: s, path: rest, max: opt.max()}, nil
	}
	return nil, fmt.Errorf("%q: unknown scheme %q: want %s", show(spec), clip(scheme), Usage)
}

// ParseAll reads several specs (a repeated flag) as one Source: the union
// of their targets, each URL once; its error joins theirs.
func ParseAll(specs []string, opt Options) (Source, error) {
	var m multi
	for _, s := range specs {
		src, err := Parse(s, opt)
		if err != nil {
			return nil, err
		}
		m.srcs = append(m.srcs, src)
	}
	m.max = opt.max()
	return m, nil
}

type multi struct {
	srcs []Source
	max  int
}

func (m multi) String() string {
	names := make([]string, len(m.srcs))
	for i, s := range m.srcs {
		names[i] = s.String()
	}
	return strings.Join(names, ", ")
}

func (m multi) Targets(ctx context.Context) ([]Target, error) {
	var all []Target
	var errs []error
	for _, s := range m.srcs {
		ts, err := s.Targets(ctx)
		all = append(all, ts...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	all, err := finish(all, m.max, m.String())
	if err != nil {
		errs = append(errs, err)
	}
	return all, errors.Join(errs...)
}

type static struct {
	spec string
	t    Target
}

func (s static) String() string { return s.spec }

func (s static) Targets(context.Context) ([]Target, error) { return []Target{s.t}, nil }

// baseURL checks HOST:PORT (the part after scheme://) and returns the
// base URL: no credentials, no path beyond "/", no query.
func baseURL(scheme, rest string) (string, error) {
	u, err := url.Parse(scheme + "://" + rest)
	switch {
	case err != nil:
		return "", errors.New("not a URL")
	case u.User != nil:
		return "", errors.New("credentials in the URL: give the token in a file")
	case u.Hostname() == "" || u.Port() == "":
		return "", errors.New("want HOST:PORT")
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", errors.New("want no path or query: the admin API's base URL")
	}
	if _, err := portNumber(u.Port()); err != nil {
		return "", err
	}
	return scheme + "://" + u.Host, nil
}

func splitHostPort(hp string) (host, port string, err error) {
	hp = strings.TrimSuffix(hp, "/")
	host, port, err = net.SplitHostPort(hp)
	if err != nil || host == "" {
		return "", "", errors.New("want NAME:PORT")
	}
	if _, err := portNumber(port); err != nil {
		return "", "", err
	}
	if strings.ContainsAny(host, "/?#@ \t") {
		return "", "", errors.New("want NAME:PORT")
	}
	return host, port, nil
}

func portNumber(p string) (int, error) {
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' || n > 65535 {
			return 0, fmt.Errorf("port %q: want 1-65535", clip(p))
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q: want 1-65535", clip(p))
	}
	return n, nil
}

// finish sorts ts by URL, keeps the first of each URL and cuts the list
// to max, with an error naming what was cut.
func finish(ts []Target, max int, spec string) ([]Target, error) {
	slices.SortStableFunc(ts, func(a, b Target) int { return strings.Compare(a.URL, b.URL) })
	ts = slices.CompactFunc(ts, func(a, b Target) bool { return a.URL == b.URL })
	if len(ts) > max {
		n := len(ts)
		return ts[:max:max], fmt.Errorf("%s: %d targets, over the cap of %d: the first %d by URL are used", show(spec), n, max, max)
	}
	return ts, nil
}

// show is a spec as errors and String quote it: credentials in it
// replaced (a URL's user:password@), bounded.
func show(spec string) string {
	if scheme, rest, ok := strings.Cut(spec, "://"); ok {
		host, path, _ := strings.Cut(rest, "/")
		if i := strings.LastIndex(host, "@"); i >= 0 {
			spec = scheme + "://REDACTED@" + host[i+1:]
			if path != "" || strings.Contains(rest, "/") {
				spec += "/" + path
			}
		}
	}
	return clip(spec)
}

// clip bounds a user's or a file's text quoted in an error.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

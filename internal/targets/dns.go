package targets

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
)

// dnsSource is dns+http(s)://NAME:PORT: one target per address of NAME,
// resolved on every call (a Kubernetes headless Service's records follow
// its ready pods).
type dnsSource struct {
	spec, scheme, name, port string
	opt                      Options

	mu   sync.Mutex
	last []Target
}

func (s *dnsSource) String() string { return s.spec }

func (s *dnsSource) Targets(ctx context.Context) ([]Target, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opt.timeout())
	defer cancel()
	addrs, err := s.opt.resolver().LookupIPAddr(ctx, s.name)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("no A or AAAA record")
	}
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.last, fmt.Errorf("%s: resolving %s: %w", show(s.spec), clip(s.name), err)
	}
	ts := make([]Target, 0, len(addrs))
	for _, a := range addrs {
		host := a.IP.String()
		if a.Zone != "" {
			host += "%25" + a.Zone
		}
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		t := Target{URL: s.scheme + "://" + host + ":" + s.port}
		if s.scheme == "https" {
			t.ServerName = s.name
		}
		ts = append(ts, t)
	}
	ts, err = finish(ts, s.opt.max(), s.spec)
	s.mu.Lock()
	s.last = ts
	s.mu.Unlock()
	return ts, err
}

var _ Resolver = (*net.Resolver)(nil)

package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/dbxtop/dbxtop/internal/targets"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
)

// proxyTargets turns the --proxy specs into the proxies to read at each
// refresh (internal/targets: admin URLs, dns+ names, file_sd files), with
// token the admin token of every one that names no token file of its own
// (DBXTOP_PROXY_TOKEN). static are those given by admin URL (the Vector
// Search account is read from them). dnsServer, when set (the hidden
// --dns-server), is the only DNS server dns+ specs ask. warn is told a
// token file's permission warning once.
func proxyTargets(specs []string, token, dnsServer string, warn func(string)) (adminapi.Targets, []adminapi.Target, error) {
	var opt targets.Options
	if dnsServer != "" {
		r, err := targets.NewResolver(dnsServer)
		if err != nil {
			return nil, nil, fmt.Errorf("--dns-server %s: %w", dnsServer, err)
		}
		opt.Resolver = r
	}
	src, err := targets.ParseAll(specs, opt)
	if err != nil {
		return nil, nil, fmt.Errorf("--proxy: %w", err)
	}
	var static []adminapi.Target
	for _, s := range specs {
		if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
			if token == "" {
				continue // no token: read as a target, shown down with why
			}
			static = append(static, adminapi.Target{URL: s, Token: token})
		}
	}
	return &proxySource{src: src, common: token, warn: warn, warned: map[string]bool{}}, static, nil
}

// proxySource is adminapi.Targets over an internal/targets Source: each
// target gets its token (its token file, else the common one); one whose
// token cannot be had is listed with the reason (shown down).
type proxySource struct {
	src    targets.Source
	common string
	warn   func(string)

	mu     sync.Mutex
	warned map[string]bool
}

func (p *proxySource) Targets(ctx context.Context) ([]adminapi.Target, error) {
	ts, err := p.src.Targets(ctx)
	out := make([]adminapi.Target, 0, len(ts))
	for _, t := range ts {
		tok, warn, terr := t.Token(p.common)
		if warn != "" && p.warn != nil {
			p.mu.Lock()
			first := !p.warned[warn]
			p.warned[warn] = true
			p.mu.Unlock()
			if first {
				p.warn(warn)
			}
		}
		if terr == nil && tok == "" {
			terr = errors.New("no admin token: set DBXTOP_PROXY_TOKEN, or name a token file with the " + targets.LabelTokenFile + " label")
		}
		out = append(out, adminapi.Target{URL: t.URL, Token: tok, ServerName: t.ServerName, Err: terr})
	}
	return out, err
}

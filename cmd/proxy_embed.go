package cmd

import (
	"context"

	"github.com/dbxtop/dbxtop/proxy"
)

// embeddedProxy is the `dbxtop proxy` that demo and `sim --scenario demo`
// run in front of the simulator for the workload's proxied share (the
// simulator never imports the proxy: it is handed this hook).
type embeddedProxy struct{ srv *proxy.Server }

// hook starts the proxy once the simulator knows its own URL.
func (e *embeddedProxy) hook(ctx context.Context) func(upstream string) (string, error) {
	return func(upstream string) (string, error) {
		srv, err := proxy.Start(ctx, proxy.Options{Upstream: upstream, Heal: true, UserAgent: "dbxtop-proxy/" + Version},
			proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
		if err != nil {
			return "", err
		}
		e.srv = srv
		return srv.URL(), nil
	}
}

// close stops the proxy (after the simulator's workload has stopped).
func (e *embeddedProxy) close() {
	if e.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	_ = e.srv.Close(ctx)
}

// wantsEmbeddedProxy: scenarios demo and vector-incident run one unless
// --embedded-proxy=false (the vector writes that meet the refusal go
// through it).
func (c SimConfig) wantsEmbeddedProxy() bool {
	return (c.Scenario == "demo" || c.Scenario == "vector-incident") && !c.NoProxy
}

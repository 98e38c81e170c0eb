// Command plainproxy is the floor for a Go reverse proxy: net/http's
// httputil.ReverseProxy in front of one upstream, with no observation at
// all. The proxy benchmark (BenchmarkProxyAnchors, e2e/proxybench.sh)
// measures dbxtop proxy's CPU per statement against it.
//
//	plainproxy --upstream http://127.0.0.1:PORT [--listen 127.0.0.1:0] [--tls-cert C --tls-key K]
//
// The first line of stdout is listen=URL. Loopback upstreams only.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address clients connect to")
	upstream := flag.String("upstream", "", "http://127.0.0.1:PORT to forward to (loopback only)")
	cert := flag.String("tls-cert", "", "serve TLS with this certificate (PEM)")
	key := flag.String("tls-key", "", "the private key of --tls-cert (PEM)")
	flag.Parse()
	if err := run(*listen, *upstream, *cert, *key); err != nil {
		fmt.Fprintln(os.Stderr, "plainproxy:", err)
		os.Exit(1)
	}
}

func run(listen, upstream, cert, key string) error {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme != "http" {
		return fmt.Errorf("--upstream %q: want http://127.0.0.1:PORT", upstream)
	}
	if h, _, err := net.SplitHostPort(u.Host); err != nil || !net.ParseIP(h).IsLoopback() {
		return fmt.Errorf("--upstream %q: loopback only", upstream)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 50 * time.Second}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	scheme := "http"
	if cert != "" {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return err
		}
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	fmt.Printf("listen=%s://%s\n", scheme, l.Addr())
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 30 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// Command plainproxy is the floor for a Go reverse proxy: net/http's
// httputil.ReverseProxy in front of one upstream, with no observation at
// all. The proxy benchmark (BenchmarkProxyAnchors, e2e/proxybench.sh)
// measures dbxtop proxy's CPU per statement against it.
//
//	plainproxy --upstream http://127.0.0.1:PORT [--listen 127.0.0.1:0] [--tls-cert C --tls-key K] [--client lean]
//
// --client lean swaps net/http's Transport (a reader and a writer
// goroutine per upstream connection) for a minimal HTTP/1.1 client that
// writes the request and reads the answer in the handler's own goroutine:
// an experiment that bounds what a cheaper forwarding path could gain. It
// is not a general client (plain HTTP, no proxy from the environment, no
// check that a pooled connection is still alive) and dbxtop does not use
// it.
//
// The first line of stdout is listen=URL. Loopback upstreams only.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address clients connect to")
	upstream := flag.String("upstream", "", "http://127.0.0.1:PORT to forward to (loopback only)")
	cert := flag.String("tls-cert", "", "serve TLS with this certificate (PEM)")
	key := flag.String("tls-key", "", "the private key of --tls-cert (PEM)")
	client := flag.String("client", "net/http", "the upstream client: net/http or lean")
	flag.Parse()
	if err := run(*listen, *upstream, *cert, *key, *client); err != nil {
		fmt.Fprintln(os.Stderr, "plainproxy:", err)
		os.Exit(1)
	}
}

func run(listen, upstream, cert, key, client string) error {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme != "http" {
		return fmt.Errorf("--upstream %q: want http://127.0.0.1:PORT", upstream)
	}
	if h, _, err := net.SplitHostPort(u.Host); err != nil || !net.ParseIP(h).IsLoopback() {
		return fmt.Errorf("--upstream %q: loopback only", upstream)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	switch client {
	case "net/http":
		rp.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 50 * time.Second}
	case "lean":
		rp.Transport = &lean{addr: u.Host}
	default:
		return fmt.Errorf("--client %q: want net/http or lean", client)
	}
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

// lean is the minimal upstream client of --client lean: idle HTTP/1.1
// connections in a stack, each round trip on the caller's goroutine.
type lean struct {
	addr string
	mu   sync.Mutex
	idle []*leanConn
}

type leanConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func (l *lean) get() (*leanConn, error) {
	l.mu.Lock()
	if n := len(l.idle); n > 0 {
		lc := l.idle[n-1]
		l.idle = l.idle[:n-1]
		l.mu.Unlock()
		return lc, nil
	}
	l.mu.Unlock()
	c, err := net.DialTimeout("tcp", l.addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &leanConn{c: c, br: bufio.NewReader(c), bw: bufio.NewWriter(c)}, nil
}

func (l *lean) put(lc *leanConn) {
	l.mu.Lock()
	l.idle = append(l.idle, lc)
	l.mu.Unlock()
}

func (l *lean) RoundTrip(req *http.Request) (*http.Response, error) {
	lc, err := l.get()
	if err != nil {
		return nil, err
	}
	err = req.Write(lc.bw)
	if err == nil {
		err = lc.bw.Flush()
	}
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(lc.br, req)
	}
	if err != nil {
		_ = lc.c.Close()
		return nil, err
	}
	resp.Body = &leanBody{ReadCloser: resp.Body, lc: lc, l: l, keep: !resp.Close}
	return resp, nil
}

// leanBody gives its connection back once the answer was read to its
// end, and closes it if the answer was abandoned.
type leanBody struct {
	io.ReadCloser
	lc   *leanConn
	l    *lean
	keep bool
	done bool
}

func (b *leanBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		if b.keep {
			b.l.put(b.lc)
		} else {
			_ = b.lc.c.Close()
		}
	}
	return n, err
}

func (b *leanBody) Close() error {
	if !b.done {
		b.done = true
		_ = b.lc.c.Close()
	}
	return nil
}

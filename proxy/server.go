package proxy

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/internal/preauth"
)

// ServeOptions says where a Server listens.
type ServeOptions struct {
	Listen      string // client side; "127.0.0.1:8444" when empty
	AdminListen string // admin API; "127.0.0.1:8445" when empty
	AdminToken  string // "" → 32 random hex characters
	// TLSCert and TLSKey serve both listeners over TLS.
	TLSCert, TLSKey string
	// InsecureListen allows plain HTTP on a non-loopback address (clients'
	// tokens would cross the network in clear).
	InsecureListen bool
	// ReadTimeout bounds reading one client request, headers and body
	// (default DefaultReadTimeout): a client trickling its body is cut.
	ReadTimeout time.Duration
	// PreAuthTimeout bounds a connection no credential was accepted on
	// yet: each request read, and each idle wait (default
	// DefaultPreAuthTimeout).
	PreAuthTimeout time.Duration
}

// DefaultReadTimeout bounds reading a client's request: a Thrift request
// is small (the largest is an ExecuteStatement's SQL text).
const DefaultReadTimeout = 60 * time.Second

// Server is a running proxy: the client listener, the admin listener and
// the close queue.
type Server struct {
	*Proxy
	url, adminURL, token string
	srv, admin           *http.Server
	cancel               context.CancelFunc
	wg                   sync.WaitGroup
	closeOnce            sync.Once
}

// CheckListen refuses plain HTTP on a non-loopback address unless
// insecure is set: clients send their tokens to the proxy.
func CheckListen(addr string, tls, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: want HOST:PORT", addr)
	}
	if tls || insecure || isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("listen address %s is not loopback: clients' tokens would cross the network in clear; add --tls-cert/--tls-key (or --insecure-listen)", addr)
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Start builds the proxy, listens on both addresses and serves until Close.
func Start(ctx context.Context, o Options, so ServeOptions) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if so.Listen == "" {
		so.Listen = "127.0.0.1:8444"
	}
	if so.AdminListen == "" {
		so.AdminListen = "127.0.0.1:8445"
	}
	tcfg, err := serverTLS(so)
	if err != nil {
		return nil, err
	}
	token, err := adminToken(so.AdminToken)
	if err != nil {
		return nil, err
	}
	p, err := New(o)
	if err != nil {
		return nil, err
	}
	p.setPeerToken(token)
	if err := p.resumeQueue(); err != nil {
		return nil, err
	}
	ln, aln, err := listen(so, tcfg)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if tcfg != nil {
		scheme = "https"
	}
	s := &Server{Proxy: p, token: token,
		url:      scheme + "://" + ln.Addr().String(),
		adminURL: scheme + "://" + aln.Addr().String(),
	}
	if so.ReadTimeout <= 0 {
		so.ReadTimeout = DefaultReadTimeout
	}
	s.srv = &http.Server{Handler: p, ReadHeaderTimeout: min(30*time.Second, so.ReadTimeout), ReadTimeout: so.ReadTimeout,
		IdleTimeout: clientIdleTimeout, MaxHeaderBytes: clientMaxHeaderBytes}
	s.admin = &http.Server{Handler: p.AdminHandler(token), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		IdleTimeout: adminIdleTimeout, MaxHeaderBytes: adminMaxHeaderBytes}
	preauth.Track(s.srv)
	preauth.Track(s.admin)
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		serve(s.srv, ln, p.log)
	}()
	go func() {
		defer s.wg.Done()
		serve(s.admin, aln, p.log)
	}()
	go func() {
		defer s.wg.Done()
		p.Run(rctx)
	}()
	return s, nil
}

// serverTLS loads the certificate both listeners serve (nil: plain HTTP)
// and refuses plain HTTP where CheckListen does.
func serverTLS(so ServeOptions) (*tls.Config, error) {
	useTLS := so.TLSCert != "" || so.TLSKey != ""
	var tcfg *tls.Config
	if useTLS {
		cert, err := tls.LoadX509KeyPair(so.TLSCert, so.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("proxy: TLS certificate: %w", err)
		}
		tcfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	for _, a := range []string{so.Listen, so.AdminListen} {
		if err := CheckListen(a, useTLS, so.InsecureListen); err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
	}
	return tcfg, nil
}

// adminToken is the given token, or 32 random hex characters.
func adminToken(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", fmt.Errorf("proxy: generating the admin token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// listen opens the client and admin listeners, over TLS when tcfg is set.
func listen(so ServeOptions, tcfg *tls.Config) (ln, aln net.Listener, err error) {
	ln, err = net.Listen("tcp", so.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy: listening on %s: %w", so.Listen, err)
	}
	aln, err = net.Listen("tcp", so.AdminListen)
	if err != nil {
		_ = ln.Close()
		return nil, nil, fmt.Errorf("proxy: admin API: listening on %s: %w", so.AdminListen, err)
	}
	preAuth := so.PreAuthTimeout
	if preAuth <= 0 {
		preAuth = DefaultPreAuthTimeout
	}
	ln, aln = preauth.Listener{Listener: ln, Timeout: preAuth}, preauth.Listener{Listener: aln, Timeout: preAuth}
	if tcfg != nil {
		ln = tls.NewListener(ln, tcfg)
		aln = tls.NewListener(aln, tcfg.Clone())
	}
	return ln, aln, nil
}

func serve(srv *http.Server, ln net.Listener, log *slog.Logger) {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("serve", "addr", ln.Addr().String(), "err", err.Error())
	}
}

// URL is where clients connect, AdminURL the admin API, AdminToken its
// bearer token.
func (s *Server) URL() string        { return s.url }
func (s *Server) AdminURL() string   { return s.adminURL }
func (s *Server) AdminToken() string { return s.token }

// FirstLine is the proxy's first line of stdout, with the admin token a
// script reads when the proxy made the token itself.
func (s *Server) FirstLine() string { return s.firstLine(s.token) }

// FirstLineTokenFrom names where the token came from instead of printing
// it: a token the operator gave (a file) stays out of stdout and the journal.
func (s *Server) FirstLineTokenFrom(src string) string { return s.firstLine("(" + src + ")") }

func (s *Server) firstLine(token string) string {
	return fmt.Sprintf("listen=%s admin=%s admin_token=%s", s.url, s.adminURL, token)
}

// Close stops the proxy: the client listener stops accepting and the
// requests in flight finish (ctx bounds the wait), the close queue runs
// once more, what it still holds is persisted, then the admin listener
// and the close queue stop. It waits for every goroutine the server
// started. SIGTERM goes through Drain first, which keeps held sessions
// and operations served until they end.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		t0 := time.Now()
		err = shutdown(ctx, s.srv)
		fctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		s.flushQueue(fctx)
		cancel()
		s.cancel()
		s.persistQueue(true)
		err = errors.Join(err, shutdown(ctx, s.admin))
		s.wg.Wait()
		s.CloseIdleConnections()
		st := s.Stats()
		s.log.Info("drained", "took", time.Since(t0).Round(time.Millisecond).String(), "queued_closes", st.QueuedCloses, "open_operations", st.OpenOperations)
	})
	return err
}

// flushTimeout bounds the close queue's last run at drain.
const flushTimeout = 10 * time.Second

// DefaultDrainTimeout is how long a drain serves held sessions and
// operations before it leaves the open ones alone (--drain-timeout).
const DefaultDrainTimeout = 30 * time.Second

func shutdown(ctx context.Context, srv *http.Server) error {
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
		if strings.Contains(err.Error(), "context") {
			return fmt.Errorf("proxy: shutdown cut connections that were still busy: %w", err)
		}
		return err
	}
	return nil
}

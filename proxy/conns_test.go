package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources/thrift"
)

// startGuarded starts a proxy whose connections must authenticate within
// preAuth.
func startGuarded(t *testing.T, upstream string, o Options, preAuth time.Duration) *Server {
	t.Helper()
	o.Upstream, o.Logger = upstream, testLogger(t)
	p, err := Start(context.Background(), o, ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", PreAuthTimeout: preAuth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

// countingClient is a Thrift client whose dials are counted: a second
// dial means the proxy closed the first connection.
func countingClient(t *testing.T, host, token string, dials *atomic.Int64) *thrift.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	c, err := thrift.NewClient(thrift.Options{Host: host, Token: token, UserAgent: "keepalive/1.0", Timeout: 20 * time.Second, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// Connections cost little until they authenticate: sockets that send
// nothing, and a keep-alive connection idle after a refused call, are
// closed after the pre-authentication timeout, while a connection the
// server accepted a credential on stays open across a longer pause, and
// real clients are answered while hundreds of idle sockets are open.
func TestConnectionsCostLittleUntilAuthenticated(t *testing.T) {
	const preAuth = 300 * time.Millisecond
	s := startSim(t, "")
	p := startGuarded(t, s.URL(), Options{}, preAuth)
	addr, admin := p.URL()[len("http://"):], p.AdminURL()[len("http://"):]
	idle := make([]net.Conn, 300)
	for i := range idle {
		a := addr
		if i%10 == 0 {
			a = admin // the admin listener too
		}
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle[i] = c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]
	var good, bad atomic.Int64
	gc := countingClient(t, p.URL(), s.Token(), &good)
	bc := countingClient(t, p.URL(), "dapi-wrong-token", &bad)
	sess, err := gc.OpenSession(ctx, wh)
	if err != nil {
		t.Fatalf("a real client beside %d idle sockets: %v", len(idle), err)
	}
	if _, err := bc.OpenSession(ctx, wh); err == nil {
		t.Fatal("premise: a wrong token is refused")
	}
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("a socket that sent nothing: read %d, %v; want it closed by the proxy", n, err)
		}
	}
	// Both keep-alive connections have now been idle past preAuth (the
	// idle sockets were closed after it): only the authenticated one is
	// still open.
	time.Sleep(4 * preAuth)
	if _, err := gc.Execute(ctx, sess, "SELECT 1", false); err != nil {
		t.Fatal(err)
	}
	_, _ = bc.OpenSession(ctx, wh)
	if n := good.Load(); n != 1 {
		t.Errorf("the authenticated client dialled %d times: its idle keep-alive connection was cut", n)
	}
	if n := bad.Load(); n != 2 {
		t.Errorf("the refused client dialled %d times, want 2: its idle connection outlived the pre-authentication timeout", n)
	}
}

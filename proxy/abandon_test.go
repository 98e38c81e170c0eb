package proxy

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// slowConn reads at most rate bytes a second: a slow link.
type slowConn struct {
	net.Conn
	rate int
}

func (c *slowConn) Read(b []byte) (int, error) {
	chunk := c.rate / 20
	if len(b) > chunk {
		b = b[:chunk]
	}
	time.Sleep(50 * time.Millisecond)
	return c.Conn.Read(b)
}

// readAll pages every row of op with pages of page rows, pausing before
// each page after the first.
func readAll(ctx context.Context, t *testing.T, c *thrift.Client, ref sources.Ref, page int64, pause time.Duration) int {
	t.Helper()
	rows := 0
	for i := 0; ; i++ {
		if i > 0 {
			time.Sleep(pause)
		}
		p, err := c.FetchResults(ctx, ref, page)
		if err != nil {
			t.Fatalf("after %d rows: %v", rows, err)
		}
		rows += len(p.Rows)
		if !p.HasMoreRows {
			return rows
		}
	}
}

// Abandonment acts only on evidence: a reader that pauses between result
// pages longer than --close-abandoned (pages left: the server's idle
// timeout applies), and a reader on a link so slow that one page takes
// longer than the window to arrive (a request in flight), both get every
// row; the proxy took no action.
func TestAbandonmentSparesSlowReaders(t *testing.T) {
	const window = 300 * time.Millisecond
	for _, tc := range []struct {
		name  string
		rate  int // bytes/s of the client's link; 0 unthrottled
		rows  int
		page  int64
		pause time.Duration
	}{
		{name: "paused reader", rows: 5000, page: 1000, pause: 4 * window},
		{name: "slow link", rate: 200 << 10, rows: 60000, page: 30000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, "")
			p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy(), CloseAbandoned: window, ServerIdleTimeout: time.Minute})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			tr := http.DefaultTransport.(*http.Transport).Clone()
			if tc.rate > 0 {
				d := &net.Dialer{}
				tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := d.DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return &slowConn{Conn: c, rate: tc.rate}, nil
				}
			}
			c, err := thrift.NewClient(thrift.Options{Host: p.URL(), Token: s.Token(), UserAgent: "reader/1.0", Transport: tr, Timeout: 50 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseIdleConnections()
			sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
			if err != nil {
				t.Fatal(err)
			}
			op, err := c.Execute(ctx, sess, "SELECT id FROM range("+strconv.Itoa(tc.rows)+")", false)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if n := readAll(ctx, t, c, op.Ref, tc.page, tc.pause); n != tc.rows {
				t.Fatalf("%d rows, want %d", n, tc.rows)
			}
			if took := time.Since(start); took < 2*window {
				t.Fatalf("read in %s: not slower than the window, the test proves nothing", took)
			}
			if err := c.CloseOperation(ctx, op.Ref); err != nil {
				t.Fatalf("the client's own close: %v", err)
			}
			if st := p.Stats(); st.AbandonActions != 0 || st.ClosedByProxy != 0 {
				t.Errorf("the proxy acted on a live reader: %+v", st)
			}
		})
	}
}

package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// startStrictSim starts a quiet simulator that refuses handles with a
// wrong secret, as HiveServer2 does (docs/simulator.md).
func startStrictSim(t *testing.T) *sim.Server {
	t.Helper()
	s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioQuiet, Seed: 7}) // strict: the zero Options check secrets
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

func randomSecret() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}

func randomStatementID() string {
	b := randomSecret()
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func simOpen(s *sim.Server, id string) bool {
	for _, o := range s.Truth().Operations {
		if o.StatementID == id {
			return o.Open
		}
	}
	return false
}

// A close or status call naming another client's operation, with a wrong
// token or a wrong secret, changes nothing: the proxy records nothing,
// queues nothing, and its close queue and abandonment never act on it.
func TestHostileCallsOnAnotherClientsOperation(t *testing.T) {
	for _, abandon := range []time.Duration{0, 400 * time.Millisecond} {
		t.Run(fmt.Sprintf("close-abandoned=%s", abandon), func(t *testing.T) {
			s := startStrictSim(t)
			p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy(), CloseAbandoned: abandon})
			wh := s.WarehouseIDs()[0]
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			victim := client(t, p.URL(), s.Token(), "victim/1.0")
			sess, err := victim.OpenSession(ctx, wh)
			if err != nil {
				t.Fatal(err)
			}
			op, err := victim.Execute(ctx, sess, "SELECT sleep(600)", false)
			if err != nil {
				t.Fatal(err)
			}
			id := op.Ref.StatementID
			// The victim keeps polling (it is alive): only a hostile call
			// could get its operation closed.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					_, _ = victim.GetOperationStatus(ctx, op.Ref)
				}
			}()
			defer func() { close(stop); wg.Wait() }()

			wrongTok := client(t, p.URL(), "dapi-wrong-token-0000", "evil/1.0")
			rightTokWrongSecret := client(t, p.URL(), s.Token(), "evil/1.0")
			forged := sources.Ref{StatementID: id, WarehouseID: wh, Secret: randomSecret()}
			stolenHandleWrongTok := op.Ref
			for _, f := range []func() error{
				func() error { return wrongTok.CloseOperation(ctx, forged) },
				func() error { return wrongTok.CloseOperation(ctx, stolenHandleWrongTok) },
				func() error { _, err := wrongTok.GetOperationStatus(ctx, forged); return err },
				func() error { return wrongTok.CancelOperation(ctx, forged) },
				func() error { return rightTokWrongSecret.CloseOperation(ctx, forged) },
				func() error { _, err := rightTokWrongSecret.GetOperationStatus(ctx, forged); return err },
			} {
				if err := f(); err == nil {
					t.Fatal("a hostile call succeeded upstream: the test's premise is broken")
				}
			}
			// Past the close queue's deferral and several abandonment windows.
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) {
				if !simOpen(s, id) {
					t.Fatal("the victim's operation was closed")
				}
				time.Sleep(50 * time.Millisecond)
			}
			st := p.Stats()
			if st.ClosesQueued != 0 || st.ClosedByProxy != 0 || st.AbandonActions != 0 || st.Operations != 1 {
				t.Errorf("stats after hostile calls: %+v", st)
			}
			var doc adminapi.OperationsDoc
			adminGet(t, p, adminapi.PathOperations, &doc)
			if len(doc.Operations) != 1 || doc.Operations[0].Close.Outcome != sources.ProxyOpen || doc.Operations[0].Close.ClientAttempts != 0 {
				t.Errorf("facts after hostile calls: %+v", doc.Operations)
			}
			if st.Refused == 0 || st.Mismatched+st.ErrorAnswers == 0 {
				t.Errorf("refused calls not counted: %+v", st)
			}
		})
	}
}

// Refused calls with made-up handles leave the proxy's table where it
// was: nothing is recorded for a call the server did not accept.
func TestRefusedCallsRecordNothing(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{Heal: false})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]
	const n = 800 // the property, not the probe's 100,000 (CI time on a shared machine)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			bad := client(t, p.URL(), "dapi-wrong-token-0000", "evil/1.0")
			good := client(t, p.URL(), s.Token(), "evil/1.0")
			for i := w; i < n; i += 8 {
				ref := sources.Ref{StatementID: randomStatementID(), WarehouseID: wh, Secret: randomSecret()}
				c := bad
				if i%2 == 1 {
					c = good // accepted credentials, unknown handle: INVALID_HANDLE
				}
				if i%4 < 2 {
					_, _ = c.GetOperationStatus(ctx, ref)
				} else {
					_ = c.CloseOperation(ctx, ref)
				}
			}
		}(w)
	}
	wg.Wait()
	st := p.Stats()
	if st.Operations != 0 || st.Sessions != 0 || st.ClosesQueued != 0 {
		t.Fatalf("after %d refused calls the proxy holds %d operations, %d sessions, %d queued closes", n, st.Operations, st.Sessions, st.ClosesQueued)
	}
	if st.Refused != n/2 || st.ErrorAnswers != n/2 {
		t.Errorf("refused %d, error answers %d: want %d each", st.Refused, st.ErrorAnswers, n/2)
	}
}

// emptyArgs is a CALL of name whose argument struct is empty: 31 bytes
// for GetOperationStatus (the probe that panicked the decoder).
func emptyArgs(name string) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint32(0x80010001))
	_ = binary.Write(&b, binary.BigEndian, uint32(len(name)))
	b.WriteString(name)
	_ = binary.Write(&b, binary.BigEndian, uint32(1))
	b.WriteByte(0)
	return b.Bytes()
}

var followedCalls = []string{"OpenSession", "CloseSession", "ExecuteStatement", "GetOperationStatus",
	"GetResultSetMetadata", "FetchResults", "CancelOperation", "CloseOperation"}

// Messages with empty argument structs are forwarded untouched (the
// server's own answer comes back) and counted; the proxy does not panic.
func TestEmptyArgumentStructsForwardedAndCounted(t *testing.T) {
	if n := len(emptyArgs("GetOperationStatus")); n != 31 {
		t.Fatalf("probe is %d bytes, want 31", n)
	}
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy()})
	path := p.URL() + thrift.DefaultHTTPPath(s.WarehouseIDs()[0])
	for _, name := range followedCalls {
		req, _ := http.NewRequest(http.MethodPost, path, bytes.NewReader(emptyArgs(name)))
		req.Header.Set("Authorization", "Bearer "+s.Token())
		req.Header.Set("Content-Type", thrift.ContentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v (no answer: did something panic?)", name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(name)) {
			t.Errorf("%s: HTTP %d %q: want the server's own answer", name, resp.StatusCode, b)
		}
	}
	st := p.Stats()
	if st.Undecodable < int64(len(followedCalls)-1) || st.Operations != 0 || st.UpstreamFailures != 0 {
		t.Errorf("stats %+v: want every handle-less call counted undecodable, nothing recorded", st)
	}
}

// A body trickled slower than the read deadline is cut at the deadline,
// answered 400 and counted as the client's error, not the upstream's.
func TestTrickledBodyCutAtDeadline(t *testing.T) {
	s := startSim(t, "")
	o := Options{Upstream: s.URL(), Heal: true, Policy: fastPolicy(), Logger: testLogger(t)}
	p, err := Start(context.Background(), o, ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", ReadTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	}()
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n\x80", thrift.DefaultHTTPPath(s.WarehouseIDs()[0]), s.Token())
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(conn)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the trickled request was held %s", took)
	}
	if !bytes.HasPrefix(b, []byte("HTTP/1.1 400")) {
		t.Errorf("answer %q: want 400", b)
	}
	st := p.Stats()
	if st.ClientErrors != 1 || st.UpstreamFailures != 0 {
		t.Errorf("stats %+v: want one client error, no upstream failure", st)
	}
}

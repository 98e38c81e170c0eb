package conformance

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	dbsql "github.com/databricks/databricks-sql-go"
	"github.com/databricks/databricks-sql-go/driverctx"

	"github.com/dbxtop/dbxtop/sources/sim"
)

// openDSN opens databricks-sql-go exactly as a user would: the DSN form,
// with telemetry off (its feature-flag probe targets https://HOST:443).
func openDSN(t testing.TB, s *sim.Server, warehouse string) *sql.DB {
	t.Helper()
	host, port := hostPort(t, s)
	dsn := fmt.Sprintf("http://token:%s@%s/sql/1.0/warehouses/%s?enableTelemetry=false",
		s.Token(), net.JoinHostPort(host, strconv.Itoa(port)), warehouse)
	db, err := sql.Open("databricks", dsn)
	if err != nil {
		t.Fatalf("sql.Open(databricks DSN): %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openConnector opens the driver with its connector options and the guard
// transport (see transport_test.go). retries < 0 disables the driver's
// HTTP retries: that is the naive client of issue 9.
func openConnector(t testing.TB, s *sim.Server, warehouse string, g *guardTransport, extra ...dbsql.ConnOption) *sql.DB {
	t.Helper()
	host, port := hostPort(t, s)
	opts := []dbsql.ConnOption{
		dbsql.WithServerHostname("http://" + host),
		dbsql.WithPort(port),
		dbsql.WithHTTPPath("/sql/1.0/warehouses/" + warehouse),
		dbsql.WithAccessToken(s.Token()),
		dbsql.WithTransport(g),
	}
	c, err := dbsql.NewConnector(append(opts, extra...)...)
	if err != nil {
		t.Fatalf("dbsql.NewConnector: %v", err)
	}
	return sqlOpenDB(t, c, g)
}

// sqlOpenDB opens a connector and, at cleanup, closes the pool and what
// the driver left open on the guard transport.
func sqlOpenDB(t testing.TB, c driver.Connector, g *guardTransport) *sql.DB {
	t.Helper()
	db := sql.OpenDB(c)
	t.Cleanup(func() {
		db.Close()
		if n := g.closeAll(); n > 0 {
			t.Logf("driver left %d response bodies unclosed after db.Close (closed by the guard transport)", n)
		}
	})
	return db
}

func simHostPort(t testing.TB, s *sim.Server) string {
	host, port := hostPort(t, s)
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func querySum(ctx context.Context, db *sql.DB, q string) (n int, sum int64, err error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return n, sum, fmt.Errorf("scan row %d: %w", n, err)
		}
		n++
		sum += v
	}
	return n, sum, rows.Err()
}

// TestSQLGoSelect: SELECT 1 and SELECT id FROM range(1000), on the direct
// results path (what v1.14.0 asks for) and on the polling path (the same
// request without getDirectResults). The request counts prove which path
// ran: a finished statement with direct results needs no status poll.
func TestSQLGoSelect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		strip bool
	}{{"direct-results", false}, {"no-direct-results", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startSim(t, "")
			wh := firstWarehouse(t, s)
			var db *sql.DB
			var g *guardTransport
			if tc.strip {
				g = newGuardTransport(simHostPort(t, s), true)
				db = openConnector(t, s, wh, g)
			} else {
				db = openDSN(t, s, wh)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			base := getStats(t, s)

			var one int64
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatalf("SELECT 1: %v", err)
			}
			if one != 1 {
				t.Fatalf("SELECT 1 = %d", one)
			}
			n, sum, err := querySum(ctx, db, "SELECT id FROM range(1000)")
			if err != nil {
				t.Fatalf("SELECT id FROM range(1000): %v", err)
			}
			if n != 1000 || sum != 499500 {
				t.Fatalf("range(1000): %d rows summing to %d, want 1000 rows summing to 499500", n, sum)
			}
			// Bigger than one driver page? No: the driver asks 100000 rows a
			// page; range(250000) proves paging and startRowOffset.
			n, sum, err = querySum(ctx, db, "SELECT id FROM range(250000)")
			if err != nil {
				t.Fatalf("SELECT id FROM range(250000): %v", err)
			}
			if want := int64(250000) * 249999 / 2; n != 250000 || sum != want {
				t.Fatalf("range(250000): %d rows summing to %d, want 250000 summing to %d", n, sum, want)
			}

			d := getStats(t, s).minus(base)
			t.Logf("requests: %v", d.Requests)
			if d.Requests["ExecuteStatement"] != 3 {
				t.Errorf("ExecuteStatement requests = %d, want 3", d.Requests["ExecuteStatement"])
			}
			if tc.strip {
				if g.stripped.Load() != 3 {
					t.Errorf("stripped %d ExecuteStatement requests, want 3", g.stripped.Load())
				}
				if d.Requests["GetOperationStatus"] < 3 || d.Requests["FetchResults"] < 3 || d.Requests["CloseOperation"] != 3 {
					t.Errorf("polling path: want ≥3 GetOperationStatus, ≥3 FetchResults, 3 CloseOperation; got %v", d.Requests)
				}
			} else if d.Requests["GetOperationStatus"] != 0 {
				t.Errorf("direct results path: %d GetOperationStatus, want 0 (the simulator should answer a finished statement in directResults)", d.Requests["GetOperationStatus"])
			}

			// Every statement the driver ran is closed on the server: the
			// driver closes (or the direct results carried closeOperation).
			tr := getTruth(t, s)
			ext := 0
			for _, o := range tr.Operations {
				if o.ClientKind != "external" {
					continue
				}
				ext++
				if o.Open {
					t.Errorf("statement %s left open (state %s) after a complete read", o.StatementID, o.State)
				}
			}
			if ext != 3 {
				t.Errorf("truth lists %d external operations, want 3", ext)
			}
		})
	}
}

// TestSQLGoCancel: cancelling the context of a long statement makes the
// driver send CancelOperation; the simulator must show it CANCELED.
func TestSQLGoCancel(t *testing.T) {
	t.Parallel()
	s := startSim(t, "")
	db := openDSN(t, s, firstWarehouse(t, s))

	var mu sync.Mutex
	var id string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = driverctx.NewContextWithQueryIdCallback(ctx, func(q string) {
		if q != "" {
			mu.Lock()
			id = q
			mu.Unlock()
		}
	})
	done := make(chan error, 1)
	go func() {
		rows, err := db.QueryContext(ctx, "SELECT sleep(30)")
		if err == nil {
			rows.Close()
		}
		done <- err
	}()
	// Cancel once the server runs it, not after a guessed sleep.
	tr := waitFor(t, s, 20*time.Second, "the sleep statement RUNNING", func(tr truth) bool {
		for _, o := range tr.Operations {
			if o.ClientKind == "external" && o.State == "RUNNING" {
				return true
			}
		}
		return false
	})
	_ = tr
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("QueryContext of a cancelled sleep(30) returned no error")
		}
		if !errors.Is(err, context.Canceled) {
			t.Logf("driver error (not wrapping context.Canceled): %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("QueryContext did not return within 20 s of cancel")
	}
	mu.Lock()
	qid := id
	mu.Unlock()
	if qid == "" {
		t.Fatal("the driver never reported a query id")
	}
	tr = waitFor(t, s, 10*time.Second, "statement "+qid+" CANCELED", func(tr truth) bool {
		o, ok := tr.op(qid)
		return ok && o.State == "CANCELED"
	})
	o, _ := tr.op(qid)
	t.Logf("cancel observed after %s: %+v", time.Since(start).Round(time.Millisecond), o)
	if o.ClientKind != "external" {
		t.Errorf("client_kind = %q, want external", o.ClientKind)
	}
	// The driver cancels but never closes a cancelled query
	// (sentinel → CancelOperation only); HiveServer2 keeps a cancelled
	// operation open until it is closed, and so must the simulator.
	if !o.Open {
		t.Errorf("cancelled statement reported closed; the driver sent no CloseOperation, so it must stay open")
	}
	if st := getStats(t, s); st.Requests["CloseOperation"] != 0 {
		t.Errorf("CloseOperation requests = %d; the driver is not expected to close a cancelled query", st.Requests["CloseOperation"])
	}
	if st := getStats(t, s); st.Requests["CancelOperation"] < 1 {
		t.Errorf("CancelOperation requests = %d, want ≥ 1", st.Requests["CancelOperation"])
	}
}

// TestSQLGoResetsOnStatusPolls: with 30 % of GetOperationStatus answered by
// a TCP reset, the driver's own retries (4, at 1/2/4/8 s) carry every
// query through. Statements sleep so that they are polled. They run one
// after the other: the simulator's fault stream is seeded per call, so a
// single client consumes it in a reproducible order and the test is
// deterministic rather than a coin toss on goroutine interleaving (one
// logical poll fails only after 5 resets in a row, p = 0.3^5 = 0.24 %).
func TestSQLGoResetsOnStatusPolls(t *testing.T) {
	t.Parallel()
	s := startSim(t, "reset=0.3@GetOperationStatus")
	db := openDSN(t, s, firstWarehouse(t, s))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	const n = 4
	for i := 0; i < n; i++ {
		var v any
		if err := db.QueryRowContext(ctx, "SELECT sleep(2)").Scan(&v); err != nil {
			t.Errorf("statement %d: %v", i, err)
		}
	}
	st := getStats(t, s)
	t.Logf("requests %v faults %v", st.Requests, st.Faults)
	if st.Faults["reset"] == 0 {
		t.Fatalf("no reset was injected (faults %v): the test proved nothing", st.Faults)
	}
	if polls := st.Requests["GetOperationStatus"]; polls < n*2 {
		t.Errorf("GetOperationStatus requests = %d, want ≥ %d", polls, n*2)
	}
}

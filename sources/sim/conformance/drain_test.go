package conformance

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/proxy"
)

// drainSleep is how long each driver's statement runs: the issue's
// 40-second statements, shortened for CI (the drain's logic is the same).
const drainSleep = 5

// SIGTERM's drain keeps queries alive through the three drivers,
// unchanged: a statement running when the drain begins is polled,
// fetched and closed through the draining proxy, the drain ends once
// nothing is open (well before --drain-timeout), and nothing is left
// open on the server.
func TestProxyDrainKeepsDriversQueriesAlive(t *testing.T) {
	modules := nodeModules(t)
	for _, driver := range []string{"databricks-sql-go", "databricks_sql.js", "hive_driver.js"} {
		t.Run(driver, func(t *testing.T) {
			s := startSim(t, "")
			so := proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"}
			var ca string
			if driver == "databricks_sql.js" { // it speaks TLS with customCaCert
				so.TLSCert, so.TLSKey = selfSigned(t)
				ca = so.TLSCert
			}
			log := &proxyLog{}
			p, err := proxy.Start(context.Background(), proxy.Options{Upstream: s.URL(), Heal: true, UserAgent: "dbxtop-proxy/conformance",
				Logger: log.logger()}, so)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = p.Close(ctx)
			})
			query := "SELECT sleep(" + strconv.Itoa(drainSleep) + ")"
			done := make(chan nodeResult, 1)
			go func() {
				if driver == "databricks-sql-go" {
					done <- sqlGoOnce(t, openViaProxy(t, s, p), query)
					return
				}
				host, port := urlHostPort(t, p.URL())
				done <- runNode(t, modules, driver, "DBX_HOST="+host, "DBX_PORT="+strconv.Itoa(port),
					"DBX_PATH=/sql/1.0/warehouses/"+firstWarehouse(t, s), "DBX_TOKEN="+s.Token(), "DBX_CA="+ca,
					"DBX_N=1", "DBX_SQL="+query)
			}()
			waitFor(t, s, 60*time.Second, "the statement running on the server", func(tr truth) bool {
				for _, o := range tr.Operations {
					if o.Open {
						return true
					}
				}
				return false
			})
			t0 := time.Now()
			dctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := p.Drain(dctx); err != nil {
				t.Errorf("drain: %v", err)
			}
			if took := time.Since(t0); took > 45*time.Second {
				t.Errorf("the drain took %s: it waited for more than the statement", took)
			}
			var r nodeResult
			select {
			case r = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the driver hangs after the drain")
			}
			t.Logf("DRAIN %s: %+v; proxy %+v", driver, r, p.Stats())
			if r.OK != 1 || r.Failed != 0 {
				t.Errorf("%s through a draining proxy: %d ok, %d failed: %v", driver, r.OK, r.Failed, r.Errors)
			}
			for _, e := range r.Errors {
				if !strings.HasPrefix(e, "close:") { // the session's close may come after the proxy stopped
					t.Errorf("error: %s", e)
				}
			}
			if n := p.Stats().DrainLeftOpen; n != 0 {
				t.Errorf("the drain left %d operations open", n)
			}
			waitFor(t, s, 30*time.Second, "no statement open on the server", func(tr truth) bool {
				for _, o := range tr.Operations {
					if o.Open {
						return false
					}
				}
				return true
			})
			noSecret(t, s, "proxy log", log.String())
		})
	}
}

// sqlGoOnce runs query once with databricks-sql-go and reads its row, as
// the Node scripts do.
func sqlGoOnce(t *testing.T, db *sql.DB, query string) nodeResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var v any
	if err := db.QueryRowContext(ctx, query).Scan(&v); err != nil {
		return nodeResult{Failed: 1, Errors: []string{err.Error()}}
	}
	return nodeResult{OK: 1}
}

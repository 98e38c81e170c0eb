package conformance

import (
	"context"
	"database/sql"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/proxy"
)

// The proxy's limits as drivers survive them: with --max-conns 2 and
// --max-conns-per-client 1, three concurrent jobs of each driver (one
// credential, so one client) run every statement — requests over a
// limit wait for a slot instead of getting a 503 that @databricks/sql
// does not retry and hive-driver hangs on. No failed query, no hang.
func TestProxyLimitsDriversSurvive(t *testing.T) {
	modules := nodeModules(t)
	// Statements that run a while, so the jobs overlap whatever the
	// drivers' start-up time.
	const jobs, n, query = 3, 4, "SELECT sleep(2)"
	for _, driver := range []string{"databricks-sql-go", "databricks_sql.js", "hive_driver.js"} {
		t.Run(driver, func(t *testing.T) {
			s := startSim(t, "")
			so := proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"}
			var ca string
			if driver == "databricks_sql.js" {
				so.TLSCert, so.TLSKey = selfSigned(t)
				ca = so.TLSCert
			}
			p, err := proxy.Start(context.Background(), proxy.Options{Upstream: s.URL(), Heal: true, UserAgent: "dbxtop-proxy/conformance",
				MaxConns: 2, MaxConnsPerClient: 1}, so)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = p.Close(ctx)
			})
			results := make([]nodeResult, jobs)
			var wg sync.WaitGroup
			for j := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if driver == "databricks-sql-go" {
						results[j] = sqlGoN(openViaProxy(t, s, p), n, query)
						return
					}
					host, port := urlHostPort(t, p.URL())
					results[j] = runNode(t, modules, driver, "DBX_HOST="+host, "DBX_PORT="+strconv.Itoa(port),
						"DBX_PATH=/sql/1.0/warehouses/"+firstWarehouse(t, s), "DBX_TOKEN="+s.Token(), "DBX_CA="+ca,
						"DBX_N="+strconv.Itoa(n), "DBX_SQL="+query)
				}()
			}
			wg.Wait()
			st := p.Stats()
			t.Logf("LIMITS %s: %+v; waited %d, limited %d", driver, results, st.Waited, st.Limited)
			for j, r := range results {
				if r.OK != n || r.Failed != 0 || len(r.Errors) != 0 {
					t.Errorf("job %d: %d ok, %d failed of %d: %v", j, r.OK, r.Failed, n, r.Errors)
				}
			}
			if st.Waited == 0 {
				t.Error("no request waited for a slot: the jobs did not overlap, the test proves nothing")
			}
			if st.Limited != 0 {
				t.Errorf("%d requests refused with 503", st.Limited)
			}
		})
	}
}

// sqlGoN runs n statements of query with databricks-sql-go.
func sqlGoN(db *sql.DB, n int, query string) nodeResult {
	var r nodeResult
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var v any
		if err := db.QueryRowContext(ctx, query).Scan(&v); err != nil {
			r.Failed++
			r.Errors = append(r.Errors, err.Error())
		} else {
			r.OK++
		}
		cancel()
	}
	return r
}

package proxy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources/thrift"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// vmRSS is the process's resident set (Linux /proc/self/status), in
// bytes; 0 where unknown.
func vmRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// sqlJob drives p as a databricks-sql-go job would: sessions, each
// running statements that start, report FINISHED and close cleanly.
type sqlJob struct {
	p        *Proxy
	sessions []request
	n        int
	guid     [16]byte // the next statement's: random, then counted
	secret   []byte
}

func newSQLJob(p *Proxy, sessions int) *sqlJob {
	j := &sqlJob{p: p, secret: randomSecret()}
	copy(j.guid[:], randomSecret())
	ok := &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}
	for i := 0; i < sessions; i++ {
		rq := p.st.id.withAuth(request{call: "OpenSession", path: "/sql/1.0/warehouses/0123456789abcdef", ua: "databricks-sql-go/1.14.0"},
			"Bearer dapi0123456789abcdef0123456789abcdef")
		id, secret := randomStatementID(), randomSecret()
		p.observeReply(rq, tracked{}, reply{ok: true, status: ok, sessionID: id, sessSecret: secret}, true)
		rq.sessionID, rq.sessSecret = id, secret
		j.sessions = append(j.sessions, rq)
	}
	return j
}

// run starts and closes n statements, round-robin over the sessions.
func (j *sqlJob) run(n int) {
	ok := &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}
	finished := model.StateFinished
	for i := 0; i < n; i++ {
		rq := j.sessions[j.n%len(j.sessions)]
		j.n++
		rq.call = "ExecuteStatement"
		binary.BigEndian.PutUint64(j.guid[8:], binary.BigEndian.Uint64(j.guid[8:])+1)
		id, secret := thrift.StatementID(j.guid[:]), j.secret
		j.p.observeReply(rq, tracked{}, reply{ok: true, status: ok, opID: id, secret: secret, state: &finished}, true)
		rq.call, rq.opID, rq.secret = "CloseOperation", id, secret
		j.p.observeReply(rq, tracked{}, reply{ok: true, status: ok}, true)
	}
}

// The memory bound at the cap (docs/proxy.md "Memory"): with the table
// full of cleanly closed operations (--max-operations 100,000, the
// default) the live heap per held operation is what the compact form
// costs, and past the cap — every new operation evicts one — neither
// the heap nor the resident set grows. The figures are logged for the
// docs; the race detector's shadow memory makes RSS meaningless, so RSS
// is asserted only without it.
func TestMemoryAtTheCap(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 100,000 operations")
	}
	const capOps = DefaultMaxOperations
	p, err := New(Options{Upstream: "http://127.0.0.1:1", MaxOperations: capOps, RetainFinished: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	heap0, rss0 := liveHeap(), vmRSS()
	j := newSQLJob(p, 64)
	// Filled, then once more round: the index map settles (deleted
	// entries leave room it reuses).
	j.run(2 * capOps)
	rss1, heap1 := vmRSS(), liveHeap()
	j.run(capOps)
	rss2, heap2 := vmRSS(), liveHeap()
	st := p.Stats()
	per := float64(heap1-heap0) / capOps
	mb := func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
	t.Logf("at the cap of %d cleanly closed operations: live heap +%s (%.0f bytes per operation), RSS %s (+%s from %s); after %d more (each evicting one): heap +%s, RSS %s",
		capOps, mb(heap1-heap0), per, mb(rss1), mb(rss1-rss0), mb(rss0), capOps, mb(heap2-heap0), mb(rss2))
	if st.Operations != capOps || st.Evicted != 2*capOps {
		t.Fatalf("held %d, evicted %d; want the cap %d and %d evicted", st.Operations, st.Evicted, capOps, 2*capOps)
	}
	if per > 400 {
		t.Errorf("%.0f bytes of live heap per cleanly closed operation at the cap, want at most 400 (the compact form)", per)
	}
	if heap2 > heap1+heap1/10+(1<<20) {
		t.Errorf("live heap grew at the cap: %s then %s", mb(heap1-heap0), mb(heap2-heap0))
	}
	if !raceEnabled && rss1 > 0 && rss2 > rss1+rss1/5+(8<<20) {
		t.Errorf("RSS grew at the cap: %s then %s", mb(rss1), mb(rss2))
	}
}

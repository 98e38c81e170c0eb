package sim

import (
	"math"
	"sort"
	"sync"
	"time"
)

// RowLimitTag is the endpoint custom tag through which the simulator tells
// dbxtop an endpoint's row limit (no real API exposes one). The incident's
// endpoints carry none, as on the real workspace.
const RowLimitTag = "dbxtop_row_limit"

// The server's exact answer to an upsert on a full endpoint, as the
// incident recorded it (docs/capacity.md).
const ExhaustedMessage = "Endpoint capacity has reached capacity limit. You can delete some data or the index to free up space. Or contact support to increase your quota."

// The incident's figures (docs/simulator.md, "vector-incident").
const (
	IncidentEndpoint = "vs-endpoint-1"
	IncidentSpare    = "vs-endpoint-2"
	// IncidentRowLimit is where the real endpoint refused writes: just
	// under the published ~2 M for Direct Access on STANDARD.
	IncidentRowLimit = 1_984_112
	// IncidentStartRows is the seven indexes' total when the scenario
	// starts (78 % of the published 2 M: no flag yet).
	IncidentStartRows = 1_560_002
	// IncidentBatch is the writer's upsert size, as in the incident.
	IncidentBatch = 5
	// IncidentFillTime is the timeline the writer needs to fill the
	// endpoint: (limit - start) / batch batches, evenly spread.
	IncidentFillTime = 2 * time.Minute
	// IncidentDimension is the embedding dimension of its indexes.
	IncidentDimension = 1024
)

type vindex struct {
	name, endpoint string
	itype          string // DIRECT_ACCESS | DELTA_SYNC
	dim            int
	rows           int64
	created        time.Time
}

type vendpoint struct {
	name, id     string
	etype        string
	limit        int64 // the server's real limit
	tagged       bool  // carries the dbxtop_row_limit tag
	throughput   float64
	exhausted    bool // answered RESOURCE_EXHAUSTED since it filled
	firstRefusal time.Time
	created      time.Time
	indexes      []*vindex
}

func (e *vendpoint) rows() int64 {
	var n int64
	for _, ix := range e.indexes {
		n += ix.rows
	}
	return n
}

// writer is the incident's client: batches of IncidentBatch rows upserted
// round-robin into an endpoint's indexes at a steady timeline rate, until
// the endpoint refuses one. It is applied lazily, from the clock, whenever
// the vector side is read or written, so it is exact under a ManualClock
// and costs nothing between requests (80,000 HTTP requests in two minutes
// would measure the machine, not dbxtop: docs/simulator.md).
type writer struct {
	endpoint    string
	start       time.Time
	speed       float64
	batchesPerS float64
	applied     int64 // batches accepted
	refused     int64 // batches refused with RESOURCE_EXHAUSTED
	next        int   // index that gets the next batch
	stoppedAt   time.Time
	// handover, when > 0, is the batch from which the writer's upserts go
	// over HTTP through the embedded proxy (incidentWriter); the lazy
	// in-process fill stops there.
	handover int64
}

// vectors is the Vector Search side: endpoints, their indexes and rows.
type vectors struct {
	mu        sync.Mutex
	clock     Clock
	endpoints []*vendpoint
	byIndex   map[string]*vindex
	writer    *writer
}

type indexSpec struct {
	name  string
	itype string
	dim   int
	rows  int64
}

func newVectors(clock Clock, scenario string, speed float64) *vectors {
	now := clock.Now()
	v := &vectors{clock: clock, byIndex: map[string]*vindex{}}
	add := func(name, etype string, limit int64, tagged bool, thr float64, idx []indexSpec) {
		ep := &vendpoint{name: name, id: uuidString(newGUID()), etype: etype, limit: limit, tagged: tagged,
			throughput: thr, created: now.Add(-30 * 24 * time.Hour)}
		sort.Slice(idx, func(i, j int) bool { return idx[i].name < idx[j].name })
		for _, s := range idx {
			ix := &vindex{name: s.name, endpoint: name, itype: s.itype, dim: s.dim, rows: s.rows, created: ep.created}
			ep.indexes = append(ep.indexes, ix)
			v.byIndex[s.name] = ix
		}
		v.endpoints = append(v.endpoints, ep)
	}
	if scenario != ScenarioVectorIncident {
		// vs-prod is the one the demo's ingest client fills.
		add("vs-prod", "STANDARD", 200_000, true, 23, []indexSpec{
			{"main.support.tickets_idx", "DIRECT_ACCESS", 768, 48_000},
			{"main.support.kb_articles_idx", "DIRECT_ACCESS", 768, 12_000},
		})
		add("vs-analytics", "STANDARD", 2_000_000, true, 8, []indexSpec{
			{"main.analytics.products_idx", "DELTA_SYNC", 768, 1_250_000},
		})
		add("vs-staging", "STANDARD", 50_000, true, 2, []indexSpec{
			{"dev.sandbox.docs_idx", "DIRECT_ACCESS", 384, 4_200},
		})
	}
	if scenario == ScenarioVectorIncident || scenario == ScenarioDemo {
		// Seven regulatory-document indexes of a few hundred thousand
		// chunks each, summing to IncidentStartRows.
		sizes := []int64{268_420, 251_377, 239_904, 226_113, 208_760, 193_518, 171_910}
		var specs []indexSpec
		names := []string{"reg.docs.eu_ai_act_idx", "reg.docs.gdpr_idx", "reg.docs.dora_idx", "reg.docs.mifid2_idx",
			"reg.docs.nis2_idx", "reg.docs.psd2_idx", "reg.docs.amld6_idx"}
		for i, n := range sizes {
			specs = append(specs, indexSpec{names[i], "DIRECT_ACCESS", IncidentDimension, n})
		}
		add(IncidentEndpoint, "STANDARD", IncidentRowLimit, false, 41, specs)
		add(IncidentSpare, "STANDARD", IncidentRowLimit, false, 12, []indexSpec{
			{"reg.archive.circulars_idx", "DIRECT_ACCESS", IncidentDimension, 182_340},
			{"reg.archive.guidelines_idx", "DIRECT_ACCESS", IncidentDimension, 96_115},
		})
		batches := float64(IncidentRowLimit-IncidentStartRows) / IncidentBatch
		v.writer = &writer{endpoint: IncidentEndpoint, start: now, speed: speed,
			batchesPerS: batches / IncidentFillTime.Seconds()}
	}
	return v
}

// due is the number of batches the writer's timeline has reached by now.
func (w *writer) due(now time.Time) int64 {
	return int64(math.Floor(now.Sub(w.start).Seconds() * w.speed * w.batchesPerS))
}

// handOver makes the writer's last d of timeline before the endpoint is
// full go over HTTP (Server.incidentWriter): the bulk fill stays
// in-process, the writes that meet the refusal are real requests.
func (v *vectors) handOver(d time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	w := v.writer
	if w == nil {
		return
	}
	e := v.find(w.endpoint)
	total := (e.limit - e.rows()) / IncidentBatch
	w.handover = max(1, total-int64(d.Seconds()*w.batchesPerS))
}

// writerNext is what the HTTP writer sends now: the index that gets it
// and how many batches are due; ok false once the writer has stopped.
func (v *vectors) writerNext() (index string, batches int64, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.catchUp()
	w := v.writer
	if w == nil || !w.stoppedAt.IsZero() {
		return "", 0, false
	}
	e := v.find(w.endpoint)
	n := w.due(v.clock.Now()) - w.applied
	if n <= 0 {
		return "", 0, true
	}
	ix := e.indexes[w.next]
	w.next = (w.next + 1) % len(e.indexes)
	return ix.name, n, true
}

// writerDone records the answer to the HTTP writer's upsert: the rows
// the server accepted, or its refusal (the writer stops, as the
// incident's client gave up).
func (v *vectors) writerDone(accepted int64, refused bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	w := v.writer
	if w == nil {
		return
	}
	w.applied += accepted / IncidentBatch
	if refused {
		w.refused++
		w.stoppedAt = v.clock.Now()
	}
}

// IngestEndpoint is the endpoint the demo's ingest client fills.
const IngestEndpoint = "vs-prod"

// catchUp applies the incident writer's batches due by now. Caller holds
// v.mu.
func (v *vectors) catchUp() {
	w := v.writer
	if w == nil || !w.stoppedAt.IsZero() {
		return
	}
	now := v.clock.Now()
	due := w.due(now)
	if w.handover > 0 {
		due = min(due, w.handover)
	}
	e := v.find(w.endpoint)
	for n := due - w.applied; n > 0; {
		room := (e.limit - e.rows()) / IncidentBatch
		if room <= 0 {
			// The next batch is refused: the writer sees the 429 and stops
			// (its SDK would retry it for five minutes; dbxtop's probe sees
			// the same answer).
			w.refused++
			e.exhausted = true
			if e.firstRefusal.IsZero() {
				// When the refused batch was due on the timeline.
				e.firstRefusal = w.start.Add(time.Duration(float64(w.applied+1) / w.batchesPerS / w.speed * float64(time.Second)))
			}
			w.stoppedAt = now
			return
		}
		k := min(n, room)
		// Round-robin over the indexes, k batches at once.
		per, extra := k/int64(len(e.indexes)), k%int64(len(e.indexes))
		for i := range e.indexes {
			add := per
			if int64((i-w.next+len(e.indexes))%len(e.indexes)) < extra {
				add++
			}
			e.indexes[i].rows += add * IncidentBatch
		}
		w.next = (w.next + int(extra)) % len(e.indexes)
		w.applied += k
		n -= k
	}
}

type endpointView struct {
	Name, ID     string
	Type         string
	Limit        int64
	Tagged       bool
	Throughput   float64
	Rows         int64
	Exhausted    bool
	FirstRefusal time.Time
	Created      time.Time
	Indexes      []indexView
}

type indexView struct {
	Name, Endpoint string
	Type           string
	Dimension      int
	Rows           int64
	Created        time.Time
}

func (v *vectors) list() []endpointView {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.catchUp()
	out := make([]endpointView, 0, len(v.endpoints))
	for _, e := range v.endpoints {
		out = append(out, viewEndpoint(e))
	}
	return out
}

func viewIndex(ix *vindex) indexView {
	return indexView{Name: ix.name, Endpoint: ix.endpoint, Type: ix.itype, Dimension: ix.dim, Rows: ix.rows, Created: ix.created}
}

func viewEndpoint(e *vendpoint) endpointView {
	ev := endpointView{Name: e.name, ID: e.id, Type: e.etype, Limit: e.limit, Tagged: e.tagged, Throughput: e.throughput,
		Rows: e.rows(), Exhausted: e.exhausted, FirstRefusal: e.firstRefusal, Created: e.created}
	for _, ix := range e.indexes {
		ev.Indexes = append(ev.Indexes, viewIndex(ix))
	}
	return ev
}

func (v *vectors) endpoint(name string) (endpointView, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.catchUp()
	if e := v.find(name); e != nil {
		return viewEndpoint(e), true
	}
	return endpointView{}, false
}

func (v *vectors) index(name string) (indexView, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.catchUp()
	ix, ok := v.byIndex[name]
	if !ok {
		return indexView{}, false
	}
	return viewIndex(ix), true
}

func (v *vectors) find(name string) *vendpoint {
	for _, e := range v.endpoints {
		if e.name == name {
			return e
		}
	}
	return nil
}

// DeltaSyncWriteMessage is the simulator's own answer (400
// INVALID_PARAMETER_VALUE) to upsert-data or delete-data on a Delta Sync
// index: the SDK documents both calls as Direct Vector Access only; how a
// real server words its refusal is not known (docs/simulator.md).
const DeltaSyncWriteMessage = "sim: index %s is a Delta Sync index; upsert-data and delete-data serve Direct Vector Access indexes only (the simulator's own text)"

// upsertResult is what one upsert did.
type upsertResult struct {
	found    bool
	itype    string // the index's type
	sync     bool   // refused: a Delta Sync index
	full     bool   // refused: the endpoint is at its limit
	accepted int64
	endpoint string
	limit    int64
}

// upsert adds n rows to an index. A full endpoint refuses every upsert,
// even an empty one (that is what --capacity-probe relies on); forceFull
// is the exhausted=ENDPOINT fault.
func (v *vectors) upsert(index string, n int64, forceFull func(endpoint string) bool) upsertResult {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.catchUp()
	ix, ok := v.byIndex[index]
	if !ok {
		return upsertResult{}
	}
	e := v.find(ix.endpoint)
	r := upsertResult{found: true, itype: ix.itype, endpoint: e.name, limit: e.limit}
	if ix.itype == "DELTA_SYNC" {
		r.sync = true
		return r
	}
	if forceFull(e.name) || e.rows() >= e.limit {
		e.exhausted = true
		if e.firstRefusal.IsZero() {
			e.firstRefusal = v.clock.Now()
		}
		r.full = true
		return r
	}
	room := e.limit - e.rows()
	if n > room {
		n = room
	}
	ix.rows += n
	r.accepted = n
	return r
}

// remove deletes up to n rows from a Direct Access index (the simulator
// keeps no keys: every key is taken to exist while rows remain).
func (v *vectors) remove(index string, n int64) upsertResult {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.catchUp()
	ix, ok := v.byIndex[index]
	if !ok {
		return upsertResult{}
	}
	r := upsertResult{found: true, itype: ix.itype, endpoint: ix.endpoint}
	if ix.itype == "DELTA_SYNC" {
		r.sync = true
		return r
	}
	n = min(n, ix.rows)
	ix.rows -= n
	r.accepted = n
	return r
}

// limits returns each endpoint's row limit.
func (v *vectors) limits() map[string]int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := make(map[string]int64, len(v.endpoints))
	for _, e := range v.endpoints {
		m[e.name] = e.limit
	}
	return m
}

// WriterStats is the incident writer's progress (/sim/v1/stats).
type WriterStats struct {
	Endpoint        string `json:"endpoint"`
	BatchRows       int    `json:"batch_rows"`
	BatchesAccepted int64  `json:"batches_accepted"`
	BatchesRefused  int64  `json:"batches_refused"`
}

func (v *vectors) writerStats() *WriterStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.catchUp()
	if v.writer == nil {
		return nil
	}
	return &WriterStats{Endpoint: v.writer.endpoint, BatchRows: IncidentBatch,
		BatchesAccepted: v.writer.applied, BatchesRefused: v.writer.refused}
}

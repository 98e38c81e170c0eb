package sim

import (
	"sort"
	"sync"
	"time"
)

// RowLimitTag is the endpoint custom tag through which the simulator tells
// dbxtop an endpoint's row limit (no real API exposes one).
const RowLimitTag = "dbxtop_row_limit"

type vindex struct {
	name, endpoint string
	rows           int64
	created        time.Time
}

type vendpoint struct {
	name, id  string
	limit     int64
	exhausted bool // answered RESOURCE_EXHAUSTED since it filled
	created   time.Time
	indexes   []*vindex
}

func (e *vendpoint) rows() int64 {
	var n int64
	for _, ix := range e.indexes {
		n += ix.rows
	}
	return n
}

// vectors is the Vector Search side: endpoints, their indexes and rows.
type vectors struct {
	mu        sync.Mutex
	endpoints []*vendpoint
	byIndex   map[string]*vindex
}

func newVectors(now time.Time) *vectors {
	v := &vectors{byIndex: map[string]*vindex{}}
	add := func(name string, limit int64, idx map[string]int64) {
		ep := &vendpoint{name: name, id: uuidString(newGUID()), limit: limit, created: now.Add(-30 * 24 * time.Hour)}
		names := make([]string, 0, len(idx))
		for n := range idx {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ix := &vindex{name: n, endpoint: name, rows: idx[n], created: ep.created}
			ep.indexes = append(ep.indexes, ix)
			v.byIndex[n] = ix
		}
		v.endpoints = append(v.endpoints, ep)
	}
	// vs-prod is the one the demo's ingest client fills.
	add("vs-prod", 200_000, map[string]int64{
		"main.support.tickets_idx":     48_000,
		"main.support.kb_articles_idx": 12_000,
	})
	add("vs-analytics", 2_000_000, map[string]int64{
		"main.analytics.products_idx": 1_250_000,
	})
	add("vs-staging", 50_000, map[string]int64{
		"dev.sandbox.docs_idx": 4_200,
	})
	return v
}

// IngestEndpoint is the endpoint the demo's ingest client fills.
const IngestEndpoint = "vs-prod"

type endpointView struct {
	Name, ID  string
	Limit     int64
	Rows      int64
	Exhausted bool
	Created   time.Time
	Indexes   []indexView
}

type indexView struct {
	Name, Endpoint string
	Rows           int64
	Created        time.Time
}

func (v *vectors) list() []endpointView {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]endpointView, 0, len(v.endpoints))
	for _, e := range v.endpoints {
		out = append(out, viewEndpoint(e))
	}
	return out
}

func viewEndpoint(e *vendpoint) endpointView {
	ev := endpointView{Name: e.name, ID: e.id, Limit: e.limit, Rows: e.rows(), Exhausted: e.exhausted, Created: e.created}
	for _, ix := range e.indexes {
		ev.Indexes = append(ev.Indexes, indexView{Name: ix.name, Endpoint: ix.endpoint, Rows: ix.rows, Created: ix.created})
	}
	return ev
}

func (v *vectors) endpoint(name string) (endpointView, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range v.endpoints {
		if e.name == name {
			return viewEndpoint(e), true
		}
	}
	return endpointView{}, false
}

func (v *vectors) index(name string) (indexView, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ix, ok := v.byIndex[name]
	if !ok {
		return indexView{}, false
	}
	return indexView{Name: ix.name, Endpoint: ix.endpoint, Rows: ix.rows, Created: ix.created}, true
}

func (v *vectors) find(name string) *vendpoint {
	for _, e := range v.endpoints {
		if e.name == name {
			return e
		}
	}
	return nil
}

// upsertResult is what one upsert did.
type upsertResult struct {
	found    bool
	full     bool // refused: the endpoint is at its limit
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
	ix, ok := v.byIndex[index]
	if !ok {
		return upsertResult{}
	}
	e := v.find(ix.endpoint)
	r := upsertResult{found: true, endpoint: e.name, limit: e.limit}
	if forceFull(e.name) || e.rows() >= e.limit {
		e.exhausted = true
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

package adminapi

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// CallProxyVector names the admin API read of the Vector Search account.
const CallProxyVector = "ProxyVector"

// Vector reads the proxy's account of Vector Search index writes.
func (c *AdminClient) Vector(ctx context.Context) (sources.ProxyVectorDoc, error) {
	var d sources.ProxyVectorDoc
	err := c.do(ctx, CallProxyVector, http.MethodGet, PathVector, &d)
	cleanStrings(&d)
	return d, err
}

// MergedCapacity adds what a proxy saw of its clients' index writes to
// dbxtop's capacity listing (--proxy): an endpoint whose index got a
// capacity refusal, with no successful upsert to any of its indexes
// since, is reported exhausted with the server's words and request id
// (ExhaustedVia proxy). The engine learns the limit from it, in the one
// store it owns; nothing is written to the workspace. It implements
// sources.CapacitySource.
type MergedCapacity struct {
	admin *AdminClient
	inner sources.CapacitySource

	mu   sync.Mutex
	last *sources.ProxyVectorDoc // the last account read, kept when a read fails
}

// MergeCapacity wraps dbxtop's capacity source with the proxy's account.
func MergeCapacity(admin *AdminClient, inner sources.CapacitySource) *MergedCapacity {
	return &MergedCapacity{admin: admin, inner: inner}
}

// Endpoints lists the endpoints (dbxtop's own listing decides which exist
// and their row counts) and marks the ones the proxy saw refuse a write.
// When the admin API fails, the last account read is used: a refusal
// that happened stays true.
func (m *MergedCapacity) Endpoints(ctx context.Context, retry sources.Retry) ([]model.Endpoint, error) {
	eps, err := m.inner.Endpoints(ctx, retry)
	if err != nil {
		return eps, err
	}
	if retry == nil {
		retry = sources.Once
	}
	var doc sources.ProxyVectorDoc
	ferr := retry(ctx, CallProxyVector, func(ctx context.Context) error {
		var err error
		doc, err = m.admin.Vector(ctx)
		return err
	})
	m.mu.Lock()
	if ferr == nil {
		m.last = &doc
	}
	last := m.last
	m.mu.Unlock()
	if last == nil {
		return eps, nil
	}
	for i := range eps {
		applyRefusals(&eps[i], last)
	}
	return eps, nil
}

// applyRefusals sums the proxy's account of ep's indexes into
// ep.Proxied, and marks ep exhausted when the latest capacity refusal on
// one of its indexes came after the latest successful upsert to any of
// them (a later accepted write means the endpoint took rows again).
func applyRefusals(ep *model.Endpoint, d *sources.ProxyVectorDoc) {
	mine := make(map[string]bool, len(ep.Indexes))
	for _, ix := range ep.Indexes {
		mine[ix.Name] = true
	}
	var refusal *sources.ProxyRefusal
	var lastOK time.Time
	pw := &model.ProxiedWrites{}
	ep.Proxied = pw
	for i := range d.Indexes {
		w := &d.Indexes[i]
		if !mine[w.Index] {
			continue
		}
		pw.CapacityRefusals += w.Refusals
		pw.WrittenPerMin += w.WrittenPerMinute
		pw.DeletedPerMin += w.DeletedPerMinute
		if w.LastWriteAt.After(pw.LastWriteAt) {
			pw.LastWriteAt = w.LastWriteAt
		}
		if w.LastUpsertAt.After(lastOK) {
			lastOK = w.LastUpsertAt
		}
		if r := w.LastRefusal; r != nil && (refusal == nil || r.At.After(refusal.At)) {
			refusal = r
		}
	}
	if refusal == nil || !refusal.At.After(lastOK) {
		return
	}
	ep.Exhausted, ep.ExhaustedVia = true, model.LearnedViaProxy
	ep.LastError = &model.ErrorInfo{
		Kind:       model.KindPermanent,
		Call:       "UpsertDataVectorIndex (" + Clean(refusal.Index) + ", a client's call seen by dbxtop proxy)",
		ErrorCode:  Clean(refusal.ErrorCode),
		HTTPStatus: refusal.Status,
		Message:    Clean(refusal.Message),
		RequestID:  Clean(refusal.RequestID),
		Attempts:   1,
	}
}

// Probe is dbxtop's own probe (opt-in), unchanged by the proxy.
func (m *MergedCapacity) Probe(ctx context.Context, endpoint string) error {
	return m.inner.Probe(ctx, endpoint)
}

// CloseIdleConnections drops pooled connections to the admin API.
func (m *MergedCapacity) CloseIdleConnections() { m.admin.CloseIdleConnections() }

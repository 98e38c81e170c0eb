package proxy

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbxtop/dbxtop/sources"
)

// The REST leg's bounds (docs/proxy-vector.md).
const (
	// maxVectorAnswer: how much of an index data answer is read to count
	// it. Answers are a status and a count (and failed keys); a larger one
	// is forwarded whole but counted as undecoded.
	maxVectorAnswer = 64 << 10
	// maxVectorIndexes bounds the distinct index names kept.
	maxVectorIndexes = 10_000
	// maxRefusals bounds the refusals kept for the admin API.
	maxRefusals = 100
	// maxErrorCodes bounds the distinct error codes kept per index.
	maxErrorCodes = 16
)

// Headers of a rewritten capacity refusal (--fail-fast-exhausted).
const (
	// HeaderRewritten says the proxy changed the answer and from what:
	// "429 RESOURCE_EXHAUSTED -> 400 QUOTA_EXCEEDED (endpoint capacity refusal; dbxtop proxy --fail-fast-exhausted)".
	HeaderRewritten = "X-Dbxtop-Proxy-Rewritten"
	// FailFastStatus and FailFastCode are what a capacity refusal becomes:
	// databricks-sdk-go maps an error by error_code before its status and
	// retries RESOURCE_EXHAUSTED at any status, so both change; 400
	// QUOTA_EXCEEDED is not in its retry rules (docs/proxy-vector.md).
	FailFastStatus = http.StatusBadRequest
	FailFastCode   = "QUOTA_EXCEEDED"
)

// vectorDataPath reads an index data call from a request: the index name
// and "upsert" or "delete"; ok false for anything else.
func vectorDataPath(method, path string) (index, op string, ok bool) {
	const pre = "/api/2.0/vector-search/indexes/"
	rest, found := strings.CutPrefix(path, pre)
	if !found {
		return "", "", false
	}
	name, verb, found := strings.Cut(rest, "/")
	if !found || name == "" {
		return "", "", false
	}
	switch {
	case verb == "upsert-data" && method == http.MethodPost:
		op = "upsert"
	case verb == "delete-data" && (method == http.MethodDelete || method == http.MethodPost):
		op = "delete"
	default:
		return "", "", false
	}
	if u, err := url.PathUnescape(name); err == nil {
		name = u
	}
	return clean(name), op, true
}

// IsCapacityRefusal tells an endpoint's capacity refusal from everything
// else: an upsert answered 429 RESOURCE_EXHAUSTED whose message is about
// the endpoint's capacity. databricks-sdk-go names RESOURCE_EXHAUSTED
// "per-user rate limiting" too, and a workspace's API quota answers with
// the same status and code; only the message tells them apart
// (docs/proxy-vector.md lists the texts).
func IsCapacityRefusal(op string, status int, code, message string) bool {
	if op != "upsert" || status != http.StatusTooManyRequests || code != "RESOURCE_EXHAUSTED" {
		return false
	}
	m := strings.ToLower(message)
	if strings.Contains(m, "rate limit") || strings.Contains(m, "too many requests") || strings.Contains(m, "per second") {
		return false
	}
	return strings.Contains(m, "capacity limit") || strings.Contains(m, "endpoint capacity")
}

// vectorState is the proxy's Vector Search write account.
type vectorState struct {
	rest      atomic.Int64
	undecoded atomic.Int64
	dropped   atomic.Int64
	// notRecorded: answers that confirmed nothing about their index.
	notRecorded atomic.Int64

	mu       sync.Mutex
	indexes  map[string]*indexWrites
	refusals []sources.ProxyRefusal // ring by append+trim, oldest first
}

// indexWrites is one index's account; rows per minute come from a ring
// of one-second buckets (constant memory per index).
type indexWrites struct {
	sources.ProxyIndexWrites
	buckets [60]rowBucket
}

type rowBucket struct {
	sec              int64
	written, deleted int64
}

func (w *indexWrites) add(now time.Time, written, deleted int64) {
	sec := now.Unix()
	b := &w.buckets[sec%int64(len(w.buckets))]
	if b.sec != sec {
		*b = rowBucket{sec: sec}
	}
	b.written += written
	b.deleted += deleted
}

func (w *indexWrites) perMinute(now time.Time) (written, deleted float64) {
	sec := now.Unix()
	for _, b := range w.buckets {
		if b.sec > sec-int64(len(w.buckets)) && b.sec <= sec {
			written += float64(b.written)
			deleted += float64(b.deleted)
		}
	}
	return written, deleted
}

func (v *vectorState) index(name string) *indexWrites {
	if v.indexes == nil {
		v.indexes = map[string]*indexWrites{}
	}
	w := v.indexes[name]
	if w == nil {
		if len(v.indexes) >= maxVectorIndexes {
			v.dropped.Add(1)
			return nil
		}
		w = &indexWrites{ProxyIndexWrites: sources.ProxyIndexWrites{Index: name}}
		v.indexes[name] = w
	}
	return w
}

// restRoundTrip forwards an /api/ request unchanged (its body streamed,
// never read) and observes the answer of an index data call.
func (t *observer) restRoundTrip(req *http.Request) (*http.Response, error) {
	p := t.p
	p.vec.rest.Add(1)
	index, op, ok := vectorDataPath(req.Method, req.URL.Path)
	if !ok {
		return p.up.RoundTrip(req)
	}
	resp, err := p.up.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	return p.observeVector(index, op, resp), nil
}

// observeVector reads at most maxVectorAnswer of the answer, counts it,
// and gives the client the same bytes (or, for a capacity refusal under
// --fail-fast-exhausted, the rewritten answer).
func (p *Proxy) observeVector(index, op string, resp *http.Response) *http.Response {
	now := p.clk.Now()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxVectorAnswer+1))
	whole := err == nil && len(raw) <= maxVectorAnswer
	if !whole {
		// Forward what was read and the rest as it streams.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(raw), resp.Body), resp.Body}
		p.vec.undecoded.Add(1)
		p.recordVector(index, op, now, resp.StatusCode, nil)
		return resp
	}
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	plain, decoded := decodeContent(resp.Header.Get("Content-Encoding"), raw)
	if !decoded {
		p.vec.undecoded.Add(1)
		p.recordVector(index, op, now, resp.StatusCode, nil)
		return resp
	}
	if resp.StatusCode < 400 {
		var a struct {
			Result *struct {
				SuccessRowCount   int64             `json:"success_row_count"`
				FailedPrimaryKeys []json.RawMessage `json:"failed_primary_keys"`
			} `json:"result"`
		}
		if json.Unmarshal(plain, &a) != nil {
			p.vec.undecoded.Add(1)
			p.recordVector(index, op, now, resp.StatusCode, nil)
			return resp
		}
		c := &vectorCount{}
		if a.Result != nil {
			c.rows, c.failed = max(a.Result.SuccessRowCount, 0), int64(len(a.Result.FailedPrimaryKeys))
		}
		p.recordVector(index, op, now, resp.StatusCode, c)
		return resp
	}
	he := sources.ParseHTTPErrorAt(now, "", resp.StatusCode, resp.Header, plain)
	c := &vectorCount{err: he}
	if IsCapacityRefusal(op, resp.StatusCode, he.ErrorCode, he.Message) {
		c.refusal = &sources.ProxyRefusal{Index: index, At: now.UTC(), Status: resp.StatusCode, ErrorCode: he.ErrorCode,
			Message: clean(he.Message), RequestID: clean(he.RequestID)}
		if p.o.FailFastExhausted {
			if body, ok := rewriteErrorCode(plain, FailFastCode); ok {
				resp.Header.Set(HeaderRewritten, strconv.Itoa(resp.StatusCode)+" "+he.ErrorCode+" -> "+
					strconv.Itoa(FailFastStatus)+" "+FailFastCode+" (endpoint capacity refusal; dbxtop proxy --fail-fast-exhausted)")
				resp.StatusCode = FailFastStatus
				resp.Status = strconv.Itoa(FailFastStatus) + " " + http.StatusText(FailFastStatus)
				resp.Header.Del("Content-Encoding")
				resp.Header.Del("Transfer-Encoding")
				resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
				resp.ContentLength = int64(len(body))
				resp.Body = io.NopCloser(bytes.NewReader(body))
				c.refusal.Rewritten = true
			}
		}
	}
	p.recordVector(index, op, now, resp.StatusCode, c)
	return resp
}

// vectorCount is what one answer said; nil when its body was not read.
type vectorCount struct {
	rows, failed int64
	err          *sources.HTTPError
	refusal      *sources.ProxyRefusal
}

// unconfirmed says whether an answer confirms nothing about the index:
// the call was refused for its credentials or permissions, or the server
// does not know the index. Made-up tokens and names never make rows.
func unconfirmed(status int, c *vectorCount) bool {
	if refused(status) || status == http.StatusNotFound {
		return true
	}
	if c != nil && c.err != nil {
		switch c.err.ErrorCode {
		case "UNAUTHENTICATED", "PERMISSION_DENIED", "RESOURCE_DOES_NOT_EXIST", "NOT_FOUND":
			return true
		}
	}
	return false
}

// recordVector counts one answer on its index. Only server-confirmed
// facts enter the table: an answer that confirms nothing about the index
// records nothing (counted in not_recorded), and a server failure (5xx)
// is counted only on an index the table already holds.
func (p *Proxy) recordVector(index, op string, now time.Time, status int, c *vectorCount) {
	v := &p.vec
	if unconfirmed(status, c) {
		v.notRecorded.Add(1)
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if status >= 500 && v.indexes[index] == nil {
		v.notRecorded.Add(1)
		return
	}
	w := v.index(index)
	if w == nil {
		return
	}
	if op == "upsert" {
		w.Upserts++
	} else {
		w.Deletes++
	}
	switch {
	case c == nil:
		if status >= 400 {
			w.countError("HTTP " + strconv.Itoa(status))
		}
	case c.err != nil:
		code := c.err.ErrorCode
		if code == "" {
			code = "HTTP " + strconv.Itoa(status)
		}
		w.countError(clean(code))
		if r := c.refusal; r != nil {
			w.Refusals++
			w.LastRefusal = r
			v.refusals = append(v.refusals, *r)
			if len(v.refusals) > maxRefusals {
				v.refusals = append(v.refusals[:0], v.refusals[len(v.refusals)-maxRefusals:]...)
			}
		}
	default:
		w.FailedKeys += c.failed
		w.LastWriteAt = now.UTC()
		if op == "upsert" {
			w.RowsWritten += c.rows
			w.LastUpsertAt = now.UTC()
			w.add(now, c.rows, 0)
		} else {
			w.RowsDeleted += c.rows
			w.add(now, 0, c.rows)
		}
	}
}

func (w *indexWrites) countError(code string) {
	if w.Errors == nil {
		w.Errors = map[string]int64{}
	}
	if _, ok := w.Errors[code]; !ok && len(w.Errors) >= maxErrorCodes {
		code = "other"
	}
	w.Errors[code]++
}

// Vector returns the Vector Search write account.
func (p *Proxy) Vector() sources.ProxyVectorDoc {
	v := &p.vec
	now := p.clk.Now()
	d := sources.ProxyVectorDoc{GeneratedAt: now.UTC(), FailFastExhausted: p.o.FailFastExhausted,
		RESTRequests: v.rest.Load(), Undecoded: v.undecoded.Load(), IndexesDropped: v.dropped.Load(),
		NotRecorded: v.notRecorded.Load()}
	v.mu.Lock()
	d.Indexes = make([]sources.ProxyIndexWrites, 0, len(v.indexes))
	for _, w := range v.indexes {
		x := w.ProxyIndexWrites
		x.WrittenPerMinute, x.DeletedPerMinute = w.perMinute(now)
		if w.Errors != nil {
			x.Errors = make(map[string]int64, len(w.Errors))
			for k, n := range w.Errors {
				x.Errors[k] = n
			}
		}
		if w.LastRefusal != nil {
			r := *w.LastRefusal
			x.LastRefusal = &r
		}
		d.Indexes = append(d.Indexes, x)
	}
	d.Refusals = append([]sources.ProxyRefusal{}, v.refusals...)
	v.mu.Unlock()
	sort.Slice(d.Indexes, func(i, j int) bool { return d.Indexes[i].Index < d.Indexes[j].Index })
	return d
}

// decodeContent undoes a gzip Content-Encoding (bounded); identity is
// returned as it is. ok false for an encoding it cannot read.
func decodeContent(enc string, b []byte) ([]byte, bool) {
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "", "identity":
		return b, true
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, false
		}
		out, err := io.ReadAll(io.LimitReader(zr, maxVectorAnswer+1))
		if err != nil || len(out) > maxVectorAnswer {
			return nil, false
		}
		return out, true
	}
	return nil, false
}

// rewriteErrorCode replaces the value of the top-level "error_code" of a
// JSON object (every occurrence: a decoder keeps the last), leaving every
// other byte as the server sent it.
func rewriteErrorCode(body []byte, code string) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	type span struct{ from, to int }
	var spans []span
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		from := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		if key != "error_code" {
			continue
		}
		to := int(dec.InputOffset())
		start := bytes.IndexByte(body[from:to], '"')
		if start < 0 || raw[0] != '"' {
			return nil, false
		}
		spans = append(spans, span{from + start, to})
	}
	if len(spans) == 0 {
		return nil, false
	}
	q, _ := json.Marshal(code)
	out := make([]byte, 0, len(body)+len(spans)*len(q))
	last := 0
	for _, sp := range spans {
		out = append(out, body[last:sp.from]...)
		out = append(out, q...)
		last = sp.to
	}
	return append(out, body[last:]...), true
}

func (p *Proxy) serveVector(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, p.Vector())
}

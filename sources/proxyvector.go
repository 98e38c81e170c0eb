package sources

import "time"

// ProxyVectorDoc is what `dbxtop proxy` saw of the Vector Search index
// writes it forwarded (admin API GET /v1/vector, docs/proxy-vector.md): per index
// the rows written and deleted, and every capacity refusal. Counts come
// from the server's answers, never from request bodies.
type ProxyVectorDoc struct {
	GeneratedAt time.Time `json:"generated_at"`
	// FailFastExhausted says whether the proxy rewrites capacity refusals
	// for its clients (--fail-fast-exhausted).
	FailFastExhausted bool               `json:"fail_fast_exhausted"`
	Indexes           []ProxyIndexWrites `json:"indexes"`
	// Refusals are the latest capacity refusals, oldest first (bounded).
	Refusals []ProxyRefusal `json:"refusals"`
	// RESTRequests counts every /api/ request forwarded; Undecoded the
	// index data answers whose body could not be read (too large,
	// unknown encoding, not JSON): forwarded, not counted in rows.
	RESTRequests int64 `json:"rest_requests"`
	Undecoded    int64 `json:"undecoded_answers"`
	// IndexesDropped counts answers for indexes beyond the proxy's bound
	// on distinct index names (counted nowhere else).
	IndexesDropped int64 `json:"indexes_dropped"`
	// NotRecorded counts index data answers that confirmed nothing about
	// their index (refused credentials or permissions, an index the
	// server does not know, a server failure on an index not yet held):
	// forwarded, recorded nowhere else.
	NotRecorded int64 `json:"not_recorded"`
}

// ProxyIndexWrites is the write account of one index.
type ProxyIndexWrites struct {
	Index            string  `json:"index"`
	Upserts          int64   `json:"upserts"`
	Deletes          int64   `json:"deletes"`
	RowsWritten      int64   `json:"rows_written"`
	RowsDeleted      int64   `json:"rows_deleted"`
	FailedKeys       int64   `json:"failed_keys"`
	WrittenPerMinute float64 `json:"rows_written_per_min"`
	DeletedPerMinute float64 `json:"rows_deleted_per_min"`
	// LastWriteAt is the last successful upsert or delete answer;
	// LastUpsertAt the last successful upsert (zero when none).
	LastWriteAt  time.Time `json:"last_write_at"`
	LastUpsertAt time.Time `json:"last_upsert_at"`
	// Errors counts error answers by error_code ("HTTP <status>" when the
	// body had none).
	Errors      map[string]int64 `json:"errors,omitempty"`
	Refusals    int64            `json:"capacity_refusals"`
	LastRefusal *ProxyRefusal    `json:"last_refusal,omitempty"`
}

// ProxyRefusal is one capacity refusal: an upsert answered 429
// RESOURCE_EXHAUSTED with a message about the endpoint's capacity.
type ProxyRefusal struct {
	Index     string    `json:"index"`
	At        time.Time `json:"at"`
	Status    int       `json:"status"`
	ErrorCode string    `json:"error_code"`
	Message   string    `json:"message"`
	RequestID string    `json:"request_id,omitempty"`
	// Rewritten says the proxy answered its client with a status the
	// SDKs do not retry (--fail-fast-exhausted).
	Rewritten bool `json:"rewritten"`
}

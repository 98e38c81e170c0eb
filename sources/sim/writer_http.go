package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// WriterOverHTTP is how much of the incident writer's timeline before the
// endpoint is full goes over HTTP through the embedded proxy when there is
// one (docs/simulator.md, "vector-incident").
const WriterOverHTTP = 30 * time.Second

// writerTick is how often the HTTP writer sends what its timeline made due.
const writerTick = 200 * time.Millisecond

// maxWriterBatches bounds one HTTP upsert (5 rows a batch).
const maxWriterBatches = 2000

// incidentWriter is the incident's ingest job on the wire for the last
// WriterOverHTTP of its timeline: it upserts the batches its timeline made
// due through the embedded proxy, as one request per tick round-robin over
// the indexes, and stops at the first refusal, as the incident's client
// gave up. Its requests carry the ingest client's User-Agent.
func (s *Server) incidentWriter(ctx context.Context) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	t := time.NewTicker(writerTick)
	defer t.Stop()
	var id int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		index, n, ok := s.vec.writerNext()
		if !ok {
			return
		}
		if n == 0 {
			continue
		}
		n = min(n, maxWriterBatches)
		var b strings.Builder
		b.WriteByte('[')
		for i := int64(0); i < n*IncidentBatch; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			id++
			b.WriteString(`{"id":"w`)
			b.WriteString(strconv.FormatInt(id, 10))
			b.WriteString(`","text":"chunk"}`)
		}
		b.WriteByte(']')
		body, _ := json.Marshal(map[string]string{"inputs_json": b.String()})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost,
			s.proxyURL+"/api/2.0/vector-search/indexes/"+index+"/upsert-data", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", SimClientUA(KindIngest))
		resp, err := hc.Do(req)
		if err != nil {
			continue // the next tick sends what is due then
		}
		rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		var a struct {
			ErrorCode string `json:"error_code"`
			Message   string `json:"message"`
			Result    struct {
				SuccessRowCount int64 `json:"success_row_count"`
			} `json:"result"`
		}
		_ = json.Unmarshal(rb, &a)
		switch {
		case resp.StatusCode == http.StatusOK:
			s.vec.writerDone(a.Result.SuccessRowCount, false)
		case a.Message == ExhaustedMessage:
			// Refused for capacity (429 RESOURCE_EXHAUSTED, or 400
			// QUOTA_EXCEEDED from the proxy's --fail-fast-exhausted);
			// anything else is tried again at the next tick.
			s.o.Logger.Info("sim incident writer: refused", "index", index, "answer", strings.TrimSpace(string(rb)))
			s.vec.writerDone(0, true)
			return
		}
	}
}

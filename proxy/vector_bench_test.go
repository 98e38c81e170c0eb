package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/databricks/databricks-sdk-go/service/vectorsearch"
)

// BenchmarkRefusalCost measures what one capacity refusal costs a stock
// databricks-sdk-go v0.182.0 client with its default retry window:
// directly against the simulator, and through the proxy with
// --fail-fast-exhausted. The direct side takes the SDK's five minutes, so
// this is a benchmark (never run by `go test` without -bench):
//
//	go test -run '^$' -bench BenchmarkRefusalCost -benchtime 1x ./proxy/
func BenchmarkRefusalCost(b *testing.B) {
	for range b.N {
		direct := refusalCost(b, false)
		proxied := refusalCost(b, true)
		b.Logf("direct:  %d requests, %s", direct.requests, direct.elapsed.Round(10*time.Millisecond))
		b.Logf("proxied (--fail-fast-exhausted): %d requests, %s", proxied.requests, proxied.elapsed.Round(time.Millisecond))
		b.ReportMetric(float64(direct.requests), "direct-requests")
		b.ReportMetric(direct.elapsed.Seconds(), "direct-s")
		b.ReportMetric(float64(proxied.requests), "proxied-requests")
		b.ReportMetric(proxied.elapsed.Seconds(), "proxied-s")
		// What docs/proxy-vector.md claims of the figures: the proxy ends
		// the refusal at the first answer; the SDK alone retries it.
		if proxied.requests != 1 {
			b.Errorf("through the proxy: %d upsert requests reached the server, want 1", proxied.requests)
		}
		if direct.requests < 2 {
			b.Errorf("directly: %d upsert requests, want the SDK's retries (more than 1)", direct.requests)
		}
	}
}

type cost struct {
	requests int64
	elapsed  time.Duration
}

func refusalCost(b *testing.B, viaProxy bool) cost {
	b.Helper()
	s := startSim(b, "exhausted=vs-prod")
	host := s.URL()
	if viaProxy {
		host = startProxy(b, s.URL(), Options{FailFastExhausted: true}).URL()
	}
	w := sdkClient(b, host, s.Token(), 0) // the SDK's default window
	start := time.Now()
	_, err := w.VectorSearchIndexes.UpsertDataVectorIndex(context.Background(), vectorsearch.UpsertDataVectorIndexRequest{
		IndexName: directIdx, InputsJson: `[{"id":"a","text":"t"}]`})
	el := time.Since(start)
	if err == nil {
		b.Fatal("the upsert was accepted by a full endpoint")
	}
	return cost{requests: s.Stats().Requests["UpsertDataVectorIndex"], elapsed: el}
}

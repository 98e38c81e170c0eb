package databricks

import (
	"fmt"
	"strings"
	"testing"
)

// livePage999 is a live listing's answer as the simulator writes one: 999
// rows with the API's fields, escaped SQL, alternating users and clients.
func livePage999() []byte {
	users := []string{"alice@example.com", "carol@example.com", "etl-svc@example.com"}
	apps := []string{"dbt-databricks 1.10.4", "Tableau 2025.3", "databricks-sql-go 1.14.0"}
	var b strings.Builder
	b.WriteString(`{"has_next_page":true,"next_page_token":"MTc5NjE2NzYxODYyMTkxNTkzNjozMzEyYTRkMy0xOTg5","res":[`)
	for i := range 999 {
		if i > 0 {
			b.WriteByte(',')
		}
		u, a := users[i%3], apps[(i/3)%3]
		fmt.Fprintf(&b, `{"query_id":"01ef%04x-cc57-498e-a95a-b2f2ce1ad377","status":"RUNNING","statement_type":"SELECT",`+
			`"query_text":"SELECT * FROM streaming.events_%d WHERE ingest_time \u003e now() - INTERVAL 1 DAY","user_id":1812149719171059,`+
			`"user_name":%q,"executed_as_user_id":1812149719171059,"executed_as_user_name":%q,"warehouse_id":"53f3f4bd9afaab4c",`+
			`"endpoint_id":"53f3f4bd9afaab4c","client_application":%q,"query_start_time_ms":1796167620624,"is_final":false,`+
			`"session_id":"8912f8ad-9fc0-4b0e-b1ac-55c476c05b49"}`, i, i, u, u, a)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkDecodeLivePage999Rows times decoding one live listing's page of
// 999 rows (decodeHistoryPage, the answer already read).
func BenchmarkDecodeLivePage999Rows(b *testing.B) {
	page := livePage999()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := decodeHistoryPage(page)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Res) != 999 || p.Res[0].QueryText == "" {
			b.Fatalf("%d rows, the first without its text", len(p.Res))
		}
	}
}

package sources

import (
	"strings"
	"testing"
)

func TestRedactURLUserinfoAndSecretQueryValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`invalid --host "http://user:S3CRETVALUE@h.example.com"`, `invalid --host "http://[REDACTED]@h.example.com"`},
		{`https://S3CRETVALUE@adb-1.azuredatabricks.net/x`, `https://[REDACTED]@adb-1.azuredatabricks.net/x`},
		{`GET /sql/1.0/warehouses/a?sig=S3CRETVALUE&x=1`, `GET /sql/1.0/warehouses/a?sig=[REDACTED]&x=1`},
		{`path /sql/1.0/warehouses/a?o=1&api_key=S3CRETVALUE`, `path /sql/1.0/warehouses/a?o=1&api_key=[REDACTED]`},
		{`host http://h?token=S3CRETVALUE`, `host http://h?token=[REDACTED]`},
		{`http://h?code=S3CRETVALUE#frag`, `http://h?code=[REDACTED]#frag`},
		// Nothing secret: unchanged.
		{`http://127.0.0.1:8080/api/2.0/sql/history/queries?max_results=500`, `http://127.0.0.1:8080/api/2.0/sql/history/queries?max_results=500`},
		{`mailto alice@example.com`, `mailto alice@example.com`},
	} {
		got := Redact(tc.in)
		if got != tc.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "S3CRETVALUE") {
			t.Errorf("secret left in %q", got)
		}
	}
}

package sources

import "testing"

func TestClientApplication(t *testing.T) {
	for ua, want := range map[string]string{
		"Go-Databricks-SQL-Driver/1.14.0 (x)": "Go-Databricks-SQL-Driver",
		"dbxtop/0.1.0":                        "dbxtop",
		"curl":                                "curl",
		"   ":                                 "unknown",
		"":                                    "unknown",
	} {
		if got := ClientApplication(ua); got != want {
			t.Errorf("ClientApplication(%q) = %q, want %q", ua, got, want)
		}
	}
}

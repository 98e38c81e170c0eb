package sources

import "strings"

// ClientApplication is the product name of a User-Agent's first token
// ("Go-Databricks-SQL-Driver/1.14.0 …" → "Go-Databricks-SQL-Driver"), as
// query history's client_application shows it; "unknown" when empty.
func ClientApplication(ua string) string {
	f := strings.Fields(ua)
	if len(f) == 0 {
		return "unknown"
	}
	name, _, _ := strings.Cut(f[0], "/")
	return name
}

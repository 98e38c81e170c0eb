package cmd

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/dbxtop/dbxtop/report"
)

// Output formats of the commands that print data (-o/--output, as kubectl
// and the Databricks CLI name it).
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// addOutputFlag registers -o/--output on fs, defaulting to a table.
func addOutputFlag(fs *pflag.FlagSet, p *string, what string) {
	*p = outputTable
	fs.VarP(&checkedString{p: p, typ: "format", check: oneOf(outputTable, outputJSON, outputYAML)}, "output", "o",
		"print "+what+" as table, json or yaml")
}

// writeData prints v as JSON (indented) or YAML; table output is the
// caller's own.
func writeData(w io.Writer, format string, v any) error {
	if format == outputYAML {
		return report.YAML(w, v)
	}
	return report.JSONValue(w, v)
}

package cmd

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestConfigurationDocMatchesTheCommandLine: docs/configuration.md lists
// every command and every flag the binary has, and no flag it lacks.
func TestConfigurationDocMatchesTheCommandLine(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	root := newApp(nil, nil, func(string) (string, bool) { return "", false }).newRootCmd()
	flags := map[string]bool{"help": true, "version": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" && c != root {
			return
		}
		if c != root && c.Parent() == root && !strings.Contains(doc, "`dbxtop "+c.Name()) {
			t.Errorf("docs/configuration.md's command table lacks `dbxtop %s`", c.Name())
		}
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				flags[f.Name] = true
				if f.Hidden || f.Name == "help" {
					return
				}
				if !strings.Contains(doc, "`--"+f.Name) {
					t.Errorf("docs/configuration.md does not describe `dbxtop %s --%s`", c.Name(), f.Name)
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	// The reverse: a flag the doc names in a table's first column exists.
	var stale []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(?:-\\w, )?`?--([a-z0-9.-]+)").FindAllStringSubmatch(doc, -1) {
		if !flags[m[1]] {
			stale = append(stale, m[1])
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/configuration.md describes flags the binary does not have: %v", stale)
	}
	// Every scenario the simulator accepts is described.
	for _, s := range scenarios {
		if !strings.Contains(doc, "`"+s+"`") {
			t.Errorf("docs/configuration.md's scenario list lacks `%s`", s)
		}
	}
}

package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// docCommands are the dbxtop command lines of the fenced code blocks of
// README.md and docs/*.md, without comments, pipes, redirections and
// environment assignments. Lines with placeholders ([flags], URL, …) are
// synopses, not commands, and are left out.
func docCommands(t *testing.T) map[string][]string {
	t.Helper()
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	out := map[string][]string{}
	placeholder := regexp.MustCompile(`\w\|\w|\[|…|\.\.\.|<|\bURL\b|\bNAME\b|\bADDR\b|\bPATH\b|\bFILE\b|\bTOKEN\b|\$\(|\bD\b|\bN\b|^\s*dbxtop\s*$`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			// A command followed by its refusal is an example of one.
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "dbxtop: invalid") {
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			if !fenced {
				continue
			}
			line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
			if j := strings.Index(line, "   "); j >= 0 {
				line = line[:j] // a synopsis's description column
			}
			for _, cut := range []string{" #", " |", " >", " &&"} {
				if j := strings.Index(line, cut); j >= 0 {
					line = line[:j]
				}
			}
			fields := strings.Fields(line)
			for len(fields) > 0 && strings.Contains(fields[0], "=") {
				fields = fields[1:] // VAR=value
			}
			if len(fields) == 0 || fields[0] != "dbxtop" || placeholder.MatchString(strings.Join(fields, " ")) {
				continue
			}
			out[fmt.Sprintf("%s:%d", strings.TrimPrefix(f, "../"), i+1)] = fields[1:]
		}
	}
	return out
}

// TestDocCommandsParse: every dbxtop command line the docs show is one
// the binary accepts (its flags parse and validate), without running it.
func TestDocCommandsParse(t *testing.T) {
	cmds := docCommands(t)
	t.Logf("%d command lines", len(cmds))
	if len(cmds) < 10 {
		t.Fatalf("found only %d command lines in the docs: the extractor is broken", len(cmds))
	}
	env := map[string]string{"HOME": t.TempDir(), "DBXTOP_PROXY_TOKEN": "t", "DBXTOP_SERVE_TOKEN": "t"}
	for where, args := range cmds {
		a := newApp(io.Discard, io.Discard, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		root := a.newRootCmd()
		c, rest, err := root.Find(args)
		if err == nil {
			err = c.ParseFlags(rest)
		}
		if err == nil && c.Args != nil {
			err = c.Args(c, c.Flags().Args())
		}
		if err == nil && c.PreRunE != nil {
			err = c.PreRunE(c, c.Flags().Args())
		}
		// A named context or profile needs the reader's own config file:
		// that is the reader's setup, not a doc error.
		if err != nil && !strings.Contains(err.Error(), "no config file") {
			t.Errorf("%s: dbxtop %s: %v", where, strings.Join(args, " "), err)
		}
	}
}

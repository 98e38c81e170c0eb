package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dbxtop/dbxtop/config"
	"github.com/dbxtop/dbxtop/textfmt"
)

// newConfigCmd is `dbxtop config path|show|validate|get-contexts|use-context`.
func (a *app) newConfigCmd() *cobra.Command {
	var path string
	c := &cobra.Command{
		Use:   "config path|show|validate|get-contexts|use-context",
		Short: "Where the config file is, the effective settings, its contexts, and whether it is valid",
		Long: `dbxtop config path              print the config file dbxtop reads
dbxtop config show              print the effective settings and where each came from
dbxtop config validate          check the file: exit 0 valid (or no file), 2 invalid (key and line named), 1 unreadable
dbxtop config get-contexts      list the file's contexts; * marks current_context
dbxtop config use-context NAME  make NAME the current_context (the one used without --context)

The file is $XDG_CONFIG_HOME/dbxtop/config.toml (~/.config/dbxtop/config.toml),
or --config PATH. It is optional. See docs/configuration.md.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return usagef("config: say path, show, validate, get-contexts or use-context")
		},
	}
	addConfigFlag(c.PersistentFlags(), &path)
	c.AddCommand(&cobra.Command{
		Use: "path", Short: "Print the config file dbxtop reads", Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			p, ok := a.configPath(path)
			if !ok {
				return nil
			}
			fmt.Fprintln(a.stdout, p)
			return nil
		},
	})
	c.AddCommand(a.newConfigShowCmd(&path), a.newConfigGetContextsCmd(&path))
	c.AddCommand(&cobra.Command{
		Use: "validate", Short: "Check the config file: exit 0 valid (or no file), 2 invalid, 1 unreadable", Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			p, ok := a.configPath(path)
			if !ok {
				return nil
			}
			f, err := config.Load(p, false)
			if err != nil && path == "" && errors.Is(err, fs.ErrNotExist) {
				// The default file is optional: its absence is a valid setup.
				fmt.Fprintf(a.stdout, "%s: no config file (optional: built-in defaults apply)\n", textfmt.Line(p))
				return nil
			}
			if err != nil {
				return a.configFailure(err)
			}
			if w := f.Warning(); w != "" {
				fmt.Fprintln(a.stderr, textfmt.Line(w))
			}
			fmt.Fprintf(a.stdout, "%s: valid (%s)\n", textfmt.Line(p), textfmt.Plural(int64(len(f.ContextNames())), "context", "contexts"))
			return nil
		},
	})
	c.AddCommand(&cobra.Command{
		Use: "use-context NAME", Short: "Make NAME the current_context: the context used when no --context is given",
		Args: exactArgs(1, "use-context takes one context name"),
		RunE: func(_ *cobra.Command, args []string) error {
			p, ok := a.configPath(path)
			if !ok {
				return nil
			}
			if err := config.SetCurrentContext(p, args[0]); err != nil {
				return a.configFailure(err)
			}
			fmt.Fprintf(a.stdout, "%s: current_context is now %s\n", textfmt.Line(p), textfmt.Line(args[0]))
			return nil
		},
	})
	return c
}

// settingRow is one setting of `config show -o json|yaml`.
type settingRow struct {
	Setting string `json:"setting"`
	Value   string `json:"value"`
	From    string `json:"from"`
}

// contextSettings is one resolved context of `config show -o json|yaml`.
type contextSettings struct {
	Context  string       `json:"context"`
	File     string       `json:"file"`
	Settings []settingRow `json:"settings"`
}

func (a *app) newConfigShowCmd(path *string) *cobra.Command {
	var contexts []string
	var output string
	show := &cobra.Command{
		Use: "show", Short: "Print the effective settings and where each came from", Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			f, err := a.loadConfig(*path)
			if err != nil {
				return a.configFailure(err)
			}
			rs, err := f.Resolve(contexts, config.Overrides{})
			if err != nil {
				return usagef("%s", err)
			}
			src := f.Source()
			if output != outputTable {
				out := make([]contextSettings, 0, len(rs))
				for _, s := range rs {
					cs := contextSettings{Context: s.Context, File: src}
					for _, n := range config.SettingNames {
						cs.Settings = append(cs.Settings, settingRow{Setting: n, Value: s.Value(n), From: s.Origins[n]})
					}
					out = append(out, cs)
				}
				return a.printData(output, out)
			}
			if src == "" {
				src = "(no config file: defaults)"
			}
			fmt.Fprintf(a.stdout, "# file: %s\n", textfmt.Line(src))
			for i, s := range rs {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
				for _, n := range config.SettingNames {
					v := s.Value(n)
					if v == "" {
						v = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", n, textfmt.Line(v), textfmt.Line(s.Origins[n]))
				}
				_ = tw.Flush()
			}
			return nil
		},
	}
	show.Flags().StringArrayVar(&contexts, "context", nil, "show this context `name` (repeatable, or 'all')")
	addOutputFlag(show.Flags(), &output, "the settings")
	return show
}

// contextRow is one context of `config get-contexts -o json|yaml`.
type contextRow struct {
	Name       string   `json:"name"`
	Current    bool     `json:"current"`
	Host       string   `json:"host,omitempty"`
	Profile    string   `json:"profile,omitempty"`
	Warehouses []string `json:"warehouses,omitempty"`
	Proxy      string   `json:"proxy,omitempty"`
	Proxies    []string `json:"proxies,omitempty"`
}

func (a *app) newConfigGetContextsCmd(path *string) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use: "get-contexts", Short: "List the config file's contexts (* marks current_context)", Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			f, err := a.loadConfig(*path)
			if err != nil {
				return a.configFailure(err)
			}
			rows := make([]contextRow, 0, len(f.Contexts))
			for _, n := range f.ContextNames() {
				ctx := f.Contexts[n]
				rows = append(rows, contextRow{Name: n, Current: n == f.CurrentContext, Host: ctx.Host,
					Profile: ctx.Profile, Warehouses: ctx.Warehouses, Proxy: ctx.Proxy, Proxies: ctx.Proxies})
			}
			if output != outputTable {
				return a.printData(output, rows)
			}
			if len(rows) == 0 {
				src := f.Source()
				if src == "" {
					src = "no config file"
				}
				fmt.Fprintf(a.stderr, "dbxtop config: %s defines no context (see docs/configuration.md)\n", textfmt.Line(src))
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CURRENT\tNAME\tHOST\tPROFILE\tWAREHOUSES\tPROXY")
			for _, r := range rows {
				cur := ""
				if r.Current {
					cur = "*"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cur, textfmt.Line(r.Name), dash(r.Host), dash(r.Profile),
					dash(strings.Join(r.Warehouses, ",")), dash(strings.Join(slices.DeleteFunc(append([]string{r.Proxy}, r.Proxies...), func(s string) bool { return s == "" }), ",")))
			}
			return tw.Flush()
		},
	}
	addOutputFlag(c.Flags(), &output, "the contexts")
	return c
}

// printData prints v as JSON or YAML; a failure to write is exit 1.
func (a *app) printData(format string, v any) error {
	if err := writeData(a.stdout, format, v); err != nil {
		fmt.Fprintln(a.stderr, "dbxtop config: "+err.Error())
		a.code = exitError
	}
	return nil
}

// dash is s cleaned for a table cell, or "-" when empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return textfmt.Line(s)
}

// configFailure reports a config file problem: exit 1 when it cannot be
// read, 2 when it is invalid, each problem on its own line.
func (a *app) configFailure(err error) error {
	a.code = exitUsage
	if errors.Is(err, config.ErrUnreadable) {
		a.code = exitError
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(a.stderr, "dbxtop config: "+textfmt.Line(line))
	}
	return nil
}

// configPath is --config, or else where dbxtop looks for its config file;
// false (with the exit status set and one line said) when that cannot be
// worked out.
func (a *app) configPath(flag string) (string, bool) {
	if flag != "" {
		return flag, true
	}
	p, err := config.Path(a.getenv)
	if err != nil {
		fmt.Fprintln(a.stderr, "dbxtop config: "+err.Error())
		a.code = exitError
		return "", false
	}
	return p, true
}

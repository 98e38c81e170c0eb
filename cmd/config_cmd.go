package cmd

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dbxtop/dbxtop/config"
	"github.com/dbxtop/dbxtop/textfmt"
)

// newConfigCmd is `dbxtop config path|show|validate`.
func (a *app) newConfigCmd() *cobra.Command {
	var path string
	var contexts []string
	c := &cobra.Command{
		Use:   "config path|show|validate",
		Short: "Where the config file is, the effective settings, and whether the file is valid",
		Long: `dbxtop config path      print the config file dbxtop reads
dbxtop config show      print the effective settings and where each came from
dbxtop config validate  check the file: exit 0 valid, 2 invalid (key and line named), 1 unreadable

The file is $XDG_CONFIG_HOME/dbxtop/config.toml (~/.config/dbxtop/config.toml),
or --config PATH. See docs/configuration.md.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return usagef("config: say path, show or validate") },
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
	show := &cobra.Command{
		Use: "show", Short: "Print the effective settings and where each came from", Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			f, err := a.loadConfig(path)
			if err != nil {
				return a.configFailure(err)
			}
			rs, err := f.Resolve(contexts, config.Overrides{})
			if err != nil {
				return usagef("%s", err)
			}
			src := f.Source()
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
	show.Flags().StringArrayVar(&contexts, "context", nil, "show this context (repeatable, or 'all')")
	c.AddCommand(show)
	c.AddCommand(&cobra.Command{
		Use: "validate", Short: "Check the config file: exit 0 valid, 2 invalid, 1 unreadable", Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			p, ok := a.configPath(path)
			if !ok {
				return nil
			}
			f, err := config.Load(p, false)
			if err != nil {
				return a.configFailure(err)
			}
			if w := f.Warning(); w != "" {
				fmt.Fprintln(a.stderr, textfmt.Line(w))
			}
			fmt.Fprintf(a.stdout, "%s: valid (%d contexts)\n", textfmt.Line(p), len(f.ContextNames()))
			return nil
		},
	})
	return c
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

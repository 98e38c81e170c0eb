package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Version is dbxtop's version; release builds set it with
// -ldflags "-X github.com/dbxtop/dbxtop/cmd.Version=1.2.3".
var Version = "0.1.0-dev"

func (a *app) newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print dbxtop's version",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintf(a.stdout, "dbxtop %s\n", Version)
			return nil
		},
	}
}

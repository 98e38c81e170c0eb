package cmd

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version, Commit and Date say what was built; release builds stamp them
// (.goreleaser.yaml) with
//
//	-ldflags "-X github.com/dbxtop/dbxtop/cmd.Version=1.2.3 -X …cmd.Commit=… -X …cmd.Date=…"
//
// Unstamped, they come from the build info: `go install …@v1.2.3` reports
// v1.2.3, a build in a clone its VCS revision and time.
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// devVersion is what a build that knows nothing better reports.
const devVersion = "0.1.0-dev"

func init() {
	bi, _ := debug.ReadBuildInfo()
	Version, Commit, Date = stamped(Version, Commit, Date, bi)
}

// stamped fills what the linker did not stamp from the build info.
func stamped(version, commit, date string, bi *debug.BuildInfo) (string, string, string) {
	if bi != nil {
		if v := bi.Main.Version; version == "" && v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && commit == "":
				commit = s.Value
			case s.Key == "vcs.time" && date == "":
				date = s.Value
			}
		}
	}
	if version == "" {
		version = devVersion
	}
	return version, commit, date
}

// versionLine is `dbxtop version`'s output.
func versionLine() string {
	line := "dbxtop " + Version
	if Commit != "" {
		line += " commit=" + Commit
	}
	if Date != "" {
		line += " date=" + Date
	}
	return line
}

func (a *app) newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print dbxtop's version, commit and build date",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintln(a.stdout, versionLine())
			return nil
		},
	}
}

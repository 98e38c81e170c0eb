package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version, Commit and Date say what was built; release builds stamp them
// (.goreleaser.yaml) with
//
//	-ldflags "-X github.com/dbxtop/dbxtop/cmd.Version=1.2.3 -X …cmd.Commit=… -X …cmd.Date=…"
//
// Unstamped, they come from the build info: `go install …@v1.2.3` reports
// v1.2.3, a build in a clone its VCS revision and time. A build without
// VCS stamping (-buildvcs=false, common in build containers) knows no
// commit: its line says commit=unknown, and like every build it names
// the Go toolchain and platform from the build info.
var (
	Version = ""
	Commit  = ""
	Date    = ""
	// GoVersion is the toolchain that built the binary.
	GoVersion = runtime.Version()
)

// devVersion is what a build that knows nothing better reports.
const devVersion = "0.1.0-dev"

func init() {
	bi, _ := debug.ReadBuildInfo()
	Version, Commit, Date = stamped(Version, Commit, Date, bi)
	if bi != nil && bi.GoVersion != "" {
		GoVersion = bi.GoVersion
	}
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
	} else {
		line += " commit=unknown"
	}
	if Date != "" {
		line += " date=" + Date
	}
	return line + " go=" + GoVersion + " platform=" + runtime.GOOS + "/" + runtime.GOARCH
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

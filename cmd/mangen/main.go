// Command mangen writes dbxtop's man pages into a directory (default
// ./manpages): `go run ./cmd/mangen DIR`. Release builds run it.
package main

import (
	"fmt"
	"os"

	"github.com/dbxtop/dbxtop/cmd"
)

func main() {
	dir := "manpages"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := cmd.WriteManPages(dir); err != nil {
		fmt.Fprintln(os.Stderr, "mangen:", err)
		os.Exit(1)
	}
}

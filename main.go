// Command dbxtop is a terminal monitor for live operations on Databricks
// SQL warehouses and Vector Search endpoint capacity. main only wires the
// command line; see package cmd.
//
// It imports only cmd.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/dbxtop/dbxtop/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.ExecuteContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

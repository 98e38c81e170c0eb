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
	go func() { <-ctx.Done(); stop() }() // a second signal ends the process at once
	code := cmd.ExecuteContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

package cmd

import (
	"github.com/spf13/cobra"
)

func (a *app) newSimCmd() *cobra.Command {
	var cfg SimConfig
	c := &cobra.Command{
		Use:   "sim",
		Short: "Serve a simulated Databricks workspace until interrupted",
		Long: `Serve a simulated workspace on loopback: the Thrift TCLIService and the REST
APIs dbxtop (and the official drivers and SDKs) use, with a server-side
inactivity reaper, a scripted workload of healthy and misbehaving clients,
and seeded, deterministic fault injection.

The first line of stdout is  host=http://127.0.0.1:PORT token=TOKEN
Point dbxtop (or any driver) at it:  dbxtop --host http://127.0.0.1:PORT

Introspection (same token): GET /sim/v1/stats and GET /sim/v1/truth.`,
		Example: `  dbxtop sim
  dbxtop sim --listen 127.0.0.1:8080 --token secret --faults reset=0.1@GetOperationStatus,throttle=0.05
  dbxtop sim --scenario load --ops 500 --warehouses 4`,
		Args: noArgs,
		PreRunE: func(c *cobra.Command, _ []string) error {
			return finishSim(c.Flags(), &cfg)
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if a.runSim == nil {
				a.code = a.notBuilt("dbxtop sim")
				return nil
			}
			a.code = a.runSim(c.Context(), cfg, a.stdout, a.stderr)
			return nil
		},
	}
	addSimFlags(c.Flags(), &cfg)
	completeSimFlags(c)
	return c
}

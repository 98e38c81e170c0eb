package cmd

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/config"
)

// checkHost is the workspace URL rule, shared with the config file.
var checkHost = config.CheckHost

// checkHTTPPath accepts an absolute URL path without query or fragment.
func checkHTTPPath(s string) error {
	switch {
	case !strings.HasPrefix(s, "/"):
		return errors.New("must start with / (e.g. /sql/1.0/warehouses/abc123)")
	case strings.ContainsAny(s, "?# \t"):
		return errors.New("must be a plain path: no query, fragment or spaces")
	}
	return nil
}

// checkListen accepts host:port with a numeric port (0 picks a free one).
func checkListen(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port, e.g. 127.0.0.1:8080 (port 0 picks a free one)")
	}
	if host == "" {
		return errors.New("empty host: name the interface, e.g. 127.0.0.1:" + port)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not in 0-65535", port)
	}
	return nil
}

// checkLogFile accepts a path whose directory exists, so that a typo is
// refused now rather than after the TUI has taken the terminal.
func checkLogFile(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("must not be empty")
	}
	dir := filepath.Dir(s)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory %q does not exist", dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%q is not a directory", dir)
	}
	if fi, err := os.Stat(s); err == nil && fi.IsDir() {
		return errors.New("is a directory")
	}
	return nil
}

// Fault grammar of docs/simulator.md (Fault injection), checked here so that `sim` and `demo`
// refuse a bad spec before the server starts. The simulator parses the
// same grammar (sources/sim.ParseFaults).
var (
	probabilityFaults = map[string]bool{"reset": true, "stale": true, "throttle": true,
		"throttle-bare": true, "unavailable": true, "gateway": true, "quota": true}
	faultCalls = func() map[string]bool {
		m := map[string]bool{}
		for _, c := range []string{
			// TCLIService RPCs.
			"OpenSession", "CloseSession", "GetInfo", "ExecuteStatement", "GetTypeInfo",
			"GetCatalogs", "GetSchemas", "GetTables", "GetTableTypes", "GetColumns",
			"GetFunctions", "GetPrimaryKeys", "GetCrossReference", "GetOperationStatus",
			"CancelOperation", "CloseOperation", "GetResultSetMetadata", "FetchResults",
			"GetDelegationToken", "CancelDelegationToken", "RenewDelegationToken",
			// databricks-sdk-go method names of the REST routes.
			"ListQueries", "GetStatement", "CancelExecution", "CloseStatement",
			"ListWarehouses", "ListEndpoints", "GetEndpoint", "ListIndexes", "GetIndex",
			"UpsertDataVectorIndex",
		} {
			m[c] = true
		}
		return m
	}()
)

func checkFaults(spec string) error {
	if strings.TrimSpace(spec) == "" {
		return nil
	}
	for _, raw := range strings.Split(spec, ",") {
		item := strings.TrimSpace(raw)
		if item == "" {
			return errors.New("empty item in the comma list")
		}
		kind, val, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf("item %q: want kind=value[@call]", item)
		}
		kind, val = strings.TrimSpace(kind), strings.TrimSpace(val)
		if v, call, has := strings.Cut(val, "@"); has {
			val, call = strings.TrimSpace(v), strings.TrimSpace(call)
			if !faultCalls[call] {
				return fmt.Errorf("item %q: unknown call %q (a Thrift RPC name such as GetOperationStatus, or an SDK method such as ListQueries)", item, call)
			}
		}
		switch {
		case probabilityFaults[kind]:
			p, err := strconv.ParseFloat(val, 64)
			if err != nil || p != p || p < 0 || p > 1 {
				return fmt.Errorf("item %q: %s wants a probability between 0 and 1", item, kind)
			}
		case kind == "latency":
			if d, err := time.ParseDuration(val); err != nil || d < 0 {
				return fmt.Errorf("item %q: latency wants a duration such as 250ms", item)
			}
		case kind == "exhausted":
			if val == "" {
				return fmt.Errorf("item %q: exhausted wants an endpoint name", item)
			}
		default:
			return fmt.Errorf("item %q: unknown kind %q (reset, stale, throttle, throttle-bare, unavailable, gateway, exhausted, quota, latency)", item, kind)
		}
	}
	return nil
}

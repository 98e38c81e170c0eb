package cmd

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dbxtop/dbxtop/config"
	"github.com/dbxtop/dbxtop/sources/sim"
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

// checkFaults refuses a bad --faults spec before the simulator starts,
// with the simulator's own parser (sim.ParseFaults): the grammar and the
// call names have one home. Only the wording is the command line's, which
// names the flag's item and says what it wants.
func checkFaults(spec string) error {
	_, err := sim.ParseFaults(spec)
	var fe *sim.FaultError
	if !errors.As(err, &fe) {
		return err
	}
	switch fe.Problem {
	case sim.FaultEmptyItem:
		return errors.New("empty item in the comma list")
	case sim.FaultNoValue:
		return fmt.Errorf("item %q: want kind=value[@call]", fe.Item)
	case sim.FaultUnknownCall:
		return fmt.Errorf("item %q: unknown call %q (a Thrift RPC name such as GetOperationStatus, or an SDK method such as ListQueries)", fe.Item, fe.Call)
	case sim.FaultNotANumber, sim.FaultOutOfRange:
		return fmt.Errorf("item %q: %s wants a probability between 0 and 1", fe.Item, fe.Kind)
	case sim.FaultBadDuration, sim.FaultNegative:
		return fmt.Errorf("item %q: latency wants a duration such as 250ms", fe.Item)
	case sim.FaultNoEndpoint:
		return fmt.Errorf("item %q: exhausted wants an endpoint name", fe.Item)
	default:
		return fmt.Errorf("item %q: unknown kind %q (%s)", fe.Item, fe.Kind, strings.Join(sim.FaultKinds, ", "))
	}
}

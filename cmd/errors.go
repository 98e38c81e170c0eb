package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dbxtop/dbxtop/sources"
)

// Exit statuses (docs/configuration.md).
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed
	exitUsage = 2 // invalid arguments, every command but snapshot
	// exitSnapshotUsage: snapshot's exit codes are Nagios-style, where 2
	// means CRITICAL; a typo must read as UNKNOWN, never as an alert.
	exitSnapshotUsage = 3
)

// usageError is an invalid command line: printed as one line, no usage
// dump, and mapped to exit status 2 (3 for snapshot).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef builds it with every credential-looking part redacted: a token
// pasted into --host (https://user:TOKEN@host), DATABRICKS_HOST or
// --http-path (?token=…) is not echoed back.
func usagef(format string, a ...any) error {
	return &usageError{msg: sources.RedactURLs(fmt.Sprintf(format, a...))}
}

// invalidFlag formats the one line every bad value gets:
// invalid --flag "value": reason. Secret flags never echo their value.
func invalidFlag(name, value, reason string) error {
	if secretFlags[name] {
		return usagef("invalid --%s: %s", name, reason)
	}
	return usagef("invalid --%s %q: %s", name, value, reason)
}

// secretFlags are never echoed, even when their value is refused.
var secretFlags = map[string]bool{"token": true}

// flagError turns pflag's parse errors into the same one-line form.
func flagError(c *cobra.Command, err error) error {
	var inv *pflag.InvalidValueError
	if errors.As(err, &inv) {
		reason := inv.Unwrap().Error()
		if inv.GetFlag().Value.Type() == "bool" {
			reason = "must be true or false"
		}
		return invalidFlag(inv.GetFlag().Name, inv.GetValue(), reason)
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "unknown") {
		msg += fmt.Sprintf(" (see %s --help)", c.CommandPath())
	}
	return &usageError{msg: msg}
}

// noArgs refuses positional arguments with one line (cobra's own
// message adds suggestions on several lines).
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command or argument %q for %q (see %s --help)", args[0], c.CommandPath(), c.CommandPath())
	}
	return nil
}

// exactArgs wants n positional arguments and says what they are when the
// count is wrong.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s (see %s --help)", what, c.CommandPath())
		}
		return nil
	}
}

package cmd

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/config"
)

// The flag value types below validate as they parse, so that a bad value
// is refused with a reason that names the rule it broke. pflag wraps
// their errors in *pflag.InvalidValueError, which flagError formats.

// durationValue is a time.Duration with a lower bound.
type durationValue struct {
	p   *time.Duration
	min time.Duration // the value must be ≥ min
	// zeroOK allows exactly 0 even when min > 0 (0 meaning "automatic").
	zeroOK bool
}

func newDuration(p *time.Duration, def, min time.Duration) *durationValue {
	*p = def
	return &durationValue{p: p, min: min}
}

func (v *durationValue) String() string {
	if v.p == nil || (*v.p == 0 && v.zeroOK) {
		return ""
	}
	return v.p.String()
}

func (v *durationValue) Type() string { return "duration" }

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		if _, numErr := strconv.ParseFloat(strings.TrimSpace(s), 64); numErr == nil {
			return errors.New("missing unit: write e.g. 30s, 5m or 1h30m")
		}
		return errors.New("not a duration: write e.g. 30s, 5m or 1h30m")
	}
	switch {
	case d < 0:
		return errors.New("must not be negative")
	case d == 0 && v.zeroOK:
	case d == 0 && v.min > 0:
		return errors.New("must be greater than zero")
	case d < v.min:
		return fmt.Errorf("must be at least %s", v.min)
	}
	*v.p = d
	return nil
}

// intValue is an int within [min, max].
type intValue struct {
	p        *int
	min, max int
}

func newInt(p *int, def, min, max int) *intValue {
	*p = def
	return &intValue{p: p, min: min, max: max}
}

func (v *intValue) String() string { return strconv.Itoa(*v.p) }
func (v *intValue) Type() string   { return "int" }

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return errors.New("not a whole number")
	}
	if n < v.min {
		return fmt.Errorf("must be at least %d", v.min)
	}
	if n > v.max {
		return fmt.Errorf("must be at most %d", v.max)
	}
	*v.p = n
	return nil
}

// int64Value is any int64 (the simulator's seed).
type int64Value struct{ p *int64 }

func (v *int64Value) String() string { return strconv.FormatInt(*v.p, 10) }
func (v *int64Value) Type() string   { return "int" }

func (v *int64Value) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return errors.New("not a whole number")
	}
	*v.p = n
	return nil
}

// checkedString is a string validated by a function.
type checkedString struct {
	p     *string
	typ   string
	check func(string) error
	// hide keeps the value out of help and completion (tokens).
	hide bool
}

func (v *checkedString) String() string {
	if v.hide || v.p == nil {
		return ""
	}
	return *v.p
}

func (v *checkedString) Type() string { return v.typ }

func (v *checkedString) Set(s string) error {
	if err := v.check(s); err != nil {
		return err
	}
	*v.p = s
	return nil
}

// proxySpecs collects --proxy, repeatable: admin URLs or discovery specs.
type proxySpecs struct{ p *[]string }

func (v *proxySpecs) String() string { return strings.Join(*v.p, ",") }

func (v *proxySpecs) Type() string { return "url" }

func (v *proxySpecs) Set(s string) error {
	s = strings.TrimSpace(s)
	if err := config.CheckProxySpec(s); err != nil {
		return err
	}
	*v.p = append(*v.p, s)
	return nil
}

// warehouseIDs collects -w/--warehouse, repeatable and comma-separated.
type warehouseIDs struct{ p *[]string }

var warehouseIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

func (v *warehouseIDs) String() string { return strings.Join(*v.p, ",") }
func (v *warehouseIDs) Type() string   { return "id" }

func (v *warehouseIDs) Set(s string) error {
	for _, id := range strings.Split(s, ",") {
		id = strings.TrimSpace(id)
		if !warehouseIDRe.MatchString(id) {
			return errors.New("a warehouse id is letters, digits, '-' and '_' (see the warehouse's Connection details)")
		}
		*v.p = append(*v.p, id)
	}
	return nil
}

// oneOf is an enumerated string.
func oneOf(choices ...string) func(string) error {
	return func(s string) error {
		for _, c := range choices {
			if s == c {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(choices, ", "))
	}
}

func nonEmpty(what string) func(string) error {
	return func(s string) error {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("%s must not be empty", what)
		}
		return nil
	}
}

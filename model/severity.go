package model

// Rank orders severities: none < warning < critical. Unknown values rank
// as none so that a corrupt flag never outranks a real one.
func (s Severity) Rank() int {
	switch s {
	case SeverityWarning:
		return 1
	case SeverityCritical:
		return 2
	}
	return 0
}

// Max returns the higher of two severities.
func (s Severity) Max(o Severity) Severity {
	if o.Rank() > s.Rank() {
		return o
	}
	return s
}

// MaxSeverity is the highest severity among flags (SeverityNone if none).
func MaxSeverity(flags []Flag) Severity {
	m := SeverityNone
	for _, f := range flags {
		m = m.Max(f.Severity)
	}
	return m
}

// MaxSeverity is the operation's highest flag severity.
func (v OperationView) MaxSeverity() Severity { return MaxSeverity(v.Flags) }

// MaxSeverity is the endpoint's highest flag severity.
func (v EndpointView) MaxSeverity() Severity { return MaxSeverity(v.Flags) }

// HasFlag reports whether the operation carries a flag of that kind.
func (v OperationView) HasFlag(k FlagKind) bool { return hasFlag(v.Flags, k) }

// HasFlag reports whether the endpoint carries a flag of that kind.
func (v EndpointView) HasFlag(k FlagKind) bool { return hasFlag(v.Flags, k) }

func hasFlag(flags []Flag, k FlagKind) bool {
	for _, f := range flags {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// MaxSeverity is the highest severity of any flag in the snapshot: what
// `snapshot` turns into its Nagios exit code.
func (s Snapshot) MaxSeverity() Severity {
	m := SeverityNone
	for _, o := range s.Operations {
		m = m.Max(o.MaxSeverity())
	}
	for _, e := range s.Endpoints {
		m = m.Max(e.MaxSeverity())
	}
	return m
}

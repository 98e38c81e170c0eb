package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fault kinds of the --faults grammar (docs/simulator.md, Fault injection).
const (
	FaultReset        = "reset"
	FaultStale        = "stale"
	FaultThrottle     = "throttle"
	FaultThrottleBare = "throttle-bare"
	FaultUnavailable  = "unavailable"
	FaultGateway      = "gateway"
	FaultExhausted    = "exhausted"
	FaultQuota        = "quota"
	FaultLatency      = "latency"
)

// Fault is one item of a --faults spec: kind=value[@call].
type Fault struct {
	Kind     string
	P        float64       // probability in [0,1] (probabilistic kinds)
	Latency  time.Duration // latency
	Endpoint string        // exhausted
	Call     string        // "" = every call
}

// Faults is a parsed --faults spec, in the order given.
type Faults []Fault

func (f Fault) String() string {
	var v string
	switch f.Kind {
	case FaultLatency:
		v = f.Latency.String()
	case FaultExhausted:
		v = f.Endpoint
	default:
		v = strconv.FormatFloat(f.P, 'g', -1, 64)
	}
	s := f.Kind + "=" + v
	if f.Call != "" {
		s += "@" + f.Call
	}
	return s
}

func (fs Faults) String() string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, ",")
}

// ThriftCalls are the TCLIService RPC names a fault may be limited to.
var ThriftCalls = []string{
	"OpenSession", "CloseSession", "GetInfo", "ExecuteStatement", "GetTypeInfo",
	"GetCatalogs", "GetSchemas", "GetTables", "GetTableTypes", "GetColumns",
	"GetFunctions", "GetPrimaryKeys", "GetCrossReference", "GetOperationStatus",
	"CancelOperation", "CloseOperation", "GetResultSetMetadata", "FetchResults",
	"GetDelegationToken", "CancelDelegationToken", "RenewDelegationToken",
}

// RESTCalls are the databricks-sdk-go method names the REST routes answer
// to, used in @call and in /sim/v1/stats.
var RESTCalls = []string{
	"ListQueries", "GetStatement", "CancelExecution", "CloseStatement",
	"ListWarehouses", "ListEndpoints", "GetEndpoint", "ListIndexes", "GetIndex",
	"UpsertDataVectorIndex", "DeleteDataVectorIndex",
}

var knownCalls = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range ThriftCalls {
		m[c] = true
	}
	for _, c := range RESTCalls {
		m[c] = true
	}
	return m
}()

// FaultProblem names what is wrong with a refused --faults item, so that
// a caller (the command line) can word it its own way.
type FaultProblem int

const (
	FaultEmptyItem   FaultProblem = iota + 1 // ",," in the list
	FaultNoValue                             // no "=": want kind=value[@call]
	FaultUnknownCall                         // @call names no known call
	FaultUnknownKind                         // kind is not one of the fault kinds
	FaultNotANumber                          // a probability that does not parse
	FaultOutOfRange                          // a probability outside [0,1], or NaN
	FaultBadDuration                         // a latency that does not parse
	FaultNegative                            // a negative latency
	FaultNoEndpoint                          // exhausted= without an endpoint name
)

// FaultError is a refused --faults item: the one parser of the grammar
// (ParseFaults) says which item, what kind it asked for and what is wrong.
type FaultError struct {
	Spec    string // the whole spec
	Item    string // the refused item, trimmed
	Kind    string // the item's kind ("" when it has none)
	Value   string // the item's value without @call
	Call    string // the item's @call, if any
	Problem FaultProblem
}

func (e *FaultError) Error() string {
	var what string
	switch e.Problem {
	case FaultEmptyItem:
		what = fmt.Sprintf("empty item in %q", e.Spec)
	case FaultNoValue:
		what = "want kind=value[@call]"
	case FaultUnknownCall:
		what = fmt.Sprintf("unknown call %q (Thrift RPC names or %s)", e.Call, strings.Join(RESTCalls, ", "))
	case FaultNotANumber:
		what = fmt.Sprintf("probability %q is not a number", e.Value)
	case FaultOutOfRange:
		what = "probability must be in [0,1]"
	case FaultBadDuration:
		what = fmt.Sprintf("latency %q is not a duration (e.g. 250ms)", e.Value)
	case FaultNegative:
		what = "latency must not be negative"
	case FaultNoEndpoint:
		what = "exhausted needs an endpoint name"
	default:
		what = fmt.Sprintf("unknown kind %q (%s)", e.Kind, strings.Join(FaultKinds, ", "))
	}
	return fmt.Sprintf("fault %q: %s", e.Item, what)
}

// FaultKinds are the kinds of the grammar, in the order the docs list them.
var FaultKinds = []string{FaultReset, FaultStale, FaultThrottle, FaultThrottleBare,
	FaultUnavailable, FaultGateway, FaultExhausted, FaultQuota, FaultLatency}

// ParseFaults parses a comma list of kind=value[@call]. An empty spec is no
// faults. A malformed item is refused with a *FaultError that names it,
// e.g. `fault "reset=1.5": probability must be in [0,1]`.
func ParseFaults(spec string) (Faults, error) {
	var out Faults
	if strings.TrimSpace(spec) == "" {
		return out, nil
	}
	for _, raw := range strings.Split(spec, ",") {
		fe := &FaultError{Spec: spec, Item: strings.TrimSpace(raw)}
		bad := func(p FaultProblem) error { fe.Problem = p; return fe }
		if fe.Item == "" {
			return nil, bad(FaultEmptyItem)
		}
		kind, val, ok := strings.Cut(fe.Item, "=")
		if !ok {
			return nil, bad(FaultNoValue)
		}
		fe.Kind, fe.Value = strings.TrimSpace(kind), strings.TrimSpace(val)
		if v, c, has := strings.Cut(fe.Value, "@"); has {
			fe.Value, fe.Call = strings.TrimSpace(v), strings.TrimSpace(c)
			if !knownCalls[fe.Call] {
				return nil, bad(FaultUnknownCall)
			}
		}
		f := Fault{Kind: fe.Kind, Call: fe.Call}
		switch fe.Kind {
		case FaultReset, FaultStale, FaultThrottle, FaultThrottleBare,
			FaultUnavailable, FaultGateway, FaultQuota:
			p, err := strconv.ParseFloat(fe.Value, 64)
			if err != nil {
				return nil, bad(FaultNotANumber)
			}
			if p != p || p < 0 || p > 1 { // p != p: NaN
				return nil, bad(FaultOutOfRange)
			}
			f.P = p
		case FaultLatency:
			d, err := time.ParseDuration(fe.Value)
			if err != nil {
				return nil, bad(FaultBadDuration)
			}
			if d < 0 {
				return nil, bad(FaultNegative)
			}
			f.Latency = d
		case FaultExhausted:
			if fe.Value == "" {
				return nil, bad(FaultNoEndpoint)
			}
			f.Endpoint = fe.Value
		default:
			return nil, bad(FaultUnknownKind)
		}
		out = append(out, f)
	}
	return out, nil
}

// decision is what the injector chose for one request.
type decision struct {
	latency time.Duration
	answer  string // "" = answer normally; else a kind that replaces the answer
	gateway int    // 502 or 504 when answer == gateway
	stale   bool   // answer, then poison the connection for its next reuse
}

// injector draws fault decisions. Each call name has its own RNG seeded
// from (Seed, call), so the faults one call sees do not depend on how many
// requests other calls made: a run is reproducible per call.
type injector struct {
	n        atomic.Int32 // len(faults): the no-fault fast path takes no lock
	mu       sync.Mutex
	seed     int64
	faults   Faults
	rngs     map[string]*rand.Rand
	gwToggle bool
}

func newInjector(seed int64, f Faults) *injector {
	in := &injector{seed: seed, faults: f, rngs: map[string]*rand.Rand{}}
	in.n.Store(int32(len(f)))
	return in
}

func (in *injector) set(f Faults) {
	in.mu.Lock()
	in.faults = f
	in.rngs = map[string]*rand.Rand{}
	in.n.Store(int32(len(f)))
	in.mu.Unlock()
}

func (in *injector) rng(call string) *rand.Rand {
	r := in.rngs[call]
	if r == nil {
		h := fnv.New64a()
		h.Write([]byte(call))
		r = rand.New(rand.NewPCG(uint64(in.seed), h.Sum64()))
		in.rngs[call] = r
	}
	return r
}

// decide evaluates the spec for one request. Items are evaluated in order;
// latencies add up; the first answer-replacing fault that fires wins.
func (in *injector) decide(call string) decision {
	if in.n.Load() == 0 {
		return decision{}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	var d decision
	for _, f := range in.faults {
		if f.Call != "" && f.Call != call {
			continue
		}
		switch f.Kind {
		case FaultLatency:
			d.latency += f.Latency
			continue
		case FaultExhausted:
			continue // state, not a per-request draw
		}
		// Draw for every applicable item so the sequence a call sees does
		// not depend on which earlier item fired.
		fire := f.P >= 1 || (f.P > 0 && in.rng(call).Float64() < f.P)
		if !fire {
			continue
		}
		if f.Kind == FaultStale {
			d.stale = true
			continue
		}
		if d.answer == "" {
			d.answer = f.Kind
			if f.Kind == FaultGateway {
				in.gwToggle = !in.gwToggle
				d.gateway = 502
				if !in.gwToggle {
					d.gateway = 504
				}
			}
		}
	}
	return d
}

// exhausted reports whether the spec declares the endpoint full.
func (in *injector) exhausted(endpoint string) bool {
	if in.n.Load() == 0 {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, f := range in.faults {
		if f.Kind == FaultExhausted && f.Endpoint == endpoint {
			return true
		}
	}
	return false
}

package sim

import (
	"strings"
	"testing"
	"time"
)

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults(" reset=0.3@GetOperationStatus, stale=1,throttle=0.5,throttle-bare=0, unavailable=0.2@ListQueries," +
		"gateway=1@GetStatement,exhausted=vs-prod,quota=0.01,latency=250ms@FetchResults")
	if err != nil {
		t.Fatal(err)
	}
	want := Faults{
		{Kind: FaultReset, P: 0.3, Call: "GetOperationStatus"},
		{Kind: FaultStale, P: 1},
		{Kind: FaultThrottle, P: 0.5},
		{Kind: FaultThrottleBare, P: 0},
		{Kind: FaultUnavailable, P: 0.2, Call: "ListQueries"},
		{Kind: FaultGateway, P: 1, Call: "GetStatement"},
		{Kind: FaultExhausted, Endpoint: "vs-prod"},
		{Kind: FaultQuota, P: 0.01},
		{Kind: FaultLatency, Latency: 250 * time.Millisecond, Call: "FetchResults"},
	}
	if len(f) != len(want) {
		t.Fatalf("got %d items, want %d: %v", len(f), len(want), f)
	}
	for i := range want {
		if f[i] != want[i] {
			t.Errorf("item %d = %+v, want %+v", i, f[i], want[i])
		}
	}
	if f, err := ParseFaults("  "); err != nil || len(f) != 0 {
		t.Errorf("blank spec = %v, %v; want no faults", f, err)
	}
}

func TestParseFaultsErrorsNameTheItem(t *testing.T) {
	for spec, want := range map[string]string{
		"reset=1.5":             `fault "reset=1.5": probability must be in [0,1]`,
		"reset=0.1,stale=-0.1":  `fault "stale=-0.1": probability must be in [0,1]`,
		"reset=abc":             `fault "reset=abc": probability "abc" is not a number`,
		"reset=NaN":             `fault "reset=NaN": probability must be in [0,1]`,
		"boom=1":                `fault "boom=1": unknown kind "boom"`,
		"reset":                 `fault "reset": want kind=value[@call]`,
		"reset=0.5@Nope":        `fault "reset=0.5@Nope": unknown call "Nope"`,
		"latency=fast":          `fault "latency=fast": latency "fast" is not a duration`,
		"latency=-1s":           `fault "latency=-1s": latency must not be negative`,
		"exhausted=":            `fault "exhausted=": exhausted needs an endpoint name`,
		"reset=0.1,,throttle=1": `fault "": empty item`,
	} {
		_, err := ParseFaults(spec)
		if err == nil {
			t.Errorf("ParseFaults(%q) succeeded", spec)
			continue
		}
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseFaults(%q) = %q, want prefix %q", spec, err, want)
		}
	}
}

// The same seed gives the same decisions per call, whatever other calls
// happen in between; another seed gives others.
func TestInjectorDeterministicPerCall(t *testing.T) {
	f, _ := ParseFaults("reset=0.5")
	seq := func(seed int64, interleave bool) string {
		in := newInjector(seed, f)
		var b strings.Builder
		for i := 0; i < 64; i++ {
			if interleave {
				in.decide("FetchResults")
			}
			if in.decide("GetOperationStatus").answer == FaultReset {
				b.WriteByte('R')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b := seq(42, false), seq(42, true)
	if a != b {
		t.Fatalf("other calls changed GetOperationStatus's faults:\n%s\n%s", a, b)
	}
	if c := seq(43, false); c == a {
		t.Errorf("seeds 42 and 43 gave the same sequence %s", a)
	}
	if n := strings.Count(a, "R"); n < 16 || n > 48 {
		t.Errorf("reset=0.5 fired %d/64 times", n)
	}
}

func TestInjectorGatewayAlternatesAndCallFilter(t *testing.T) {
	f, _ := ParseFaults("gateway=1@GetStatement,latency=5ms,latency=7ms@GetStatement")
	in := newInjector(1, f)
	var codes []int
	for i := 0; i < 4; i++ {
		d := in.decide("GetStatement")
		if d.latency != 12*time.Millisecond {
			t.Errorf("latency = %v, want 12ms", d.latency)
		}
		codes = append(codes, d.gateway)
	}
	if codes[0] != 502 || codes[1] != 504 || codes[2] != 502 || codes[3] != 504 {
		t.Errorf("gateway codes = %v, want alternating 502/504", codes)
	}
	if d := in.decide("ListQueries"); d.answer != "" || d.latency != 5*time.Millisecond {
		t.Errorf("ListQueries got %+v; want only the unrestricted latency", d)
	}
}

func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{
		"", "reset=0.3@GetOperationStatus", "stale=1,throttle=0.5", "throttle-bare=0.1@ListQueries",
		"unavailable=1", "gateway=0.2", "exhausted=vs-prod", "quota=0.01", "latency=250ms@FetchResults",
		"reset=1.5", "reset=", "=", ",", "latency=1h2m3s", "exhausted=a@UpsertDataVectorIndex",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		fs, err := ParseFaults(spec)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fault ") {
				t.Fatalf("error does not name the item: %v", err)
			}
			return
		}
		for _, x := range fs {
			if x.P < 0 || x.P > 1 || x.Latency < 0 {
				t.Fatalf("out of range item accepted: %+v", x)
			}
		}
		// What it prints parses back to the same thing.
		again, err := ParseFaults(fs.String())
		if err != nil {
			t.Fatalf("re-parsing %q: %v", fs.String(), err)
		}
		if len(again) != len(fs) {
			t.Fatalf("round trip changed %q into %q", spec, again.String())
		}
		for i := range fs {
			if again[i] != fs[i] {
				t.Fatalf("round trip item %d: %+v != %+v", i, again[i], fs[i])
			}
		}
	})
}

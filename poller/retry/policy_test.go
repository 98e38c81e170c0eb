package retry

import (
	"testing"
	"time"
)

func TestBackoffCeilingCapped(t *testing.T) {
	for i, want := range []time.Duration{250, 500, 1000, 2000, 4000, 8000, 8000, 8000} {
		if got := ceiling(250*time.Millisecond, 8*time.Second, i+1); got != want*time.Millisecond {
			t.Errorf("ceiling(%d) = %s want %s", i+1, got, want*time.Millisecond)
		}
	}
	if lo, hi := equalJitter(8*time.Second, 0), equalJitter(8*time.Second, 0.999999); lo != 4*time.Second || hi > 8*time.Second {
		t.Errorf("jitter range [%s, %s]", lo, hi)
	}
}

// Each page of a listing is one request, retried on its own for as long
// as its elapsed limit allows; its attempt timeout is the default.
func TestListingRequestsRetriedAlone(t *testing.T) {
	p := NewPolicy(PolicyOptions{})
	for _, name := range []string{"ListQueries", "ListWarehouses", "ListEndpoints", "ListIndexes", "GetIndex"} {
		if got := p.limit(name); got.Attempts != 12 || got.Elapsed != 15*time.Second || got.Attempt != 10*time.Second {
			t.Fatalf("%s limit %+v, want 12 attempts within 15s, 10s each", name, got)
		}
	}
	if got := p.limit("GetOperationStatus").Attempt; got != 10*time.Second {
		t.Fatalf("GetOperationStatus attempt timeout %s, want the default 10s", got)
	}
	p = NewPolicy(PolicyOptions{AttemptTimeout: 2 * time.Second})
	if got := p.limit("SomethingElse").Attempt; got != 2*time.Second {
		t.Fatalf("unnamed call attempt timeout %s, want PolicyOptions.AttemptTimeout", got)
	}
}

// The budget refills only with successes: time alone never re-arms
// retries during an outage.
func TestBudgetRefillsOnlyOnSuccess(t *testing.T) {
	b := newBudget(PolicyOptions{}.withDefaults())
	n := 0
	for {
		if _, ok := b.take(false); !ok {
			break
		}
		n++
	}
	if n != 100 || b.available() != 0 {
		t.Fatalf("%d retries paid from 500 tokens at 5 each, %v left; want 100, 0", n, b.available())
	}
	b.success(0)
	if got := b.available(); got != 1 {
		t.Fatalf("after a success without retry: %v tokens, want the refund 1", got)
	}
	b.success(5)
	if got := b.available(); got != 6 {
		t.Fatalf("after a success whose retry paid 5: %v tokens, want 6", got)
	}
}

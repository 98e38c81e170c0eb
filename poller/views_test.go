package poller

import (
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

var viewsTestThresholds = model.Thresholds{InactivityWarn: 5 * time.Second, ServerIdleTimeout: time.Minute, LeakAfter: time.Minute}

// A touched operation is compared at the next compare; a flag that time
// raises comes from the due heap without a touch; the view is shared
// until something changes.
func TestViewCacheComparesTouchedAndDue(t *testing.T) {
	c := newViewCache(viewsTestThresholds)
	t0 := time.Unix(1000, 0)
	en := testEntry("a", model.StateRunning)
	en.op.StartedAt, en.op.FirstSeenAt, en.op.LastPollOKAt = t0, t0, t0
	var evs []model.Event
	emit := func(ev model.Event) { evs = append(evs, ev) }
	c.touch(en)
	c.compare(t0, emit)
	if len(evs) != 0 {
		t.Fatalf("events for a fresh operation: %+v", evs)
	}
	if err := c.check([]*entry{en}, t0); err != nil {
		t.Fatal(err)
	}
	v1 := c.view(en, t0)
	if v2 := c.view(en, t0); v2 != v1 {
		t.Fatal("an untouched view was built again")
	}
	// No confirmation for 6 s: STALE comes with time alone.
	later := t0.Add(6 * time.Second)
	c.compare(later, emit)
	if len(evs) != 1 || evs[0].Kind != model.EventFlagRaised || evs[0].Flag.Kind != model.FlagStale {
		t.Fatalf("events after 6 s without a poll: %+v", evs)
	}
	// A confirmation clears it at the next compare.
	c.touch(en)
	en.op.LastPollOKAt = later
	c.compare(later, emit)
	if len(evs) != 2 || evs[1].Kind != model.EventFlagCleared {
		t.Fatalf("events after the confirmation: %+v", evs)
	}
	if err := c.check([]*entry{en}, later); err != nil {
		t.Fatal(err)
	}
}

// The cache's check catches a change made without a touch, and a view
// whose deadline is not in the due heap.
func TestViewCacheCheckCatchesBrokenInvariants(t *testing.T) {
	c := newViewCache(viewsTestThresholds)
	t0 := time.Unix(1000, 0)
	en := testEntry("a", model.StateRunning)
	en.op.StartedAt, en.op.LastPollOKAt = t0, t0
	c.touch(en)
	c.compare(t0, func(model.Event) {})
	en.dirty = true // written without touch
	if err := c.check([]*entry{en}, t0); err == nil || !strings.Contains(err.Error(), "without waiting for a compare") {
		t.Fatalf("check = %v, want a change without touch", err)
	}
	en.dirty = false
	c.due.remove(en)
	if err := c.check([]*entry{en}, t0); err == nil || !strings.Contains(err.Error(), "not due by then") {
		t.Fatalf("check = %v, want the deadline missing from the due heap", err)
	}
}

// CLOSE_FAILED that clears because the operation is closed says who
// closed it in the flag-cleared event; an endpoint's cleared flag names
// no closer.
func TestCloseFailedClearedNamesWhoClosed(t *testing.T) {
	c := newViewCache(viewsTestThresholds)
	now := time.Unix(2000, 0)
	var evs []model.Event
	emit := func(e model.Event) { evs = append(evs, e) }
	failed := []model.Flag{{Kind: model.FlagCloseFailed, Severity: model.SeverityCritical}}
	op := &model.Operation{StatementID: "s1", State: model.StateFinished,
		Proxy: &model.ProxyAccount{CloseOutcome: "closed_by_proxy"}}
	c.diff("s1", "s1", "", failed, op, now, emit)
	c.diff("s1", "s1", "", nil, op, now, emit)
	if len(evs) != 2 || evs[1].Kind != model.EventFlagCleared {
		t.Fatalf("events %+v, want raised then cleared", evs)
	}
	if want := "CLOSE_FAILED cleared: closed by the proxy's close queue"; evs[1].Message != want {
		t.Errorf("cleared event %q, want %q", evs[1].Message, want)
	}
	evs = nil
	c.diff("endpoint:vs", "", "vs", failed, nil, now, emit)
	c.diff("endpoint:vs", "", "vs", nil, nil, now, emit)
	if len(evs) != 2 || evs[1].Message != "CLOSE_FAILED cleared" {
		t.Errorf("endpoint events %+v", evs)
	}
}

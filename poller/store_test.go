package poller

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

func testEntry(id string, st model.State) *entry {
	return newEntry(model.Operation{StatementID: id, State: st}, sources.Ref{StatementID: id})
}

func ids(ens []*entry) []string {
	out := make([]string, len(ens))
	for i, en := range ens {
		out[i] = en.op.StatementID
	}
	return out
}

// The store lists its operations by statement id however they arrive,
// without the forgotten ones, and counts the live ones.
func TestStoreOrderAndLiveness(t *testing.T) {
	s := newStore()
	for _, id := range []string{"c", "a", "e"} {
		s.add(testEntry(id, model.StateRunning))
	}
	if got := ids(s.ordered()); !slices.Equal(got, []string{"a", "c", "e"}) {
		t.Fatalf("ordered %v", got)
	}
	for _, id := range []string{"d", "b"} { // between those already sorted
		s.add(testEntry(id, model.StateFinished))
	}
	if got := ids(s.ordered()); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("ordered after a merge %v", got)
	}
	for _, en := range s.ordered() {
		s.addLive(en)
	}
	if n := s.countLive(); n != 3 {
		t.Fatalf("%d live, want 3 (a, c, e)", n)
	}
	c := s.get("c")
	c.op.State = model.StateFinished
	s.retire(c, time.Unix(0, 0))
	if n := s.countLive(); n != 2 || c.inLive {
		t.Fatalf("%d live after c ended (in live %v), want 2", n, c.inLive)
	}
	s.sweep(time.Unix(0, 0).Add(retainFor+time.Second), func(*entry) {})
	if got := ids(s.ordered()); !slices.Equal(got, []string{"a", "b", "d", "e"}) || s.get("c") != nil {
		t.Fatalf("after c was swept: %v", got)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
}

// The store's check catches what would break a snapshot: an operation
// followed but missing from the order, or counted live when it is not.
func TestStoreCheckCatchesBrokenInvariants(t *testing.T) {
	s := newStore()
	s.add(testEntry("a", model.StateRunning))
	s.addLive(s.get("a"))
	s.ops["b"] = testEntry("b", model.StateRunning) // followed without add
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "1 entries in order, 2 followed") {
		t.Fatalf("check = %v, want the missing order entry", err)
	}
	delete(s.ops, "b")
	s.add(testEntry("c", model.StateRunning)) // live but never counted
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "live c not counted live") {
		t.Fatalf("check = %v, want c not counted live", err)
	}
}

// An entry is held for every followed operation: its size class is most
// of the heap per operation, a goal with little headroom
// (docs/performance.md). 640 bytes is the allocator's class below 704;
// one more field in the next class costs 64 bytes an operation.
func TestEntryFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 640 {
		t.Errorf("entry is %d bytes, over the 640-byte size class: the heap goal per operation fails (pack the new field with the others, or measure the goal again)", n)
	}
}

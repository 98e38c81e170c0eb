package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// TestStrictServerOpennessIsUnknown: on the simulator as it is by default
// (handle secrets checked, the Statement Execution API knowing only its
// own statements), dbxtop without the proxy cannot know whether another
// client's ended operation is still open. The snapshot says so — openness
// unknown, the note naming the proxy — instead of reading the 404s as
// "gone" (closed, no flag: a false OK) or guessing UNCLOSED. A running
// operation stays running, not gone.
func TestStrictServerOpennessIsUnknown(t *testing.T) {
	t.Parallel()
	budget(t)
	srv := startSimServer(t, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	owner, sess := leakyOwner(ctx, t, srv)
	ended := leakEnded(ctx, t, owner, sess, 3)
	running, err := owner.Execute(ctx, sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.CancelOperation(context.Background(), running.Ref) }()
	s, r := snapshotPastLeakAfter(t, srv, time.Now())
	found := 0
	for _, v := range s.Operations {
		isEnded, isRunning := slices.Contains(ended, v.StatementID), v.StatementID == running.Ref.StatementID
		if !isEnded && !isRunning {
			continue
		}
		found++
		var kinds []model.FlagKind
		for _, f := range v.Flags {
			kinds = append(kinds, f.Kind)
		}
		b, _ := json.Marshal(v)
		switch {
		case v.Open != nil || v.Gone || slices.Contains(kinds, model.FlagUnclosed):
			t.Errorf("%s: open %v, gone %v, flags %v: want openness unknown, neither gone nor UNCLOSED\n%s", v.StatementID, v.Open, v.Gone, kinds, b)
		case isEnded && (!v.State.Terminal() || !strings.Contains(v.StatusNote, "dbxtop proxy")):
			t.Errorf("%s: state %s, note %q: want its end, and a note naming the proxy\n%s", v.StatementID, v.State, v.StatusNote, b)
		case isRunning && !v.State.Live():
			t.Errorf("running %s: state %s, want RUNNING\n%s", v.StatementID, v.State, b)
		}
	}
	if found != len(ended)+1 {
		t.Fatalf("%d of the %d operations are in the snapshot:\n%s", found, len(ended)+1, r.stdout)
	}
	if r.code == 3 {
		t.Errorf("exit 3 (could not observe): %s", r.stderr)
	}
}

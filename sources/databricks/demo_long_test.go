package databricks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// TestSnapshotAfterDemoScenario is the demo-vs-truth check: run the demo
// scenario for its two minutes, then `dbxtop snapshot --json`, and compare
// with the simulator's ground truth. CI runs it compressed six times (20 s
// of wall time, thresholds scaled alike); DBXTOP_LONG=1 runs the real two
// minutes; DBXTOP_DEMO_SPEED=N picks another compression. It never skips.
func TestSnapshotAfterDemoScenario(t *testing.T) {
	speed := 6.0
	if os.Getenv("DBXTOP_LONG") == "1" {
		speed = 1
	}
	if v, err := strconv.ParseFloat(os.Getenv("DBXTOP_DEMO_SPEED"), 64); err == nil && v >= 1 {
		speed = v
	}
	// Thresholds are scaled with the scenario, but never below 10 s: a
	// threshold shorter than one snapshot round (several seconds under
	// -race on a busy machine) would flag healthy operations — no monitor
	// can see faster than it polls. The scenario runs half that longer, so
	// that abandoned statements are due.
	const floor = 10 * time.Second
	scaled := func(d time.Duration) time.Duration {
		return max(time.Duration(float64(d)/speed), floor)
	}
	scale := func(d time.Duration) string { return fmt.Sprintf("%dms", scaled(d).Milliseconds()) }
	warn, leak := scaled(15*time.Second), scaled(20*time.Second)
	// The server's reaper (the simulator's and dbxtop's word for it) well
	// after the warning, so that an abandoned statement is INACTIVE for a
	// while before it is REAPED.
	idle := max(time.Duration(float64(90*time.Second)/speed), 3*floor)
	// INACTIVE for the direct abandons needs the opt-in owner-activity
	// extension (without a proxy no server tells it), and lenient handles:
	// dbxtop reads the direct clients' operations through handles rebuilt
	// from statement ids, not through the proxy.
	s := startSim(t, sim.Options{Scenario: "demo", Seed: 1, Speed: speed, IdleTimeout: idle, OwnerActivity: true, LenientHandles: true})
	// Wait out the scenario's timeline (a deadline on the simulated
	// workload, not a synchronisation guess).
	<-time.After(time.Duration(float64(2*time.Minute)/speed) + floor/2)

	truth := s.Truth()
	args := []string{"--host", s.URL(), "--json", "--capacity-probe"}
	if lf := os.Getenv("DBXTOP_LOG_FILE"); lf != "" {
		args = append(args, "--log-file", lf)
	}
	r := snapshot(t, append(args,
		"--inactivity-warn", scale(15*time.Second), "--server-idle-timeout", fmt.Sprintf("%dms", idle.Milliseconds()), "--leak-after", scale(20*time.Second))...)
	if r.code == 3 {
		t.Fatalf("could not observe: %s", r.stderr)
	}
	snap := decode(t, r.stdout)
	byID := map[string]*model.OperationView{}
	for _, o := range snap.Operations {
		byID[o.StatementID] = o
	}
	kinds := map[string]int{}
	dueAbandons := 0 // abandoned statements the check below holds to INACTIVE or REAPED
	excused := 0     // healthy statements flagged by the round's length alone
	for _, op := range truth.Operations {
		kinds[op.ClientKind]++
		got, seen := byID[op.StatementID]
		live := op.State == "PENDING" || op.State == "RUNNING"
		if live && !seen {
			t.Errorf("non-terminal %s %s (%s) missing from the snapshot", op.ClientKind, op.StatementID, op.State)
			continue
		}
		if !seen {
			continue
		}
		if os.Getenv("DBXTOP_DEBUG") != "" {
			b, _ := json.Marshal(got)
			t.Logf("truth %+v\n  snapshot %s", op, b)
		}
		switch op.ClientKind {
		case "abandons":
			// Due once its owner has been idle for the warning threshold
			// (plus a second of sampling).
			due := snap.GeneratedAt.Sub(op.OwnerLastActivity) >= warn+time.Second
			if op.State == "RUNNING" && due {
				dueAbandons++
			}
			if op.State == "RUNNING" && due && !got.HasFlag(model.FlagInactive) && !got.HasFlag(model.FlagReaped) {
				t.Errorf("abandoned %s still running but not INACTIVE/REAPED: flags %v", op.StatementID, got.Flags)
			}
		case "close_fails":
			if op.Open && (op.State == "FINISHED" || op.State == "FAILED" || op.State == "CANCELED") &&
				!got.CompletedAt.IsZero() && snap.GeneratedAt.Sub(got.CompletedAt) >= leak &&
				!got.HasFlag(model.FlagUnclosed) {
				t.Errorf("close_fails %s open for ≥ leak-after but not UNCLOSED: flags %v", op.StatementID, got.Flags)
			}
		case "healthy":
			// A round longer than a threshold (a loaded machine: 11 to 30 s
			// under -race at a load average of 36) reads some operations
			// that long before the snapshot's instant: their flags then
			// come from the round's own length, and are excused only so.
			lag := snap.GeneratedAt.Sub(got.LastPollOKAt)
			if len(got.Flags) > 0 && lag <= r.elapsed && lag >= min(warn, leak)-2*time.Second {
				excused++
			} else if len(got.Flags) > 0 {
				t.Errorf("healthy %s carries flags %v (last read %v before the snapshot, its round %v long)", op.StatementID, got.Flags, lag, r.elapsed)
			}
		}
	}
	if dueAbandons == 0 {
		t.Error("no abandoned statement was due: the INACTIVE/REAPED check held nothing")
	}
	flags := map[model.FlagKind]int{}
	for _, o := range snap.Operations {
		for _, f := range o.Flags {
			flags[f.Kind]++
		}
	}
	for _, e := range snap.Endpoints {
		for _, f := range e.Flags {
			flags[f.Kind]++
		}
	}
	t.Logf("truth: %d operations %v; snapshot: %d operations, flags %v, exit %d, in %v; %d abandoned statements due; %d healthy flagged by the round's length", len(truth.Operations), kinds, len(snap.Operations), flags, r.code, r.elapsed, dueAbandons, excused)
	for _, te := range truth.Endpoints {
		if !te.Exhausted {
			continue
		}
		var ok bool
		for _, ep := range snap.Endpoints {
			if ep.Name == te.Name {
				ok = ep.HasFlag(model.FlagExhausted) && ep.LastError != nil && ep.LastError.RequestID != "" && ep.LastError.Message != ""
				if !ok {
					t.Errorf("full endpoint %s: flags %v last error %+v", te.Name, ep.Flags, ep.LastError)
				}
			}
		}
		if !ok {
			t.Errorf("full endpoint %s not reported EXHAUSTED with message and request id", te.Name)
		}
	}
	_ = context.Background
}

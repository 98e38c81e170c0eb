package cmd

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

type fakeActor struct {
	mu     sync.Mutex
	snap   model.Snapshot
	closed chan string
}

func (f *fakeActor) Snapshot() model.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap
}

func (f *fakeActor) Close(_ context.Context, id string) error {
	f.closed <- id
	return nil
}

func TestDemoOperatorRecloseOneLeak(t *testing.T) {
	unclosed := []model.Flag{{Kind: model.FlagUnclosed, Severity: model.SeverityWarning}}
	f := &fakeActor{closed: make(chan string, 4), snap: model.Snapshot{Operations: []*model.OperationView{
		{Operation: &model.Operation{StatementID: "healthy", State: model.StateRunning}},
		{Operation: &model.Operation{StatementID: "tried", Close: model.CloseInfo{State: model.CloseFailed}}, Flags: unclosed},
		{Operation: &model.Operation{StatementID: "leak-1", Close: model.CloseInfo{State: model.CloseNA}}, Flags: unclosed},
		{Operation: &model.Operation{StatementID: "leak-2", Close: model.CloseInfo{State: model.CloseNA}}, Flags: unclosed},
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); demoOperator(ctx, f, time.Millisecond, t.Logf) }()
	select {
	case id := <-f.closed:
		if id != "leak-1" {
			t.Errorf("re-closed %q, want leak-1 (never tried, UNCLOSED)", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no scripted re-close")
	}
	cancel()
	<-done
	// One per demoReclosePeriod: the second leak waits for the next period.
	select {
	case id := <-f.closed:
		t.Errorf("a second re-close (%q) within the period", id)
	default:
	}
}

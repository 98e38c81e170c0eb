package cmd

import (
	"context"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// demoActor is what the demo's scripted operator needs of the engine.
type demoActor interface {
	Snapshot() model.Snapshot
	Close(ctx context.Context, statementID string) error
}

// demoReclosePeriod spaces the scripted re-closes: one leak at a time, so
// UNCLOSED rows stay on screen for the real operator too.
const demoReclosePeriod = 60 * time.Second

// demoOperator is `dbxtop demo`'s scripted operator. dbxtop never closes
// anything on its own, so CLOSE_FAILED (a close dbxtop sent that failed)
// would only appear if the person trying the demo re-closed a leak under
// a fault. To show every flag kind without anyone at the keyboard, the
// demo re-closes one UNCLOSED operation dbxtop never tried to close, at
// most once per demoReclosePeriod; the simulator fails the first observer
// close of its close_fails statements, so the row turns CLOSE_FAILED and
// then closes on the engine's retry. Only in the demo, never with
// --read-only; the Events view shows the close like any operator action.
func demoOperator(ctx context.Context, eng demoActor, tick time.Duration, logf func(string, ...any)) {
	t := time.NewTicker(tick)
	defer t.Stop()
	tried := map[string]bool{}
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if !last.IsZero() && now.Sub(last) < demoReclosePeriod {
				continue
			}
			if id := demoLeak(eng.Snapshot(), tried); id != "" {
				tried[id], last = true, now
				if err := eng.Close(ctx, id); err != nil {
					logf("demo: scripted re-close of %s: %v (the engine retries it)", id, err)
				}
			}
		}
	}
}

// demoLeak is an UNCLOSED operation dbxtop never tried to close.
func demoLeak(s model.Snapshot, tried map[string]bool) string {
	for i := range s.Operations {
		op := s.Operations[i]
		if op.HasFlag(model.FlagUnclosed) && !op.Gone && op.Close.State == model.CloseNA && !tried[op.StatementID] {
			return op.StatementID
		}
	}
	return ""
}

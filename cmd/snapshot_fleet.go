package cmd

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
)

// fleetObserver is `snapshot` over the selected contexts: one observer
// (connection and engine) per workspace, observed in parallel, merged
// into one snapshot that reports per workspace (model.Merge). With one
// workspace it is that workspace's observer, unchanged.
type fleetObserver struct {
	names  []string
	obs    []*observer
	window time.Duration
}

func newFleetObserver(ctx context.Context, cfg SnapshotConfig, logf func(string, ...any)) (*fleetObserver, error) {
	f := &fleetObserver{window: cfg.Window}
	for _, t := range cfg.targets() {
		c := cfg
		c.WorkspaceConfig = t.ws
		o, err := newObserver(ctx, c, logf)
		if err != nil {
			f.close()
			return nil, err
		}
		f.names = append(f.names, t.label(o.conn.rest.Host()))
		f.obs = append(f.obs, o)
	}
	return f, nil
}

func (f *fleetObserver) close() {
	for _, o := range f.obs {
		o.conn.close()
	}
}

// observe: with several workspaces, a workspace that could not be
// observed is down in workspaces[] with its error (so the exit status is
// 3 unless something seen is critical); the error is returned only when
// no workspace could be observed.
func (f *fleetObserver) observe(ctx context.Context, timeout time.Duration) (model.Snapshot, error) {
	if len(f.obs) == 1 {
		return f.obs[0].observe(ctx, timeout)
	}
	parts := make([]model.NamedSnapshot, len(f.obs))
	errs := make([]error, len(f.obs))
	var wg sync.WaitGroup
	for i, o := range f.obs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := o.observe(ctx, timeout)
			if err != nil {
				info := retry.ErrorInfoOf(err)
				s.Errors = append(s.Errors, *info)
			}
			parts[i] = model.NamedSnapshot{Name: f.names[i], Up: err == nil, Snapshot: s}
			errs[i] = err
		}()
	}
	wg.Wait()
	m := model.Merge(parts)
	m.Clients = model.AggregateClients(m.Operations, m.GeneratedAt, f.window)
	for _, err := range errs {
		if err == nil {
			return m, nil
		}
	}
	return m, errs[0]
}

func (f *fleetObserver) print(w io.Writer, s model.Snapshot, cfg SnapshotConfig) error {
	return f.obs[0].print(w, s, cfg)
}

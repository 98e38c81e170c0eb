package sim

import (
	"sync"
	"time"
)

// hint is what the workload wants for a statement it is about to execute:
// who runs it and how long it runs. The simulated clients use the same
// Thrift client as dbxtop, which has no place for such metadata, so the
// in-process workload tells the server directly, keyed by (client kind,
// SQL text), first in first out.
type hint struct {
	user, app string
	run       time.Duration
	fail      string
	rows      int64
}

type hints struct {
	mu sync.Mutex
	m  map[string][]hint
}

func (h *hints) push(kind, sql string, v hint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string][]hint{}
	}
	k := kind + "\x00" + sql
	h.m[k] = append(h.m[k], v)
}

func (h *hints) pop(kind, sql string) (hint, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := kind + "\x00" + sql
	q := h.m[k]
	if len(q) == 0 {
		return hint{}, false
	}
	v := q[0]
	if len(q) == 1 {
		delete(h.m, k)
	} else {
		h.m[k] = q[1:]
	}
	return v, true
}

// drop forgets a hint whose statement never reached the server.
func (h *hints) drop(kind, sql string) { h.pop(kind, sql) }

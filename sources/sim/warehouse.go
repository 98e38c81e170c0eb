package sim

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Warehouse states, as ListWarehouses reports them.
const (
	WarehouseRunning  = "RUNNING"
	WarehouseStarting = "STARTING"
	WarehouseStopped  = "STOPPED"
)

// warehouse is one simulated SQL warehouse and its power state. Databricks
// documents that a stopped warehouse starts again when "a connection is
// established to a stopped warehouse from a JDBC/ODBC interface": here,
// any Thrift request to its HTTP path. That start is what costs money, so
// it is counted by who caused it (warehouseStarts).
type warehouse struct {
	id, name, size string
	spare          bool // not used by the workload (the demo's stopped warehouse)

	mu         sync.Mutex
	state      string
	readyAt    time.Time // STARTING → RUNNING at this time
	lastActive time.Time // last client (non-observer) request, or a live operation
}

// stateAt advances the time-driven start and returns the state as of now.
func (w *warehouse) stateAt(now time.Time) string {
	if w.state == WarehouseStarting && !now.Before(w.readyAt) {
		w.state = WarehouseRunning
		w.lastActive = now
	}
	return w.state
}

// warehouseStarts counts the starts of stopped warehouses, by who caused
// them: "observer" (a monitor: User-Agent with dbxtop/ or dbxtop-proxy/)
// or "clients" (anyone else).
type warehouseStarts struct {
	Observer atomic.Int64
	Clients  atomic.Int64
}

// WarehouseStarts is the "warehouse_starts" member of /sim/v1/stats.
type WarehouseStarts struct {
	Observer int64 `json:"observer"`
	Clients  int64 `json:"clients"`
}

// startedByObserver reports whether a request that started a warehouse
// came from a monitor (dbxtop itself or its proxy's own calls).
func startedByObserver(ua string) bool {
	for _, tok := range strings.Fields(ua) {
		if strings.HasPrefix(tok, "dbxtop/") || strings.HasPrefix(tok, "dbxtop-proxy/") {
			return true
		}
	}
	return false
}

// admitThrift applies the warehouse's power state to one Thrift request.
// A running warehouse serves it (a client's request keeps it awake; an
// observer's does not: watching must not keep a warehouse billing). A
// stopped one is started by the request — counted — and, like a starting
// one, answers 503 TEMPORARILY_UNAVAILABLE with a Retry-After until it is
// running. It reports whether the request may be served.
func (s *Server) admitThrift(w http.ResponseWriter, ci *callInfo) bool {
	wh := s.warehouse(ci.warehouse)
	if wh == nil {
		return true // unknown warehouses are answered by the caller
	}
	now := s.o.Clock.Now()
	wh.mu.Lock()
	st := wh.stateAt(now)
	if st == WarehouseStopped {
		wh.state, wh.readyAt = WarehouseStarting, now.Add(s.o.StartDelay)
		st = WarehouseStarting
		who := "a client"
		if startedByObserver(ci.ua) {
			s.starts.Observer.Add(1)
			who = "an observer"
		} else {
			s.starts.Clients.Add(1)
		}
		s.o.Logger.Info("sim: warehouse started", "warehouse", wh.id, "by", who, "call", ci.call)
	}
	if st == WarehouseRunning {
		if !ci.observer {
			wh.lastActive = now
		}
		wh.mu.Unlock()
		return true
	}
	wait := wh.readyAt.Sub(now)
	wh.mu.Unlock()
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(wait, time.Second).Seconds()))))
	writeAPIError(w, http.StatusServiceUnavailable, "TEMPORARILY_UNAVAILABLE",
		fmt.Sprintf("SQL warehouse %s is starting; retry in a few seconds.", wh.id))
	return false
}

// warehouse returns the warehouse with that id, or nil.
func (s *Server) warehouse(id string) *warehouse {
	for _, w := range s.warehouses {
		if w.id == id {
			return w
		}
	}
	return nil
}

// autoStop stops every running warehouse that has been idle — no client
// request and no live operation — for AutoStop. Called from the reaper.
func (s *Server) autoStop() {
	if s.o.AutoStop <= 0 {
		return
	}
	now := s.o.Clock.Now()
	busy := s.store.liveWarehouses()
	for _, wh := range s.warehouses {
		wh.mu.Lock()
		if wh.stateAt(now) == WarehouseRunning {
			if busy[wh.id] {
				wh.lastActive = now
			} else if now.Sub(wh.lastActive) >= s.o.AutoStop {
				wh.state = WarehouseStopped
				s.o.Logger.Info("sim: warehouse stopped", "warehouse", wh.id, "idle", s.o.AutoStop)
			}
		}
		wh.mu.Unlock()
	}
}

// WarehouseState is the warehouse's state now ("" for an unknown id).
func (s *Server) WarehouseState(id string) string {
	wh := s.warehouse(id)
	if wh == nil {
		return ""
	}
	wh.mu.Lock()
	defer wh.mu.Unlock()
	return wh.stateAt(s.o.Clock.Now())
}

// StoppedWarehouseIDs lists the spare warehouses that start stopped (the
// workload never uses them; the demo has one).
func (s *Server) StoppedWarehouseIDs() []string {
	var ids []string
	for _, w := range s.warehouses {
		if w.spare {
			ids = append(ids, w.id)
		}
	}
	return ids
}

// AllWarehouseIDs lists every warehouse ListWarehouses shows, the
// workload's first, then the spare ones.
func (s *Server) AllWarehouseIDs() []string {
	ids := make([]string, len(s.warehouses))
	for i, w := range s.warehouses {
		ids[i] = w.id
	}
	return ids
}

// seedSpareHistory gives each stopped spare warehouse a few statements
// that finished and were closed before it stopped: they are in query
// history within dbxtop's discovery window, so an observer that polled
// them over Thrift would start the warehouse.
func (s *Server) seedSpareHistory() {
	now := s.o.Clock.Now()
	for _, wh := range s.warehouses {
		if !wh.spare {
			continue
		}
		for i, sql := range []string{
			"SELECT region, sum(amount) FROM finance.ledger GROUP BY region",
			"SELECT count(*) FROM finance.invoices WHERE status = 'open'",
			"OPTIMIZE finance.ledger",
		} {
			// Closed 45–85 s ago: in history for most of the demo's
			// 5-minute retention.
			start := now.Add(-time.Duration(60+20*i) * time.Second)
			s.store.addClosed(wh.id, "dave@example.com", "PowerBI", sql, start, start.Add(15*time.Second))
		}
	}
}

// autoStopMins is the auto_stop_mins ListWarehouses reports (0: never).
func autoStopMins(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return max(1, int(d/time.Minute))
}

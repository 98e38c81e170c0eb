package serve

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// EventJSON is one line of /api/v1/events (newline-delimited JSON).
type EventJSON struct {
	At          time.Time        `json:"at"`
	Kind        string           `json:"kind"`
	Workspace   string           `json:"workspace,omitempty"`
	StatementID string           `json:"statement_id,omitempty"`
	Endpoint    string           `json:"endpoint,omitempty"`
	Call        string           `json:"call,omitempty"`
	Message     string           `json:"message"`
	RequestID   string           `json:"request_id,omitempty"`
	Error       *model.ErrorInfo `json:"error,omitempty"`
	Flag        *model.Flag      `json:"flag,omitempty"`
}

// EncodeEvent and DecodeEvent convert between the engine's events and
// their wire form (the attach client decodes what serve encodes). The
// wire carries server text, so it is sanitised like every other output.
func EncodeEvent(ev model.Event) EventJSON {
	ev = model.SanitizeEvent(ev)
	return EventJSON{At: ev.At, Kind: string(ev.Kind), Workspace: ev.Workspace, StatementID: ev.StatementID,
		Endpoint: ev.Endpoint, Call: ev.Call, Message: ev.Message, RequestID: ev.RequestID, Error: ev.Err, Flag: ev.Flag}
}

// DecodeEvent is EncodeEvent's inverse. The event comes from another
// process (attach reads serve's stream), so it is cleaned here, where it
// is decoded: every string made safe for one line, an unknown kind
// replaced (model.SanitizeEvent).
func DecodeEvent(e EventJSON) model.Event {
	return model.SanitizeEvent(model.Event{At: e.At, Kind: model.EventKind(e.Kind), Workspace: e.Workspace, StatementID: e.StatementID,
		Endpoint: e.Endpoint, Call: e.Call, Message: e.Message, RequestID: e.RequestID, Err: e.Error, Flag: e.Flag})
}

// subscriberBuffer bounds what a slow /api/v1/events reader can hold up:
// beyond it, its oldest events are dropped, never the poller stalled.
const subscriberBuffer = 1024

// hub fans the fleet's single event stream out to every subscriber.
type hub struct {
	mu   sync.Mutex
	subs map[chan model.Event]bool // true once the reader lost an event
	// onDrop is told when a reader first loses events (serve's WARN).
	onDrop func()
	closed bool
	done   chan struct{}
}

func newHub() *hub { return &hub{subs: map[chan model.Event]bool{}, done: make(chan struct{})} }

func (h *hub) subscribe() (chan model.Event, func()) {
	ch := make(chan model.Event, subscriberBuffer)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.subs[ch] = false
	}
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

func (h *hub) publish(ev model.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch, dropped := range h.subs {
		select {
		case ch <- ev:
		default: // drop the oldest for this reader only
			if !dropped {
				h.subs[ch] = true
				if h.onDrop != nil {
					h.onDrop()
				}
			}
			select {
			case <-ch:
			default:
			}
			select {
			case ch <- ev:
			default:
			}
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

// events streams newline-delimited JSON events until the client goes away
// or serve stops.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	ch, unsubscribe := s.hub.subscribe()
	defer unsubscribe()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.hub.done:
			return
		case ev := <-ch:
			if err := enc.Encode(EncodeEvent(ev)); err != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
	}
}

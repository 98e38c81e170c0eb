package serve

import (
	"strings"
	"testing"

	"github.com/dbxtop/dbxtop/model"
)

// /api/v1/events carries server text: it leaves serve as clean as the TUI
// draws it (no escape sequence, no control character, no bidi override).
func TestEncodeEventSanitisesServerText(t *testing.T) {
	hostile := "x\x1b]52;c;cHduZWQ=\x07\x1b[2J\u202e\x9bq\ny"
	ev := model.Event{Kind: model.EventGiveUp, StatementID: hostile, Endpoint: hostile, Call: hostile,
		Message: hostile, RequestID: hostile, Err: &model.ErrorInfo{Message: hostile, RequestID: hostile},
		Flag: &model.Flag{Detail: hostile}}
	e := EncodeEvent(ev)
	for name, s := range map[string]string{"statement_id": e.StatementID, "endpoint": e.Endpoint, "call": e.Call,
		"message": e.Message, "request_id": e.RequestID, "error.message": e.Error.Message,
		"error.request_id": e.Error.RequestID, "flag.detail": e.Flag.Detail} {
		if strings.ContainsAny(s, "\x1b\x07\n\u202e\u009b") {
			t.Errorf("%s is not clean: %q", name, s)
		}
	}
	if ev.Flag.Detail != hostile {
		t.Errorf("encoding changed the engine's event: %q", ev.Flag.Detail)
	}
}

// A reader too slow for its buffer loses its oldest events, and serve is
// told once per reader (its log's WARN), not once per event lost.
func TestHubTellsOnceWhenAReaderLosesEvents(t *testing.T) {
	h := newHub()
	drops := 0
	h.onDrop = func() { drops++ }
	ch, unsubscribe := h.subscribe()
	defer unsubscribe()
	for i := 0; i < subscriberBuffer+10; i++ {
		h.publish(model.Event{Message: "m"})
	}
	if drops != 1 || len(ch) != subscriberBuffer {
		t.Errorf("told %d times, %d events held; want once, %d held", drops, len(ch), subscriberBuffer)
	}
}

package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// Client is a running serve seen from `dbxtop attach`: it offers what the
// TUI needs from an engine (snapshot, events, health, actions), all
// through serve's API, so many operators share one poller. Actions obey
// serve's --read-only (serve refuses them; Client reports
// poller.ErrReadOnly).
type Client struct {
	base, token string
	act         string       // the act token; "" → actions are not offered
	hc          *http.Client // bounded requests
	shc         *http.Client // the event stream: no overall timeout
	events      chan model.Event
	readOnly    bool
	refresh     time.Duration

	// maxBody bounds what Client reads from serve in one answer.
	maxBody int64

	mu   sync.Mutex
	last model.Snapshot
}

// MaxAnswer is attach's cap on one answer from serve (a snapshot): a serve
// answering more is told apart from a broken connection, and attach stops
// reading at the cap.
const MaxAnswer = 64 << 20

// Attach checks that url is a serve that accepts token (the read token)
// and returns a client; the error says which (unreachable, wrong token,
// not a serve). Actions are sent with act, serve's act token; without it,
// or when serve takes no actions, the client is read-only.
//
// The client follows no redirect: Go's client would resend the token to
// another port of the same host (or, for a scheme change, in clear), so a
// redirect is an error naming where it pointed.
func Attach(ctx context.Context, url, token, act string, hc *http.Client) (*Client, error) {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	own := *hc
	own.CheckRedirect = refuseRedirect
	hc = &own
	shc := *hc
	shc.Timeout = 0
	c := &Client{base: strings.TrimRight(url, "/"), token: token, act: act, hc: hc, shc: &shc, events: make(chan model.Event, 4096), maxBody: MaxAnswer}
	var h HealthInfo
	if err := c.getJSON(ctx, "/api/v1/health", &h); err != nil {
		return nil, err
	}
	c.readOnly = h.ReadOnly || !h.Actions || act == ""
	if d, err := time.ParseDuration(h.Refresh); err == nil && d > 0 {
		c.refresh = d
	}
	return c, nil
}

// ErrRedirect is serve answering with a redirect, which attach never
// follows.
var ErrRedirect = errors.New("serve answered with a redirect; attach follows none (the token would go along): give serve's own URL, its first line's listen=")

func refuseRedirect(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("%w (it pointed to %s)", ErrRedirect, textfmt.Line(req.URL.Redacted()))
}

func (c *Client) do(ctx context.Context, method, path string) (*http.Response, error) {
	return c.doWith(ctx, c.hc, method, path)
}

func (c *Client) doWith(ctx context.Context, hc *http.Client, method, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	token := c.token
	if method == http.MethodPost && c.act != "" {
		token = c.act
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		var e struct {
			Error string `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = json.Unmarshal(b, &e)
		msg := textfmt.Line(e.Error)
		if msg == "" {
			msg = textfmt.Line(strings.TrimSpace(string(b)))
		}
		err := &sources.HTTPError{StatusCode: resp.StatusCode, Message: msg}
		if resp.StatusCode == http.StatusForbidden {
			return nil, fmt.Errorf("%w (serve said: %s)", poller.ErrReadOnly, msg)
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return resp, nil
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	resp, err := c.do(ctx, http.MethodGet, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	over := func(n int64) error {
		return fmt.Errorf("GET %s: serve's answer of %d bytes or more exceeds attach's cap of %s (%d bytes); reading stopped: attach to a serve that watches fewer operations, or read its snapshot with curl", path, n, textfmt.Bytes(c.maxBody), c.maxBody)
	}
	if resp.ContentLength > c.maxBody {
		return over(resp.ContentLength)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return fmt.Errorf("GET %s: reading serve's answer: %w", path, err)
	}
	if int64(len(b)) > c.maxBody {
		return over(int64(len(b)))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: not a dbxtop serve answer: %w", path, err)
	}
	return nil
}

// Run streams serve's events into Events until ctx is done, reconnecting
// (with a pause) when the stream breaks; a break is itself an event.
func (c *Client) Run(ctx context.Context) error {
	for {
		err := c.stream(ctx)
		if ctx.Err() != nil {
			return nil
		}
		c.emit(model.Event{At: time.Now(), Kind: model.EventGiveUp, Call: "attach",
			Message: "event stream from serve interrupted; reconnecting: " + textfmt.Line(errString(err))})
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "serve closed the stream"
	}
	return err.Error()
}

func (c *Client) stream(ctx context.Context) error {
	resp, err := c.doWith(ctx, c.shc, http.MethodGet, "/api/v1/events")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e EventJSON
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("event stream: %w", err)
		}
		c.emit(DecodeEvent(e))
	}
	return sc.Err()
}

func (c *Client) emit(ev model.Event) {
	select {
	case c.events <- ev:
	default: // the TUI is behind: drop this one rather than block the stream
	}
}

// Events is serve's event stream.
func (c *Client) Events() <-chan model.Event { return c.events }

// Snapshot asks serve for its snapshot. When serve cannot be reached, the
// last one comes back with an error entry saying so (never a silent
// stale picture).
func (c *Client) Snapshot() model.Snapshot {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s model.Snapshot
	err := c.getJSON(ctx, "/api/v1/snapshot", &s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		s = c.last
		s.Errors = append(append([]model.ErrorInfo(nil), s.Errors...), model.ErrorInfo{Kind: model.KindTransport, Call: "attach",
			Message: textfmt.Line("cannot reach serve; showing its last snapshot: " + err.Error()), Attempts: 1})
		return s
	}
	c.last = s
	return s
}

// Health is serve's poller health (zero when serve cannot be reached).
func (c *Client) Health() poller.Health {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var h HealthInfo
	if err := c.getJSON(ctx, "/api/v1/health", &h); err != nil {
		return poller.Health{LastError: &model.ErrorInfo{Kind: model.KindTransport, Call: "attach", Message: textfmt.Line(err.Error())}}
	}
	return h.Health.Poller()
}

// ReadOnly: serve's --read-only, a serve without an act token, or an
// attach without DBXTOP_ACT_TOKEN.
func (c *Client) ReadOnly() bool { return c.readOnly }

// Refresh is serve's --refresh, 0 when serve did not say.
func (c *Client) Refresh() time.Duration { return c.refresh }

func (c *Client) action(ctx context.Context, act, id string) error {
	resp, err := c.do(ctx, http.MethodPost, "/api/v1/operations/"+id+"/"+act)
	if err != nil {
		if errors.Is(err, poller.ErrReadOnly) {
			return err
		}
		return fmt.Errorf("%s through serve: %w", act, err)
	}
	resp.Body.Close()
	return nil
}

// Adopt asks serve to adopt the operation.
func (c *Client) Adopt(ctx context.Context, id string) error { return c.action(ctx, "adopt", id) }

// Close asks serve to re-close the operation.
func (c *Client) Close(ctx context.Context, id string) error { return c.action(ctx, "close", id) }

// Cancel asks serve to cancel the operation.
func (c *Client) Cancel(ctx context.Context, id string) error { return c.action(ctx, "cancel", id) }

package adminapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// maxAdminBody bounds one admin API answer read by dbxtop (100,000
// operations of facts fit).
const maxAdminBody = 256 << 20

// AdminClient is dbxtop's client of a proxy's admin API (--proxy).
type AdminClient struct {
	base  *url.URL
	token string
	ua    string
	hc    *http.Client
}

// NewAdminClient checks the admin URL (http(s)://host:port, no path).
func NewAdminClient(adminURL, token, userAgent string) (*AdminClient, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(adminURL), "/"))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("proxy admin URL %q: want http(s)://HOST:PORT as printed by dbxtop proxy (admin=…)", sources.Redact(adminURL))
	}
	if token == "" {
		return nil, errors.New("proxy admin token missing: set DBXTOP_PROXY_TOKEN to the admin_token dbxtop proxy printed")
	}
	u.Path = ""
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &AdminClient{base: u, token: token, ua: userAgent, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// verifyAs makes an https admin API's certificate be checked against
// name (its URL holds an address the name resolved to).
func (c *AdminClient) verifyAs(name string) {
	tr := c.hc.Transport.(*http.Transport)
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.ServerName = name
}

// URL is the admin API's base URL.
func (c *AdminClient) URL() string { return c.base.String() }

// CloseIdleConnections drops pooled connections to the admin API.
func (c *AdminClient) CloseIdleConnections() { c.hc.CloseIdleConnections() }

func (c *AdminClient) do(ctx context.Context, call, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", c.ua)
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("proxy admin API %s: %w", call, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminBody+1))
	if err != nil {
		return fmt.Errorf("proxy admin API %s: reading the answer: %w", call, err)
	}
	if len(body) > maxAdminBody {
		return fmt.Errorf("proxy admin API %s: answer larger than %d bytes", call, maxAdminBody)
	}
	if resp.StatusCode != http.StatusOK {
		herr := sources.ParseHTTPError(call, resp.StatusCode, resp.Header, body)
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			// The proxy's token, not the workspace's: say which to fix.
			return fmt.Errorf("the proxy at %s refused DBXTOP_PROXY_TOKEN (set it to the admin_token= on the proxy's first line): %w", c.base.Host, herr)
		}
		return herr
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(out); err != nil {
		return fmt.Errorf("proxy admin API %s: not the admin JSON: %w", call, err)
	}
	return nil
}

// Operations reads the proxy's facts.
func (c *AdminClient) Operations(ctx context.Context) ([]sources.ProxyOperation, error) {
	var doc OperationsDoc
	if err := c.do(ctx, "ProxyOperations", http.MethodGet, PathOperations, &doc); err != nil {
		return nil, err
	}
	cleanStrings(&doc)
	return doc.Operations, nil
}

type actionAnswer struct {
	OK   bool `json:"ok"`
	Gone bool `json:"gone"`
}

func (c *AdminClient) act(ctx context.Context, call, id, verb string) error {
	var a actionAnswer
	if err := c.do(ctx, call, http.MethodPost, PathOperations+"/"+url.PathEscape(id)+"/"+verb, &a); err != nil {
		return err
	}
	if a.Gone {
		// The proxy used the real handle: a real answer that it is gone.
		return fmt.Errorf("proxy %s %s: %w", call, id, sources.ErrHandleGone)
	}
	return nil
}

// Close asks the proxy to close an operation with its real handle.
func (c *AdminClient) Close(ctx context.Context, id string) error {
	return c.act(ctx, "CloseOperation", id, "close")
}

// Cancel asks the proxy to cancel an operation with its real handle.
func (c *AdminClient) Cancel(ctx context.Context, id string) error {
	return c.act(ctx, "CancelOperation", id, "cancel")
}

// Account converts the admin API's facts into the model's proxy account.
func Account(f sources.ProxyOperation) *model.ProxyAccount {
	a := &model.ProxyAccount{LastClientRPC: f.LastClientActivity(), CloseOutcome: f.Close.Outcome,
		ClientCloseAttempts: f.Close.ClientAttempts, ProxyCloseAttempts: f.Close.ProxyAttempts,
		ClientCloseError: f.Close.ClientError, LastCloseError: f.Close.LastError, NextTry: f.Close.NextTry,
		Heals: f.Heals}
	for _, e := range f.Actions {
		line := e.At.UTC().Format("15:04:05") + " " + e.Kind + ": " + e.Message
		if e.Credentials != "" {
			line += " (" + e.Credentials + " credentials)"
		}
		a.Actions = append(a.Actions, Clean(line))
	}
	return a
}

// provenOpen says whether the proxy's account proves f still open on the
// server, and the evidence: the proxy relayed the server's answer to its
// ExecuteStatement (a handle), and since then saw no close succeed (a
// close the server refused leaves it open) and no answer calling it gone
// or closed. An operation it learned later, or whose answers it could not
// read, proves nothing. What the proxy cannot see (the server's reaper, a
// close over another connection) is not excluded: the note says so, and
// the server's own word wins (Status).
func provenOpen(f sources.ProxyOperation) (string, bool) {
	if f.LearnedAfterStart || f.Unobserved != "" || f.State == model.StateClosed {
		return "", false
	}
	since := "no close of it since"
	switch f.Close.Outcome {
	case sources.ProxyOpen:
	case sources.ProxyCloseFailed:
		since = "no close of it succeed since (the server refused the client's)"
	default:
		return "", false
	}
	return "open per dbxtop proxy: it relayed the server's handle for this statement and saw " + since +
		" (a close it cannot see, by the server's reaper or over another connection, would not show here)", true
}

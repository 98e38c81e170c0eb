package thrift

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/sources"
)

// DefaultTimeout bounds one RPC (request and whole answer) when
// Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// maxErrorBodyRead is how much of a non-200 body is read to parse the
// Databricks error; error bodies are small, HTML pages are cut.
const maxErrorBodyRead = 64 << 10

// Options configures a Client. The zero value of every field but Host is
// useful.
type Options struct {
	// Host is the workspace or server: http(s)://host[:port]. No user
	// info, path or query.
	Host string
	// HTTPPath maps a warehouse id to its Thrift path; nil means
	// "/sql/1.0/warehouses/"+id.
	HTTPPath func(warehouseID string) string
	// Authenticate signs each request (e.g. databricks-sdk-go's
	// config.Authenticate); nil means "Authorization: Bearer <Token>" when
	// Token is set, and no credentials otherwise.
	Authenticate func(*http.Request) error
	Token        string
	// UserAgent goes on every call ("dbxtop/<version>"). The simulator
	// tells an observer's calls from the owning client's by it.
	UserAgent string
	// Transport carries the calls; nil means a clone of
	// http.DefaultTransport. CloseIdleConnections acts on it.
	Transport *http.Transport
	// Timeout bounds one RPC; 0 means DefaultTimeout, negative means only
	// the caller's context bounds it.
	Timeout time.Duration
}

// DefaultUserAgent is sent when Options.UserAgent is empty.
const DefaultUserAgent = "dbxtop/dev"

// Client calls TCLIService over HTTP POST with TBinaryProtocol. Every
// method makes exactly one attempt: retries belong to the poller. It is
// safe for concurrent use.
type Client struct {
	base      *url.URL
	path      func(string) string
	auth      func(*http.Request) error
	userAgent string
	tr        *http.Transport
	hc        *http.Client
	// fresh sends the retries of transport errors: its transport keeps no
	// connection, so a retry can never land on a pooled one that is as
	// stale as the one that just failed.
	fresh *http.Client
	seq   atomic.Int32
}

// NewClient checks o and builds a Client.
func NewClient(o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(o.Host, "/"))
	if err != nil {
		return nil, fmt.Errorf("thrift client: host is not a URL: %w", redactURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("thrift client: host %q: want http(s)://host[:port]", u.Redacted())
	}
	if u.User != nil {
		return nil, errors.New("thrift client: host must not carry credentials; use Token or Authenticate")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("thrift client: host %q: no path or query (use HTTPPath)", u.Redacted())
	}
	u.Path = ""
	c := &Client{base: u, path: o.HTTPPath, auth: o.Authenticate, userAgent: o.UserAgent, tr: o.Transport}
	if c.path == nil {
		c.path = DefaultHTTPPath
	}
	if c.auth == nil && o.Token != "" {
		token := o.Token
		c.auth = func(r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+token)
			return nil
		}
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	if c.tr == nil {
		c.tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	timeout := o.Timeout
	switch {
	case timeout == 0:
		timeout = DefaultTimeout
	case timeout < 0:
		timeout = 0
	}
	c.hc = &http.Client{
		Transport: c.tr,
		Timeout:   timeout,
		// A redirect of a Thrift POST is a misconfigured path or a login
		// page; following it would resend credentials elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	freshTr := c.tr.Clone()
	freshTr.DisableKeepAlives = true
	c.fresh = &http.Client{Transport: freshTr, Timeout: timeout, CheckRedirect: c.hc.CheckRedirect}
	return c, nil
}

// DefaultHTTPPath is the Databricks SQL warehouse Thrift path.
func DefaultHTTPPath(warehouseID string) string {
	return "/sql/1.0/warehouses/" + url.PathEscape(warehouseID)
}

// CloseIdleConnections drops the transport's idle pooled connections, so
// that the next call dials afresh instead of reusing one the server or a
// load balancer may have closed.
func (c *Client) CloseIdleConnections() { c.tr.CloseIdleConnections() }

func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return errors.New("invalid URL") // its text would echo the input, maybe a token
	}
	return err
}

// call makes one RPC: it encodes args as a CALL message, POSTs it to the
// warehouse path and decodes the REPLY into result. Outcomes:
//   - a transport failure: the net/http error wrapped with the call name,
//     so errors.Is(err, syscall.ECONNRESET), io.EOF or
//     io.ErrUnexpectedEOF still match;
//   - a non-200 answer: *sources.HTTPError with the parsed error body;
//   - a Thrift exception reply: *sources.ServerError;
//   - an undecodable 200 answer: *DecodeError.
func (c *Client) call(ctx context.Context, warehouseID, name string, args, result athrift.TStruct) error {
	seq := c.seq.Add(1)
	buf := athrift.NewTMemoryBuffer()
	proto := athrift.NewTBinaryProtocolConf(buf, thriftConf)
	if err := writeMessage(ctx, proto, name, seq, args); err != nil {
		return fmt.Errorf("thrift %s: encode request: %w", name, err)
	}

	u := *c.base
	u.Path = c.path(warehouseID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(buf.Bytes()))
	if err != nil {
		return fmt.Errorf("thrift %s: build request: %w", name, err)
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Accept", ContentType)
	req.Header.Set("User-Agent", c.userAgent)
	if c.auth != nil {
		if err := c.auth(req); err != nil {
			return fmt.Errorf("thrift %s: authenticate: %w", name, err)
		}
	}

	hc := c.hc
	if sources.FreshConnRequested(ctx) {
		hc = c.fresh
	}
	resp, err := hc.Do(req)
	if err != nil {
		return &TransportError{Call: name, Warehouse: warehouseID, Err: stripURL(err)}
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyRead))
		return sources.ParseHTTPError(name, resp.StatusCode, resp.Header, body)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxMessageSize+1))
	if err != nil {
		return &TransportError{Call: name, Warehouse: warehouseID, Err: err}
	}
	if len(body) > MaxMessageSize {
		return &DecodeError{Call: name, Err: fmt.Errorf("answer larger than %d bytes", MaxMessageSize)}
	}
	return decodeReply(ctx, name, seq, body, result)
}

func writeMessage(ctx context.Context, p athrift.TProtocol, name string, seq int32, args athrift.TStruct) error {
	if err := p.WriteMessageBegin(ctx, name, athrift.CALL, seq); err != nil {
		return err
	}
	if err := args.Write(ctx, p); err != nil {
		return err
	}
	if err := p.WriteMessageEnd(ctx); err != nil {
		return err
	}
	return p.Flush(ctx)
}

// decodeReply reads one REPLY (or EXCEPTION) message for call name.
func decodeReply(ctx context.Context, name string, seq int32, body []byte, result athrift.TStruct) error {
	p := NewReadProtocol(body)
	gotName, typ, gotSeq, err := p.ReadMessageBegin(ctx)
	if err != nil {
		return &DecodeError{Call: name, Err: err, Body: sources.SanitizeBody(body[:min(len(body), 128)])}
	}
	if gotName != name {
		return &DecodeError{Call: name, Err: fmt.Errorf("reply is for %q", gotName)}
	}
	switch typ {
	case athrift.EXCEPTION:
		x := athrift.NewTApplicationException(athrift.UNKNOWN_APPLICATION_EXCEPTION, "")
		if err := x.Read(ctx, p); err != nil {
			return &DecodeError{Call: name, Err: fmt.Errorf("exception reply: %w", err)}
		}
		return &sources.ServerError{
			Call:       name,
			StatusCode: int32(statusError),
			Message:    fmt.Sprintf("thrift application exception (type %d): %s", x.TypeId(), x.Error()),
		}
	case athrift.REPLY:
	default:
		return &DecodeError{Call: name, Err: fmt.Errorf("message type %d, want REPLY", typ)}
	}
	if gotSeq != seq {
		return &DecodeError{Call: name, Err: fmt.Errorf("reply sequence id %d, want %d", gotSeq, seq)}
	}
	if err := result.Read(ctx, p); err != nil {
		return &DecodeError{Call: name, Err: err}
	}
	if err := p.ReadMessageEnd(ctx); err != nil {
		return &DecodeError{Call: name, Err: err}
	}
	return nil
}

// stripURL drops *url.Error's "Post \"https://…\"" prefix (the call name
// says more) while keeping the cause chain, so errors.Is still reaches
// syscall errors and io.EOF.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return &timeoutError{err: ue.Err}
		}
		err = ue.Err
	}
	if err != nil && err.Error() == serverClosedIdleText {
		return &closedIdleError{err: err}
	}
	return err
}

// serverClosedIdleText is net/http's unexported errServerClosedIdle: the
// server closed a pooled keep-alive connection as the request went out.
// net/http retries it itself only for idempotent requests, and every
// Thrift call is a POST, so it reaches us.
const serverClosedIdleText = "http: server closed idle connection"

// closedIdleError makes that stale-connection error match io.EOF too: it is
// an EOF on a reused connection, and the poller classifies it so.
type closedIdleError struct{ err error }

func (e *closedIdleError) Error() string   { return e.err.Error() }
func (e *closedIdleError) Unwrap() []error { return []error{e.err, io.EOF} }

// timeoutError keeps net.Error's Timeout() visible once the url.Error is
// stripped, so the poller can classify client-side timeouts.
type timeoutError struct{ err error }

func (e *timeoutError) Error() string { return e.err.Error() }
func (e *timeoutError) Unwrap() error { return e.err }
func (e *timeoutError) Timeout() bool { return true }

// Temporary is part of net.Error; a timeout is worth retrying.
func (e *timeoutError) Temporary() bool { return true }

// TransportError is a call that got no HTTP answer (or a broken one):
// reset, EOF, refused, timeout. Err is the net/http cause; errors.Is and
// errors.As reach it (syscall.ECONNRESET, io.EOF, *net.OpError, …).
type TransportError struct {
	Call      string
	Warehouse string
	Err       error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("thrift %s (warehouse %s): transport: %v", e.Call, e.Warehouse, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// Timeout reports whether the cause is a timeout (net.Error semantics).
func (e *TransportError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// DecodeError is a 200 answer that is not the expected Thrift reply: a
// proxy's page, a truncated or corrupt message. The request reached
// something, so it is not safe to assume it was not executed.
type DecodeError struct {
	Call string
	Err  error
	Body string // sanitized start of the body, when it was not Thrift at all
}

func (e *DecodeError) Error() string {
	s := fmt.Sprintf("thrift %s: undecodable answer: %v", e.Call, e.Err)
	if e.Body != "" {
		s += fmt.Sprintf(" (body starts %q)", e.Body)
	}
	return s
}

func (e *DecodeError) Unwrap() error { return e.Err }

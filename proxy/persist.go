package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/internal/safefile"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// persistedClose is one entry of the persisted close queue: a handle and
// its secret, never a credential.
type persistedClose struct {
	StatementID string    `json:"statement_id"`
	Secret      []byte    `json:"secret"`
	HTTPPath    string    `json:"http_path"`
	QueuedAt    time.Time `json:"queued_at"`
}

type queueFile struct {
	Version int              `json:"version"`
	Closes  []persistedClose `json:"closes"`
}

// keepUnclosable: how long a persisted close the proxy cannot make
// (--act-as client: no credentials survive a restart) stays in the file
// for a later start with --act-as proxy; servers reap long before.
const keepUnclosable = 24 * time.Hour

// maxQueueFile bounds reading the persisted queue.
const maxQueueFile = 64 << 20

// StateFile is the persisted close queue's path for a listen address:
// one file per address under $STATE_DIRECTORY (systemd's StateDirectory=)
// or else $XDG_STATE_HOME/dbxtop (~/.local/state/dbxtop).
func StateFile(getenv func(string) string, listen string) (string, error) {
	dir := getenv("STATE_DIRECTORY")
	if i := strings.IndexByte(dir, ':'); i >= 0 {
		dir = dir[:i] // systemd lists several directories with ':'
	}
	if dir == "" {
		base := getenv("XDG_STATE_HOME")
		if base == "" {
			home := getenv("HOME")
			if home == "" {
				return "", errors.New("no state directory: set STATE_DIRECTORY or XDG_STATE_HOME")
			}
			base = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(base, "dbxtop")
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, listen)
	return filepath.Join(dir, "proxy-close-queue-"+name+".json"), nil
}

// queueEntries lists what is to persist: every queued close, and the
// entries kept from the file that the proxy could not act on. Called
// with the store locked.
func (p *Proxy) queueEntries() []persistedClose {
	out := append([]persistedClose(nil), p.kept...)
	for _, o := range p.st.queuedOps() {
		out = append(out, persistedClose{StatementID: o.f.StatementID, Secret: append([]byte(nil), o.secret...),
			HTTPPath: o.f.HTTPPath, QueuedAt: o.queuedAt})
	}
	return out
}

// persistQueue writes the close queue atomically (a 0600 temporary file
// renamed over the old one) when it changed since the last write.
func (p *Proxy) persistQueue(force bool) {
	if p.o.StateFile == "" {
		return
	}
	p.st.mu.Lock()
	if !p.st.queueDirty && !force {
		p.st.mu.Unlock()
		return
	}
	p.st.queueDirty = false
	doc := queueFile{Version: 1, Closes: p.queueEntries()}
	p.st.mu.Unlock()
	if len(doc.Closes) == 0 {
		if _, err := os.Stat(p.o.StateFile); errors.Is(err, fs.ErrNotExist) {
			return // nothing to keep, nothing to clear: no file written
		}
	}
	if err := writeAtomic(p.o.StateFile, doc); err != nil {
		p.log.Error("persisting the close queue", "file", p.o.StateFile, "err", err.Error())
		p.st.mu.Lock()
		p.st.queueDirty = true
		p.st.mu.Unlock()
	}
}

func writeAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return safefile.WriteAtomic(path, b, 0o600)
}

// resumeQueue reads the persisted close queue at start. With --act-as
// proxy each entry is queued again and closed; otherwise each is logged
// as not closable (the client's credentials were never written) and
// kept in the file, up to a day, for a start with --act-as proxy.
func (p *Proxy) resumeQueue() error {
	if p.o.StateFile == "" {
		return nil
	}
	f, err := os.Open(p.o.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("proxy: reading the persisted close queue: %w", err)
	}
	defer f.Close()
	var doc queueFile
	if err := json.NewDecoder(&limitedFile{f: f, n: maxQueueFile}).Decode(&doc); err != nil {
		return fmt.Errorf("proxy: the persisted close queue %s is not readable (%v); move it away to start without it", p.o.StateFile, err)
	}
	now := p.clk.Now()
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	for _, e := range doc.Closes {
		if _, err := thrift.GUIDFromStatementID(e.StatementID); err != nil {
			continue
		}
		if p.o.ActAs != ActAsProxy {
			if now.Sub(e.QueuedAt) < keepUnclosable {
				p.kept = append(p.kept, e)
			}
			p.log.Warn("persisted close not closable", "statement_id", e.StatementID,
				"reason", "--act-as client: the client's credentials are never persisted; kept for a start with --act-as proxy, else the server reaps it",
				"queued_at", e.QueuedAt.UTC())
			continue
		}
		if p.st.ops[e.StatementID] != nil {
			continue
		}
		o := p.st.addOp(e.StatementID, e.Secret, e.HTTPPath, "", now)
		if o == nil {
			continue
		}
		o.f.LearnedAfterStart = true
		o.f.State = model.StateUnknown
		o.f.Close.Outcome = sources.ProxyCloseFailed
		o.queuedAt = e.QueuedAt
		p.st.setQueued(o, true)
		o.f.Close.NextTry = now
		p.st.arm(o, now)
		o.event(now, "close-resumed", "queued close resumed from "+filepath.Base(p.o.StateFile), "")
		p.log.Info("persisted close resumed", "statement_id", e.StatementID, "queued_at", e.QueuedAt.UTC())
	}
	p.st.queueDirty = true
	return nil
}

type limitedFile struct {
	f *os.File
	n int64
}

func (l *limitedFile) Read(b []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("file larger than the close queue can be")
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.f.Read(b)
	l.n -= int64(n)
	return n, err
}

// flushQueue runs every queued close once now, whatever its next try
// (the drain's last act), bounded by ctx.
func (p *Proxy) flushQueue(ctx context.Context) {
	p.st.mu.Lock()
	var jobs []*op
	for _, o := range p.st.queuedOps() {
		if !o.busy {
			o.busy = true
			jobs = append(jobs, o)
		}
	}
	p.st.mu.Unlock()
	done := make(chan struct{}, len(jobs))
	for _, o := range jobs {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { done <- struct{}{} }()
			defer p.release(o)
			select {
			case p.ownSem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-p.ownSem }()
			_ = p.closeOwn(ctx, o, "drain")
		}()
	}
	for range jobs {
		<-done
	}
}

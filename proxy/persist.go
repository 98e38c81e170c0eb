package proxy

import (
	"context"
	"encoding/hex"
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
	// Owner identifies the client whose close it was: the HMAC of its
	// credential under the owner key (hex), never the credential or a
	// plain digest of it. "" when unknown.
	Owner string `json:"owner,omitempty"`
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
func (s *store) queueEntries() []persistedClose {
	out := append([]persistedClose(nil), s.kept...)
	for _, o := range s.queuedOps() {
		e := persistedClose{StatementID: o.f.StatementID, Secret: append([]byte(nil), o.secret...),
			HTTPPath: o.f.HTTPPath, QueuedAt: o.queuedAt}
		if sum := o.ownerSum(); sum != (authSum{}) {
			e.Owner = hex.EncodeToString(sum[:])
		}
		out = append(out, e)
	}
	return out
}

// persistQueue writes the close queue atomically (a 0600 temporary file
// renamed over the old one) when it changed since the last write.
func (p *Proxy) persistQueue(force bool) {
	if p.o.StateFile == "" {
		return
	}
	closes, changed := p.st.takeQueue(force)
	if !changed {
		return
	}
	doc := queueFile{Version: 1, Closes: closes}
	if len(doc.Closes) == 0 {
		if _, err := os.Stat(p.o.StateFile); errors.Is(err, fs.ErrNotExist) {
			return // nothing to keep, nothing to clear: no file written
		}
	}
	if err := writeAtomic(p.o.StateFile, doc); err != nil {
		p.log.Error("persisting the close queue", "file", p.o.StateFile, "err", err.Error())
		p.st.queueChanged()
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

// resumeQueue reads the persisted close queue at start, through the
// bounded regular-file reader (a FIFO or a device at the path is refused
// at once, never waited on). With --act-as proxy each entry is queued
// again and closed; otherwise the entries are kept in the file, up to a
// day, for a start with --act-as proxy. What it did is logged in one
// line each, however many entries the file holds.
func (p *Proxy) resumeQueue() error {
	if p.o.StateFile == "" {
		return nil
	}
	b, info, err := safefile.Read(p.o.StateFile, maxQueueFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("proxy: reading the persisted close queue %s: %w; move it away to start without it", p.o.StateFile, err)
	}
	if safefile.OpenToOthers(info) {
		p.log.Warn("the persisted close queue is open to other users; it holds handle secrets: chmod 600 it",
			"file", p.o.StateFile, "mode", info.Mode().Perm().String())
	}
	var doc queueFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("proxy: the persisted close queue %s is not readable (%v); move it away to start without it", p.o.StateFile, err)
	}
	now := p.clk.Now()
	r := p.st.resume(doc.Closes, now)
	r.log(p, now)
	return nil
}

// resumed counts what resumeQueue did with the file's entries.
type resumed struct {
	queued, awaiting, kept, expired, invalid int
	oldest                                   time.Time
}

func (r *resumed) log(p *Proxy, now time.Time) {
	file := filepath.Base(p.o.StateFile)
	if r.queued > 0 {
		p.log.Info("persisted closes resumed", "file", file, "count", r.queued, "oldest_queued_at", r.oldest.UTC())
	}
	if r.awaiting > 0 {
		p.log.Info("persisted closes wait for their clients: each is made when its client's credentials are accepted again (or at once with --act-as proxy)",
			"file", file, "count", r.awaiting, "oldest_queued_at", r.oldest.UTC())
	}
	if r.kept > 0 {
		p.log.Warn("persisted closes without an owner are not closable with --act-as client; kept for a start with --act-as proxy, else the server reaps them",
			"file", file, "count", r.kept, "oldest_queued_at", r.oldest.UTC(), "kept_until", r.oldest.Add(keepUnclosable).UTC())
	}
	if r.expired+r.invalid > 0 {
		p.log.Warn("persisted closes dropped", "file", file, "older_than_a_day", r.expired, "not_a_statement_id", r.invalid)
	}
}

// resumeEntry queues or keeps one persisted close. An entry dated in the
// future (a clock set back, or a forged file) counts from now, so it
// expires like any other. Called with the store locked.
func (s *store) resumeEntry(e persistedClose, now time.Time, r *resumed) {
	if _, err := thrift.GUIDFromStatementID(e.StatementID); err != nil {
		r.invalid++
		return
	}
	if e.QueuedAt.After(now) {
		e.QueuedAt = now
	}
	if now.Sub(e.QueuedAt) >= keepUnclosable {
		r.expired++
		return
	}
	if r.oldest.IsZero() || e.QueuedAt.Before(r.oldest) {
		r.oldest = e.QueuedAt
	}
	owner, hasOwner := parseOwner(e.Owner)
	if s.o.ActAs != ActAsProxy && !hasOwner {
		s.kept = append(s.kept, e)
		r.kept++
		return
	}
	if s.has(e.StatementID) {
		return
	}
	o := s.addOp(e.StatementID, e.Secret, e.HTTPPath, "", now)
	if o == nil {
		return
	}
	o.f.LearnedAfterStart = true
	o.f.State = model.StateUnknown
	o.f.Close.Outcome = sources.ProxyCloseFailed
	o.queuedAt = e.QueuedAt
	o.owner = owner
	s.setQueued(o, true)
	if s.o.ActAs != ActAsProxy {
		// No credential survives a restart: the close waits for its
		// owner to be seen again (adoptOwner).
		r.awaiting++
		s.await(o)
		o.event(now, "close-resumed", "queued close resumed from "+filepath.Base(s.o.StateFile)+"; waits for its client's credentials to be accepted again", "")
		return
	}
	r.queued++
	o.f.Close.NextTry = now
	s.arm(o, now)
	o.event(now, "close-resumed", "queued close resumed from "+filepath.Base(s.o.StateFile), "")
}

// parseOwner reads a persisted owner identity.
func parseOwner(s string) (authSum, bool) {
	var sum authSum
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(sum) {
		return sum, false
	}
	copy(sum[:], b)
	return sum, sum != authSum{}
}

// adoptOwner gives the credentials the server just accepted to the
// resumed closes of the same client (one identity), and makes them due:
// a close queued before a restart completes when its client returns.
// Called with the store locked.
func (s *store) adoptOwner(rq request, now time.Time) {
	if rq.auth == "" || s.o.ActAs != ActAsClient {
		return
	}
	for _, o := range s.adopt(rq.owner) {
		o.auth = rq.auth
		o.f.Close.NextTry = now
		s.arm(o, now)
		o.event(now, "owner-returned", "its client's credentials were accepted again; the queued close goes ahead", "client")
	}
}

// flushQueue runs every queued close once now, whatever its next try
// (the drain's last act), bounded by ctx.
func (p *Proxy) flushQueue(ctx context.Context) {
	jobs := p.st.claimQueued()
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

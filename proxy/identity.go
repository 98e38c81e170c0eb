package proxy

import (
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/dbxtop/dbxtop/internal/safefile"
)

// authSum identifies a client by the credential it sends, without
// keeping it: an HMAC-SHA-256 of the normalised credential under the
// proxy's owner key. Never a plain digest: for Basic user:password that
// would be an offline-crackable password hash (and it is written to the
// close queue's file).
type authSum [sha256.Size]byte

// ownerKeySize is the owner key's length in bytes.
const ownerKeySize = 32

// identity turns Authorization headers into client identities.
type identity struct{ key []byte }

func newIdentity(key []byte) identity { return identity{key: key} }

// sum is the client identity of an Authorization header; the zero
// authSum for none.
func (id identity) sum(h string) authSum {
	var out authSum
	if h == "" {
		return out
	}
	kind, cred := credential(h)
	m := hmac.New(sha256.New, id.key)
	_, _ = io.WriteString(m, kind)
	_, _ = io.WriteString(m, cred)
	m.Sum(out[:0])
	return out
}

// withAuth gives rq the client's Authorization header and its identity.
func (id identity) withAuth(rq request, h string) request {
	rq.auth, rq.owner = h, id.sum(h)
	return rq
}

// credential normalises an Authorization header to the credential it
// carries, so that one client is one credential: "Bearer T" and "Basic
// base64(token:T)" (the personal access token as a password, as JDBC and
// ODBC send it) are the same T; schemes are case-insensitive. Any other
// Basic pair and any other scheme stay what they are. kind keeps the
// kinds apart.
func credential(h string) (kind, cred string) {
	scheme, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok {
		return "raw:", h
	}
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "bearer"):
		return "token:", rest
	case strings.EqualFold(scheme, "basic"):
		b, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return "raw:", h
		}
		if user, pass, ok := strings.Cut(string(b), ":"); ok && user == "token" {
			return "token:", pass
		}
		return "basic:", string(b)
	}
	return "raw:", h
}

// OwnerKeyFile is the owner key's path beside a close queue's file.
func OwnerKeyFile(stateFile string) string {
	return filepath.Join(filepath.Dir(stateFile), "proxy-owner-key")
}

// loadOwnerKey reads the per-install owner key kept 0600 beside the
// close queue (created on first start), so that a persisted close's
// owner is recognised after a restart; with no state file the key is
// random for this process.
func loadOwnerKey(stateFile string, log *slog.Logger) ([]byte, error) {
	key := make([]byte, ownerKeySize)
	if stateFile == "" {
		_, err := crand.Read(key)
		return key, err
	}
	path := OwnerKeyFile(stateFile)
	b, info, err := safefile.Read(path, 1024)
	switch {
	case err == nil && len(b) == ownerKeySize:
		if safefile.OpenToOthers(info) {
			log.Warn("the proxy's owner key is open to other users: chmod 600 it", "file", path, "mode", info.Mode().Perm().String())
		}
		return b, nil
	case err == nil:
		return nil, fmt.Errorf("proxy: the owner key %s is %d bytes, want %d; move it away to start with a new one (queued closes then wait for --act-as proxy)", path, len(b), ownerKeySize)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("proxy: reading the owner key %s: %w", path, err)
	}
	if _, err := crand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("proxy: creating the state directory: %w", err)
	}
	if err := safefile.WriteAtomic(path, key, 0o600); err != nil {
		return nil, fmt.Errorf("proxy: writing the owner key %s: %w", path, err)
	}
	return key, nil
}

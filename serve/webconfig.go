package serve

import (
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"

	"github.com/dbxtop/dbxtop/internal/safefile"
)

// webConfig is what serve takes from a --web.config.file, the Prometheus
// exporter convention (github.com/prometheus/exporter-toolkit): TLS
// (tls_server_config, mTLS included; the certificate and key are re-read
// at each handshake, so a rotation needs no restart), basic auth
// (basic_auth_users, bcrypt hashes) and response headers
// (http_server_config.headers). serve applies basic auth itself, because
// its probes stay open and its bearer tokens keep working beside it (the
// toolkit's server would cover every path and refuse a bearer token).
type webConfig struct {
	tls     *tls.Config // nil: plain HTTP
	users   map[string]string
	headers map[string]string

	mu    sync.Mutex
	cache map[[sha256.Size]byte]bool // user, password → verdict (bcrypt is slow by design)
}

// maxAuthCache bounds the verdicts kept; the cache starts over when full.
const maxAuthCache = 256

// Caps on the files serve reads for its web configuration: a web
// configuration and a PEM file are a few kilobytes.
const (
	MaxWebConfigFile = 1 << 20
	MaxTLSFile       = 1 << 20
)

// loadWebConfig reads and validates path with the toolkit's own rules.
// The toolkit reads the file and its TLS files itself, with a plain open
// that a FIFO would hang: each is checked first (safefile: non-blocking,
// a regular file, capped).
func loadWebConfig(path string) (*webConfig, error) {
	b, _, err := safefile.Read(path, MaxWebConfigFile)
	if err != nil {
		return nil, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	// The toolkit's defaults (its getConfig is not exported).
	c := web.Config{
		TLSConfig:  web.TLSConfig{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13},
		HTTPConfig: web.HTTPConfig{HTTP2: true},
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	c.TLSConfig.SetDirectory(filepath.Dir(path))
	for _, f := range []struct{ key, path string }{{"cert_file", c.TLSConfig.TLSCertPath},
		{"key_file", c.TLSConfig.TLSKeyPath}, {"client_ca_file", c.TLSConfig.ClientCAs}} {
		if err := checkTLSFile(f.path); err != nil {
			return nil, fmt.Errorf("--web.config.file %s: %s: %w", path, f.key, err)
		}
	}
	if err := web.Validate(path); err != nil {
		return nil, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	w := &webConfig{users: map[string]string{}, headers: c.HTTPConfig.Header, cache: map[[sha256.Size]byte]bool{}}
	for u, h := range c.Users {
		w.users[u] = string(h)
	}
	if c.TLSConfig.TLSCertPath != "" || c.TLSConfig.TLSCert != "" {
		if w.tls, err = web.ConfigToTLSConfig(&c.TLSConfig); err != nil {
			return nil, fmt.Errorf("--web.config.file %s: %w", path, err)
		}
	}
	return w, nil
}

// checkTLSFile checks a certificate, key or CA file before a library
// reads it ("" is no file): a regular file of at most MaxTLSFile bytes,
// opened without blocking.
func checkTLSFile(path string) error {
	if path == "" {
		return nil
	}
	_, err := safefile.Check(path, MaxTLSFile)
	return err
}

// basicAuth reports whether r carries valid basic-auth credentials.
func (w *webConfig) basicAuth(r *http.Request) bool {
	if w == nil || len(w.users) == 0 {
		return false
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	hash, known := w.users[user]
	if !known {
		// The same work for an unknown user: no user enumeration by timing.
		hash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
	}
	key := sha256.Sum256([]byte(user + "\x00" + hash + "\x00" + pass))
	w.mu.Lock()
	verdict, cached := w.cache[key]
	w.mu.Unlock()
	if !cached {
		verdict = bcrypt.CompareHashAndPassword([]byte(hash), []byte(pass)) == nil
		w.mu.Lock()
		if len(w.cache) >= maxAuthCache {
			clear(w.cache)
		}
		w.cache[key] = verdict
		w.mu.Unlock()
	}
	return known && verdict
}

// hasUsers: basic auth is configured.
func (w *webConfig) hasUsers() bool { return w != nil && len(w.users) > 0 }

// setHeaders sets the configured response headers.
func (w *webConfig) setHeaders(h http.Header) {
	if w == nil {
		return
	}
	for k, v := range w.headers {
		h.Set(k, v)
	}
}

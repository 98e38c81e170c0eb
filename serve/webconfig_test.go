package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dbxtop test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// TestWebConfigFile: --web.config.file gives TLS (paths relative to the
// file), basic auth on every endpoint but the probes, and headers; the
// bearer tokens still work; basic auth reads but never acts; it and
// --tls-cert are refused together, and a bad file is refused naming it.
func TestWebConfigFile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close(context.Background()) }()
	dir := t.TempDir()
	pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("scrape-pass"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(conf, []byte(`tls_server_config:
  cert_file: cert.pem
  key_file: key.pem
basic_auth_users:
  prometheus: `+string(hash)+`
http_server_config:
  headers:
    X-Content-Type-Options: nosniff
`), 0o600); err != nil {
		t.Fatal(err)
	}

	c := NewCounters()
	fleet := poller.NewFleet(time.Hour, workspaceRW(t, ctx, "live", srv.URL(), srv.Token(), c, false))
	if _, err := New(Options{Listen: "127.0.0.1:0", Fleet: fleet, WebConfigFile: conf, TLSCert: filepath.Join(dir, "cert.pem"), TLSKey: filepath.Join(dir, "key.pem")}); err == nil || !strings.Contains(err.Error(), "--web.config.file and --tls-cert") {
		t.Fatalf("web config and --tls-cert together: %v", err)
	}
	bad := filepath.Join(dir, "bad.yml")
	_ = os.WriteFile(bad, []byte("basic_auth_users:\n  u: not-a-bcrypt-hash\n"), 0o600)
	if _, err := New(Options{Listen: "127.0.0.1:0", Fleet: fleet, WebConfigFile: bad}); err == nil || !strings.Contains(err.Error(), "--web.config.file "+bad) {
		t.Fatalf("bad web config: %v", err)
	}
	const read, act = "read-token-0123456789", "act-token-0123456789"
	s, err := New(Options{Listen: "127.0.0.1:0", Fleet: fleet, Counters: c, Token: read, ActToken: act, WebConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	go func() { _ = fleet.Run(ctx); done <- struct{}{} }()
	go func() { _ = s.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()
	if !strings.HasPrefix(s.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL %s: want https", s.URL())
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	// Generous: bcrypt under -race on a loaded machine takes seconds.
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	do := func(method, path string, auth func(*http.Request)) (int, http.Header) {
		req, _ := http.NewRequest(method, s.URL()+path, nil)
		if auth != nil {
			auth(req)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	basic := func(user, pass string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, pass) }
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	if code, h := do(http.MethodGet, "/healthz", nil); code != 200 || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("healthz without credentials over TLS: %d, headers %v", code, h)
	}
	for _, tc := range []struct {
		what string
		auth func(*http.Request)
		want int
	}{
		{"no credentials", nil, 401},
		{"basic auth", basic("prometheus", "scrape-pass"), 200},
		{"a wrong password", basic("prometheus", "wrong"), 401},
		{"an unknown user", basic("nobody", "scrape-pass"), 401},
		{"the read token", bearer(read), 200},
		{"the act token", bearer(act), 200},
	} {
		code, h := do(http.MethodGet, "/metrics", tc.auth)
		if code != tc.want {
			t.Errorf("/metrics with %s: %d, want %d", tc.what, code, tc.want)
		}
		if code == 401 && !strings.Contains(strings.Join(h.Values("WWW-Authenticate"), ","), "Basic") {
			t.Errorf("401 without a Basic challenge: %v", h)
		}
	}
	id := "/api/v1/operations/01234567-89ab-cdef-0123-456789abcdef/cancel"
	if code, _ := do(http.MethodPost, id, basic("prometheus", "scrape-pass")); code != http.StatusForbidden {
		t.Errorf("cancel with basic auth: %d, want 403", code)
	}
	if code, _ := do(http.MethodPost, id, bearer(act)); code != http.StatusNotFound {
		t.Errorf("cancel of an unknown statement with the act token: %d, want 404", code)
	}
}

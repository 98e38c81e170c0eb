package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
)

// The shipped load-balancer configurations for proxy replicas
// (docs/proxy.md "Replicas behind a load balancer").
const (
	nginxReplicasPath   = "../contrib/nginx/dbxtop-proxy-replicas.conf"
	haproxyReplicasPath = "../contrib/haproxy/dbxtop-proxy-replicas.cfg"
)

// selfSigned writes a certificate and key for name into dir: cert.pem,
// key.pem, and both in one file, both.pem (HAProxy's form).
func selfSigned(t *testing.T, dir, name string) (cert, key, both string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	c := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kp := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	cert, key, both = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "both.pem")
	for p, b := range map[string][]byte{cert: c, key: kp, both: append(append([]byte{}, c...), kp...)} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key, both
}

// readContrib reads a shipped configuration and checks it says what
// replicas behind a load balancer need.
func readContrib(t *testing.T, path string, want []string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q", path, w)
		}
	}
	return text
}

// uncommented is a configuration without its # comments.
func uncommented(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		b.WriteString(line + "\n")
	}
	return b.String()
}

// TestContribLoadBalancerConfigsCheck: the shipped nginx and HAProxy
// configurations for proxy replicas pass the servers' own checks (their
// certificate paths pointed at a throwaway certificate), and keep what
// Thrift over HTTP needs: per-request round-robin, keepalive to the
// replicas, read timeouts of minutes, no repeat of a POST once sent.
func TestContribLoadBalancerConfigsCheck(t *testing.T) {
	budget(t)
	dir := t.TempDir()
	cert, key, both := selfSigned(t, dir, "dbxtop-proxy.example.internal")
	t.Run("nginx", func(t *testing.T) {
		bin := testenv.Tool(t, "nginx") // Debian: nginx-light
		text := readContrib(t, nginxReplicasPath, []string{"keepalive 64;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`,
			"proxy_read_timeout 10m;", "proxy_buffering off;", "proxy_next_upstream error timeout;"})
		if directives := uncommented(text); strings.Contains(directives, "non_idempotent") || strings.Contains(directives, "ip_hash") {
			t.Errorf("%s repeats POSTs or pins clients", nginxReplicasPath)
		}
		text = strings.NewReplacer("/etc/nginx/tls/dbxtop-proxy.crt", cert, "/etc/nginx/tls/dbxtop-proxy.key", key,
			"/etc/nginx/tls/dbxtop-proxy-ca.crt", cert, "listen 443 ssl;", "listen 127.0.0.1:1 ssl;").Replace(text)
		site := filepath.Join(dir, "site.conf")
		conf := filepath.Join(dir, "nginx.conf")
		tmp := filepath.Join(dir, "tmp")
		main := "pid " + filepath.Join(dir, "nginx.pid") + ";\nevents {}\nhttp {\n  access_log off;\n" +
			"  client_body_temp_path " + tmp + ";\n  proxy_temp_path " + tmp + ";\n  fastcgi_temp_path " + tmp + ";\n" +
			"  uwsgi_temp_path " + tmp + ";\n  scgi_temp_path " + tmp + ";\n  include " + site + ";\n}\n"
		for p, s := range map[string]string{site: text, conf: main} {
			if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		// The test binds nothing: the port above is never opened.
		out, err := exec.Command(bin, "-t", "-q", "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")).CombinedOutput()
		if err != nil {
			t.Fatalf("nginx -t: %v\n%s", err, out)
		}
	})
	t.Run("haproxy", func(t *testing.T) {
		bin := testenv.Tool(t, "haproxy") // Debian: haproxy
		text := readContrib(t, haproxyReplicasPath, []string{"balance roundrobin", "http-reuse safe", "retry-on conn-failure",
			"timeout server 10m", "option httpchk GET /v1/ready", "check port 8445"})
		text = strings.NewReplacer("/etc/haproxy/tls/dbxtop-proxy.pem", both, "/etc/haproxy/tls/dbxtop-proxy-ca.crt", cert,
			"bind :443", "bind 127.0.0.1:1").Replace(text)
		cfg := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		// The check binds nothing: the port above is never opened.
		out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput()
		if err != nil {
			t.Fatalf("haproxy -c: %v\n%s", err, out)
		}
	})
}

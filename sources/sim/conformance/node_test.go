package conformance

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"github.com/dbxtop/dbxtop/internal/testenv"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// nodeModules is where .ci/run installs the pinned Node drivers
// (npm install --no-save --prefix node, from the pinned lock).
func nodeModules(t testing.TB) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("node", "node_modules"))
	testenv.Tool(t, "node")
	if _, modErr := os.Stat(filepath.Join(dir, "@databricks", "sql")); modErr != nil {
		testenv.Missing(t, fmt.Sprintf("the pinned Node drivers are missing (%v)", modErr),
			".ci/run installs them: npm install --no-save --prefix sources/sim/conformance/node")
	}
	out, err := exec.Command("node", "--version").Output()
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".", 2)[0])
	if err != nil || major < 20 {
		testenv.Missing(t, fmt.Sprintf("node %q: @databricks/sql 2.1.0 needs Node 20 or later", strings.TrimSpace(string(out))),
			"install Node 20 or later")
	}
	return dir
}

// selfSigned writes a certificate for 127.0.0.1 and its key; the
// certificate is its own CA (the driver's customCaCert).
func selfSigned(t testing.TB) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dbxtop-proxy test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(k)
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600)
	return cert, key
}

type nodeResult struct {
	OK     int      `json:"ok"`
	Failed int      `json:"failed"`
	Errors []string `json:"errors"`
	MS     int64    `json:"ms"` // how long the statements took (the benchmark's rate)
}

func runNode(t testing.TB, modules, script string, env ...string) nodeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("node", script))
	cmd.Env = append(os.Environ(), append(env, "NODE_PATH="+modules)...)
	out, err := cmd.Output()
	var r nodeResult
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &r); jerr != nil {
		t.Fatalf("node %s: %v %v; output %q", script, err, jerr, out)
	}
	return r
}

// The Node drivers, unchanged, through the proxy: @databricks/sql 2.1.0
// over TLS (customCaCert) and hive-driver 1.0.0 over HTTP with a Basic
// login, with resets on status and close and a gzip-compressing hop
// between proxy and simulator, which compresses when asked (and stale
// pooled connections for
// @databricks/sql, which retries on its own; hive-driver retries nothing
// and hangs on a non-200, so it gets the resets the proxy heals).
// Every statement returns its row or a clear error, nothing stays open
// on the server, and the proxy reads every answer.
func TestProxyNodeDrivers(t *testing.T) {
	modules := nodeModules(t)
	for _, tc := range []struct {
		script, faults string
		tls, gzip      bool // gzip: the driver asks for it (hive-driver does not)
	}{
		{"databricks_sql.js", "reset=0.3@GetOperationStatus,reset=0.3@CloseOperation,stale=0.3", true, true},
		{"hive_driver.js", "reset=0.3@GetOperationStatus,reset=0.3@CloseOperation", false, false},
	} {
		t.Run(tc.script, func(t *testing.T) {
			s := startSim(t, "")
			var gzipped atomic.Int64
			hop := gzipHop(t, s.URL(), &gzipped)
			so := proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"}
			var ca string
			if tc.tls {
				so.TLSCert, so.TLSKey = selfSigned(t)
				ca = so.TLSCert
			}
			log := &proxyLog{}
			p, err := proxy.Start(context.Background(), proxy.Options{Upstream: hop, Heal: true, UserAgent: "dbxtop-proxy/conformance",
				Logger: log.logger(), CloseDefer: 3 * time.Second}, so)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = p.Close(ctx)
			})
			host, port := urlHostPort(t, p.URL())
			setFaults(t, s, tc.faults)
			const n = 6
			r := runNode(t, modules, tc.script, "DBX_HOST="+host, "DBX_PORT="+strconv.Itoa(port),
				"DBX_PATH=/sql/1.0/warehouses/"+firstWarehouse(t, s), "DBX_TOKEN="+s.Token(), "DBX_CA="+ca, "DBX_N="+strconv.Itoa(n))
			setFaults(t, s, "")
			t.Logf("PROXY %s: %d ok, %d failed %v; %d answers gzipped; proxy %+v; faults %v", tc.script, r.OK, r.Failed, r.Errors,
				gzipped.Load(), p.Stats(), s.Stats().Faults)
			if r.OK+r.Failed != n || r.OK == 0 {
				t.Fatalf("%d ok, %d failed of %d: %v", r.OK, r.Failed, n, r.Errors)
			}
			for _, e := range r.Errors {
				if strings.TrimSpace(e) == "" || strings.Contains(e, "no answer within") {
					t.Errorf("a statement failed without a clear error: %q", e)
				}
			}
			waitFor(t, s, 90*time.Second, "nothing open on the server", func(tr truth) bool {
				for _, o := range tr.Operations {
					if o.Open {
						return false
					}
				}
				return true
			})
			if st := p.Stats(); st.Undecodable != 0 || st.Unobserved != 0 {
				t.Errorf("the proxy could not read %d answers (%d unobserved)", st.Undecodable, st.Unobserved)
			}
			// The upstream is asked for gzip exactly when the driver asked.
			if got := gzipped.Load() > 0; got != tc.gzip {
				t.Errorf("%d answers gzipped; the driver asks for gzip: %v", gzipped.Load(), tc.gzip)
			}
			noSecret(t, s, "proxy log", log.String())
			_ = sim.Faults{}
		})
	}
}

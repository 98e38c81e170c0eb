package conformance

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dbsql "github.com/databricks/databricks-sql-go"

	"github.com/dbxtop/dbxtop/internal/testenv"
	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// nginxOptions are the few choices a test makes about its nginx; the rest
// is the anchor the proxy is compared with: Debian's nginx as a plain
// reverse proxy, two workers, round-robin over the upstreams, keepalive
// connections to them.
type nginxOptions struct {
	// TLSCert and TLSKey, when set, make nginx listen with TLS (for
	// @databricks/sql, which speaks TLS with customCaCert).
	TLSCert, TLSKey string
	// Extra is put verbatim into the location block (e.g.
	// "proxy_next_upstream error timeout non_idempotent;").
	Extra string
}

// startNginx runs Debian's nginx in front of upstreams (http:// URLs) on
// a free loopback port and returns its host:port. Its configuration, pid
// and error log live in a t.TempDir; it is stopped, and its workers with
// it, when the test ends. Without nginx the test skips with one line, or
// fails under CI=true (.ci/run installs nginx-light).
func startNginx(t testing.TB, upstreams []string, o nginxOptions) (addr string) {
	t.Helper()
	return runNginx(t, upstreams, o).addr
}

// nginxProc is a running nginx: where it listens and its master's pid
// (its workers are the master's children).
type nginxProc struct {
	addr string
	pid  int
}

func runNginx(t testing.TB, upstreams []string, o nginxOptions) nginxProc {
	t.Helper()
	bin := testenv.Tool(t, "nginx")
	if len(upstreams) == 0 {
		t.Fatal("startNginx: no upstreams")
	}
	var servers strings.Builder
	for _, u := range upstreams {
		pu, err := url.Parse(u)
		if err != nil || pu.Host == "" || pu.Scheme != "http" {
			t.Fatalf("startNginx: upstream %q is not an http://host:port URL", u)
		}
		host, _, err := net.SplitHostPort(pu.Host)
		if err != nil || !net.ParseIP(host).IsLoopback() {
			t.Fatalf("startNginx: upstream %q is not on loopback", u)
		}
		fmt.Fprintf(&servers, "\t\tserver %s;\n", pu.Host)
	}
	dir := t.TempDir()
	// A port taken by someone else between our probe and nginx's bind is
	// the one race here: a few attempts with fresh ports.
	var lastErr error
	var addr string
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		addr = net.JoinHostPort("127.0.0.1", port)
		conf := nginxConf(dir, addr, servers.String(), o)
		confPath := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its workers go with it
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			t.Fatalf("start nginx: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if lastErr = awaitListening(addr, exited, 10*time.Second); lastErr == nil {
			t.Cleanup(func() { stopNginx(t, cmd.Process.Pid, exited, dir) })
			return nginxProc{addr: addr, pid: cmd.Process.Pid}
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		if !strings.Contains(readLog(dir), "Address already in use") {
			break
		}
	}
	t.Fatalf("nginx did not start on %s: %v; error.log:\n%s", addr, lastErr, readLog(dir))
	return nginxProc{}
}

func nginxConf(dir, addr, servers string, o nginxOptions) string {
	var b strings.Builder
	if os.Geteuid() == 0 {
		// Workers stay root: as nobody they could not use the
		// temporary directory the test owns.
		b.WriteString("user root;\n")
	}
	listen := addr
	var tls string
	if o.TLSCert != "" {
		listen += " ssl"
		tls = fmt.Sprintf("\t\tssl_certificate %s;\n\t\tssl_certificate_key %s;\n", o.TLSCert, o.TLSKey)
	}
	fmt.Fprintf(&b, `worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	upstream backends {
%[2]s		keepalive 64;
	}
	server {
		listen %[3]s;
%[4]s		client_max_body_size 0;
		location / {
			proxy_pass http://backends;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host $http_host;
			proxy_read_timeout 600s;
			proxy_send_timeout 600s;
			%[5]s
		}
	}
}
`, dir, servers, listen, tls, o.Extra)
	return b.String()
}

// freePort returns a loopback port nobody listens on at the moment.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// awaitListening waits until addr accepts a connection, the process
// exits, or within passes.
func awaitListening(addr string, exited <-chan error, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("nginx exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening after %s: %w", within, err)
		}
	}
}

// stopNginx asks the master to stop (SIGTERM: fast shutdown) and, if it
// and its workers are not gone within a few seconds, kills the group.
func stopNginx(t testing.TB, pid int, exited <-chan error, dir string) {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
		t.Logf("nginx did not stop on SIGTERM within 5s; killed. error.log:\n%s", readLog(dir))
	}
	// Workers of a master that exited are in its process group.
	if err := syscall.Kill(-pid, 0); err == nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	} else if !errors.Is(err, syscall.ESRCH) {
		t.Logf("nginx process group %d: %v", pid, err)
	}
}

func readLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// openViaAddr opens databricks-sql-go against hostport (a proxy or an
// nginx in front of the simulator): the only change a user makes.
func openViaAddr(t testing.TB, s *sim.Server, hostport string, extra ...dbsql.ConnOption) *sql.DB {
	t.Helper()
	return openSQL(t, s, hostport, nil, extra...)
}

// openSQL opens databricks-sql-go against hostport, over TLS when tc is
// set, else plain HTTP.
func openSQL(t testing.TB, s *sim.Server, hostport string, tc *tls.Config, extra ...dbsql.ConnOption) *sql.DB {
	t.Helper()
	host, portS, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portS)
	g := newGuardTransport(hostport, false)
	if tc != nil {
		g.base.TLSClientConfig = tc
	} else {
		host = "http://" + host
	}
	opts := []dbsql.ConnOption{
		dbsql.WithServerHostname(host),
		dbsql.WithPort(port),
		dbsql.WithHTTPPath("/sql/1.0/warehouses/" + firstWarehouse(t, s)),
		dbsql.WithAccessToken(s.Token()),
		dbsql.WithTransport(g),
	}
	c, err := dbsql.NewConnector(append(opts, extra...)...)
	if err != nil {
		t.Fatalf("dbsql.NewConnector: %v", err)
	}
	return sqlOpenDB(t, c, g)
}

// The harness itself: nginx round-robins databricks-sql-go's requests
// over two dbxtop proxies in front of one simulator; every statement
// returns its row, both proxies carry requests, nothing stays open on
// the server, and nginx is gone (its port refuses) once the test ends.
func TestNginxHarnessRoundRobin(t *testing.T) {
	t.Parallel()
	s := startSim(t, "")
	var addr string
	var p1, p2 *proxy.Server
	t.Run("two proxies behind nginx", func(t *testing.T) {
		p1, p2 = startProxy(t, s, nil), startProxy(t, s, nil)
		addr = startNginx(t, []string{p1.URL(), p2.URL()}, nginxOptions{})
		db := openViaAddr(t, s, addr)
		db.SetMaxOpenConns(2)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for i := 1; i <= 8; i++ {
			var v int64
			if err := db.QueryRowContext(ctx, "SELECT "+strconv.Itoa(i)).Scan(&v); err != nil || v != int64(i) {
				t.Fatalf("SELECT %d through nginx: %v (got %d)", i, err, v)
			}
		}
		db.Close()
		r1, r2 := p1.Stats().Requests, p2.Stats().Requests
		t.Logf("NGINX round-robin: proxy 1 saw %d requests, proxy 2 %d", r1, r2)
		if r1 == 0 || r2 == 0 {
			t.Errorf("nginx did not spread requests over both upstreams: %d and %d", r1, r2)
		}
		waitFor(t, s, 30*time.Second, "nothing open on the server", func(tr truth) bool {
			for _, o := range tr.Operations {
				if o.Open {
					return false
				}
			}
			return true
		})
	})
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("nginx still listens on %s after its test ended", addr)
	}
}

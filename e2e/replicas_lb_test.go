package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/targets"
	"github.com/dbxtop/dbxtop/internal/testenv"
	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// contribNginx turns the shipped replica configuration into one that
// runs on loopback: the replicas' addresses for the examples, plain HTTP
// on both sides (the test has no certificate the replicas' peers trust),
// everything else as shipped.
func contribNginx(t *testing.T, replicas []string, listen string) string {
	t.Helper()
	b, err := os.ReadFile(nginxReplicasPath)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	text := regexp.MustCompile(`server 10\.0\.0\.\d+:8444`).ReplaceAllStringFunc(string(b), func(string) string {
		i++
		return "server " + replicas[(i-1)%len(replicas)]
	})
	if i != len(replicas) {
		t.Fatalf("%s lists %d replicas, the test runs %d", nginxReplicasPath, i, len(replicas))
	}
	var out strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "proxy_ssl_") || strings.Contains(line, "ssl_certificate") {
			continue
		}
		line = strings.Replace(line, "listen 443 ssl;", "listen "+listen+";", 1)
		line = strings.Replace(line, "proxy_pass https://", "proxy_pass http://", 1)
		out.WriteString(line + "\n")
	}
	return out.String()
}

// runNginx runs nginx with site (an http{} include) in dir until the test
// ends, and waits until it accepts on addr.
func runNginx(t *testing.T, bin, dir, site, addr string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	sitePath, conf := filepath.Join(dir, "site.conf"), filepath.Join(dir, "nginx.conf")
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n" // workers as nobody could not use the test's directory
	}
	tmp := filepath.Join(dir, "tmp")
	main := fmt.Sprintf("%spid %[2]s/nginx.pid;\nerror_log %[2]s/error.log warn;\nevents {}\nhttp {\n  access_log off;\n"+
		"  client_body_temp_path %[3]s;\n  proxy_temp_path %[3]s;\n  fastcgi_temp_path %[3]s;\n  uwsgi_temp_path %[3]s;\n"+
		"  scgi_temp_path %[3]s;\n  include %[4]s;\n}\n", user, dir, tmp, sitePath)
	for p, s := range map[string]string{sitePath: site, conf: main} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its workers go with it
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if err := syscall.Kill(-cmd.Process.Pid, 0); err == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		} else if !errors.Is(err, syscall.ESRCH) {
			t.Logf("nginx process group: %v", err)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited: %v\n%s", err, b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx does not accept on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// peerMetric reads one sample of a replica's /metrics (0 when absent).
func peerMetric(t *testing.T, r *proxy.Server, sample string) float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.AdminURL()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+r.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// TestReplicasBehindNginxCloseNothingAClientPolls: three proxy replicas
// behind nginx with the shipped configuration (round-robin per request,
// keepalive), finding each other in a file_sd file. A client's session
// and its statement's polls are spread over the three; while it polls,
// no replica closes the statement, though each alone would call it
// abandoned; once the client stops, it is closed.
func TestReplicasBehindNginxCloseNothingAClientPolls(t *testing.T) {
	budget(t)
	ngx := testenv.Tool(t, "nginx") // Debian: nginx-light
	// Polls every 1.5 s reach each of three replicas every 4.5 s, longer
	// than the window: each alone would call the statement abandoned.
	const window, every = 4 * time.Second, 1500 * time.Millisecond
	s := startSimServer(t, sim.Options{Scenario: sim.ScenarioQuiet, Seed: 7})
	dir := t.TempDir()
	file := filepath.Join(dir, "replicas.json")
	src, err := targets.Parse("file://"+file, targets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var replicas []*proxy.Server
	var listens, admins []string
	for range 3 {
		r, err := proxy.Start(context.Background(), proxy.Options{Upstream: s.URL(), Heal: true, CloseAbandoned: window,
			ServerIdleTimeout: time.Minute, Tick: 100 * time.Millisecond, Peers: src, UserAgent: "dbxtop-proxy/e2e"},
			proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", AdminToken: "e2e-replicas-admin-token"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = r.Close(ctx)
		})
		replicas = append(replicas, r)
		listens = append(listens, strings.TrimPrefix(r.URL(), "http://"))
		admins = append(admins, `"`+strings.TrimPrefix(r.AdminURL(), "http://")+`"`)
	}
	if err := os.WriteFile(file, []byte(`[{"targets": [`+strings.Join(admins, ", ")+`]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lb := ln.Addr().String()
	ln.Close()
	runNginx(t, ngx, filepath.Join(dir, "nginx"), contribNginx(t, listens, lb), lb)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := thrift.NewClient(thrift.Options{Host: "http://" + lb, Token: s.Token(), UserAgent: "e2e-client/1.0", Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	// Poll through nginx until every replica has looked at least once
	// and held back on a peer's evidence.
	heldBack := func() bool {
		n := 0
		for _, r := range replicas {
			if peerMetric(t, r, `dbxtop_proxy_peer_checks_total{outcome="later_call"}`) >= 1 {
				n++
			}
		}
		return n >= 2
	}
	deadline := time.Now().Add(60 * time.Second)
	for !heldBack() {
		if time.Now().After(deadline) {
			t.Fatal("the replicas never held back on each other's evidence")
		}
		if _, err := c.GetOperationStatus(ctx, op.Ref); err != nil {
			t.Fatalf("a poll through nginx: %v (closed while its client polled it?)", err)
		}
		time.Sleep(every)
	}
	for i, r := range replicas {
		if r.Stats().Requests == 0 {
			t.Errorf("replica %d saw no request: nginx did not spread the session", i)
		}
		if n := peerMetric(t, r, `dbxtop_proxy_peer_checks_total{outcome="act"}`); n != 0 {
			t.Errorf("replica %d acted %v times while the client polled", i, n)
		}
	}
	// The client goes away: the whole picture says abandoned.
	waitClosed := time.Now().Add(30 * time.Second)
	for {
		open := false
		for _, o := range s.Truth().Operations {
			open = open || o.StatementID == op.Ref.StatementID && o.Open
		}
		if !open {
			break
		}
		if time.Now().After(waitClosed) {
			t.Fatal("the abandoned statement was never closed")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

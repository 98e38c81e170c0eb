// Package dnstest is for tests only: a DNS server on loopback
// (github.com/miekg/dns) that answers A and AAAA queries for the names a
// test sets, so that a dns+http:// target resolves to 127.0.0.2,
// 127.0.0.3… through the resolver the test injects
// (targets.NewResolver, the hidden --dns-server option). It imports no
// project package.
package dnstest

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// Server answers from its records; unknown names get NXDOMAIN.
type Server struct {
	addr    string
	mu      sync.Mutex
	records map[string][]net.IP
	queries atomic.Int64
	servers []*dns.Server
}

// Start serves UDP and TCP on one loopback port until the test ends.
// records maps a name to its addresses; Set changes them.
func Start(t testing.TB, records map[string][]string) *Server {
	t.Helper()
	s := &Server{records: map[string][]net.IP{}}
	for name, ips := range records {
		s.Set(name, ips...)
	}
	var pc net.PacketConn
	var ln net.Listener
	for range 20 { // a TCP listener on the UDP port: retry when taken
		p, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("dnstest: %v", err)
		}
		if l, err := net.Listen("tcp", p.LocalAddr().String()); err == nil {
			pc, ln = p, l
			break
		}
		p.Close()
	}
	if pc == nil {
		t.Fatal("dnstest: no loopback port free for both UDP and TCP")
	}
	s.addr = pc.LocalAddr().String()
	h := dns.HandlerFunc(s.serve)
	s.servers = []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}}
	var started sync.WaitGroup
	var done sync.WaitGroup
	for _, srv := range s.servers {
		started.Add(1)
		done.Add(1)
		srv.NotifyStartedFunc = started.Done
		go func() {
			defer done.Done()
			_ = srv.ActivateAndServe()
		}()
	}
	started.Wait()
	t.Cleanup(func() {
		for _, srv := range s.servers {
			_ = srv.Shutdown()
		}
		done.Wait()
	})
	return s
}

// Addr is the server's IP:PORT, for targets.NewResolver or --dns-server.
func (s *Server) Addr() string { return s.addr }

// Queries counts the questions answered so far.
func (s *Server) Queries() int64 { return s.queries.Load() }

// Set replaces name's addresses (none: NXDOMAIN).
func (s *Server) Set(name string, ips ...string) {
	var list []net.IP
	for _, a := range ips {
		ip := net.ParseIP(a)
		if ip == nil {
			panic("dnstest: not an IP: " + a)
		}
		list = append(list, ip)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[dns.Fqdn(strings.ToLower(name))] = list
}

func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	s.queries.Add(1)
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	s.mu.Lock()
	found := false
	for _, q := range req.Question {
		ips, ok := s.records[strings.ToLower(q.Name)]
		found = found || ok && len(ips) > 0
		for _, ip := range ips {
			hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 1}
			switch v4 := ip.To4(); {
			case q.Qtype == dns.TypeA && v4 != nil:
				hdr.Rrtype = dns.TypeA
				m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: v4})
			case q.Qtype == dns.TypeAAAA && v4 == nil:
				hdr.Rrtype = dns.TypeAAAA
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: ip})
			}
		}
	}
	s.mu.Unlock()
	if !found {
		m.Rcode = dns.RcodeNameError
	}
	_ = w.WriteMsg(m)
}

package tests

import (
	"io"
	"net"
	"os"
	"sync"
	"testing"
)

// proxy forwards TCP connections to a target and can cut them all, as a
// network failure would: the tab behind it sees its socket drop.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex // guards the fields below
	conns []net.Conn
	ncuts int
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.accept()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { io.Copy(out, in); out.Close() }()
		go func() { io.Copy(in, out); in.Close() }()
	}
}

// cut closes every connection through the proxy.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.conns) > 0 {
		p.ncuts++
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ncuts
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

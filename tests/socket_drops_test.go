package tests

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// TestDroppedSocketsLeaveTheRelayServing opens 2,000 tab sockets against a
// relay whose file-descriptor limit is 256, and drops each without a close
// frame (FIN or RST; before the hello, or after the welcome): with one
// leaked fd per socket the relay stopped accepting anything after about
// 250. After them it still answers /health, MCP calls through a tab, and
// new tabs, and its open fds are back where they were.
func TestDroppedSocketsLeaveTheRelayServing(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	const limit, sockets, parallel = 256, 2000, 16
	listen, admin := freePort(t), freePort(t)
	// A thousand of the sockets are welcomed, each a new browser of one
	// address: no limit on new pairings here.
	p := startServeUnder(t, []string{"prlimit", fmt.Sprintf("--nofile=%d:%d", limit, limit), "--"}, listen, admin, t.TempDir(),
		"RELAY_NEW_PAIRINGS_PER_HOUR=0")
	if got := p.metric(t, "process_max_fds"); got != strconv.Itoa(limit) {
		t.Fatalf("process_max_fds = %q, want %d", got, limit)
	}
	c := p.tabAndClient(t, "whoami")
	call := func() {
		t.Helper()
		if rep := c.send("tools/call", map[string]any{"name": "whoami"}, false, nil); rep.err != nil || rep.result["isError"] == true {
			t.Fatalf("tools/call whoami: %d %v %v", rep.status, rep.err, rep.result)
		}
	}
	call()
	before := fdsOf(t, p)

	ways := []func(net.Conn, *bufio.Reader) error{
		func(net.Conn, *bufio.Reader) error { return nil },                // FIN before the hello
		func(c net.Conn, _ *bufio.Reader) error { return rst(c) },         // RST before the hello
		func(c net.Conn, r *bufio.Reader) error { return welcomed(c, r) }, // FIN after the welcome
		func(c net.Conn, r *bufio.Reader) error { // RST after the welcome
			if err := welcomed(c, r); err != nil {
				return err
			}
			return rst(c)
		},
	}
	var wg sync.WaitGroup
	var failed atomic.Bool
	errs := make(chan error, sockets)
	next := make(chan int)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if failed.Load() {
					continue // one refused upgrade says it: the rest would wait out their deadlines
				}
				if err := dropOne(listen, ways[i%len(ways)]); err != nil {
					failed.Store(true)
					errs <- fmt.Errorf("socket %d: %w", i, err)
				}
			}
		}()
	}
	for i := range sockets {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v (the relay ran out of fds?)\n%s", err, tail(p.stderr.String(), 5))
	}

	resp, err := http.Get(p.url + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/health after the drops: %v %v", resp, err)
	}
	resp.Body.Close()
	call()
	b2 := newBrowser(t)
	b2.startTab(p.url, "new")
	eventually(t, func() bool { return p.metric(t, "tabrelay_tabs_connected") == "2" }, "a new tab connects")
	eventually(t, func() bool { return p.metric(t, "tabrelay_tab_sockets_open") == "2" }, "only the two tabs' sockets stay open")
	// The new tab holds one more socket; a few more for its requests.
	eventually(t, func() bool { return fdsOf(t, p) <= before+4 }, "open fds back near %d", before)
	if dropped := p.metric(t, `tabrelay_tab_socket_ends_total{how="dropped"}`); dropped != strconv.Itoa(sockets) {
		t.Fatalf(`socket ends{how="dropped"} = %s, want %d`, dropped, sockets)
	}
	if strings.Contains(p.stderr.String(), "too many open files") {
		t.Fatalf("the relay ran out of fds:\n%s", tail(p.stderr.String(), 20))
	}
}

func fdsOf(t *testing.T, p *serveProc) int {
	t.Helper()
	n, err := strconv.ParseFloat(p.metric(t, "process_open_fds"), 64)
	if err != nil {
		t.Fatalf("process_open_fds: %v", err)
	}
	return int(n)
}

// dropOne upgrades a tab socket by hand, does what end says, and closes
// the TCP connection without a close frame.
func dropOne(addr string, end func(net.Conn, *bufio.Reader) error) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if _, err := clientHandshake(c, r, addr, origin); err != nil {
		return err
	}
	return end(c, r)
}

// welcomed sends a hello with a fresh secret and reads the welcome frame.
func welcomed(c net.Conn, r *bufio.Reader) error {
	secret := make([]byte, 32)
	rand.Read(secret)
	hello := fmt.Sprintf(`{"type":"hello","protocol":%d,"secret":%q,"tabId":"t1"}`, protocol.Version,
		base64.RawURLEncoding.EncodeToString(secret))
	if _, err := c.Write(clientFrame(0x1, []byte(hello))); err != nil {
		return err
	}
	head := make([]byte, 2)
	if _, err := r.Read(head[:1]); err != nil {
		return err
	}
	if _, err := r.Read(head[1:]); err != nil {
		return err
	}
	if head[0] != 0x81 {
		return fmt.Errorf("first frame %#x, want a text frame (the welcome)", head[0])
	}
	return nil
}

func rst(c net.Conn) error { return c.(*net.TCPConn).SetLinger(0) }

package tabsocket_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/tabsocket"
)

// TestUpgradesOverTheBoundWaitTheirTurn: a node works on MaxHandshakes
// upgrades at once (a storm of reconnecting tabs must not crowd out what
// else it serves); one over the bound waits for a turn, and is refused
// with 503 and Retry-After when none comes within HandshakeWait.
func TestUpgradesOverTheBoundWaitTheirTurn(t *testing.T) {
	e := newEnv(t, func(c *tabsocket.Config) { c.MaxHandshakes, c.HandshakeWait = 1, 5*time.Second })
	first := e.mustDial() // it holds the one turn until its hello is done
	e.waitTimers(2)       // its hello deadline, and the sockets' ping schedule

	type dialed struct {
		c    *websocket.Conn
		resp *http.Response
		err  error
	}
	dial := func() chan dialed {
		out := make(chan dialed, 1)
		go func() {
			c, resp, err := e.dial(origin)
			out <- dialed{c, resp, err}
		}()
		return out
	}
	refused := dial()
	e.waitTimers(3) // it waits for a turn
	e.clock.Advance(5 * time.Second)
	d := <-refused
	if d.err == nil || d.resp == nil || d.resp.StatusCode != http.StatusServiceUnavailable || d.resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("an upgrade that found no turn: %v %+v; want 503 with Retry-After: 1", d.err, d.resp)
	}
	if n := testutil.ToFloat64(e.metrics.Refused.WithLabelValues("busy")); n != 1 {
		t.Fatalf("refused{busy} = %v, want 1", n)
	}

	waiting := dial()
	e.waitTimers(3)
	send(t, first, hello(newSecret(), "first"))
	if m, _ := read(t, first); m == nil || m["type"] != protocol.TypeWelcome {
		t.Fatalf("the first tab got %v, want its welcome", m)
	}
	d = <-waiting // the first's turn is over: this one had waited for it
	if d.err != nil {
		t.Fatalf("the upgrade that waited: %v", d.err)
	}
	defer d.c.CloseNow()
	send(t, d.c, hello(newSecret(), "second"))
	if m, _ := read(t, d.c); m == nil || m["type"] != protocol.TypeWelcome {
		t.Fatalf("the tab that waited got %v, want its welcome", m)
	}
}

package tabsocket_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/pairing"
	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/tabsocket"
)

// FuzzTabSocket sends arbitrary frames on a proven tab's socket, over a
// real WebSocket: a frame that is not a JSON object with a type closes the
// socket as "not of the protocol", a message of a type the relay does not
// know is answered by ref and the socket goes on, and nothing a tab sends
// takes the endpoint down (a new socket of the browser is welcomed).
func FuzzTabSocket(f *testing.F) {
	for _, seed := range []string{
		`{"type":"focus","at":1}`, `{"type":"focus","at":"x"}`, `{"type":"result","id":"never-sent","result":{"data":1}}`,
		`{"type":"result","id":"","result":{}}`, `{"type":"result","id":"c","result":{"images":"x"}}`,
		`{"type":"asking","id":"never-sent"}`, `{"type":"answered"}`, `{"type":"step","by":"person"}`,
		`{"type":"progress","id":"x","progress":1e999}`, `{"type":"permissions","id":"q","tools":{"a":1}}`,
		`{"type":"log","id":"x","level":"info","data":}`, `{"type":"permissions-changed"}`, `{"type":"pong"}`,
		`{"type":"approve","ref":"r","code":"KQ7M-2XDP"}`, `{"type":"hello","protocol":1}`,
		`{"type":"x-newer","ref":"r1"}`, `{"type":"x-newer","ref":7}`, `{"type":""}`, `{}`, `[]`, `"focus"`, ``,
		`{"type":"focus","type":"result"}`, `{"type":"focus"` + string(make([]byte, 1000)) + `}`,
	} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte(`{"type":"pong"}`), true)
	e := newEnv(f, func(c *tabsocket.Config) { c.RateBurst, c.RatePerSec = 1<<30, 1<<30 })
	secret := newSecret()
	var tab *websocket.Conn
	probe, reconnects := 0, 0
	f.Fuzz(func(t *testing.T, msg []byte, binary bool) {
		if tab == nil {
			// A tab id of its own each time: the registration of a socket
			// that closed at once may reach the pairing after its
			// successor's, and a same-id registration replaces the other
			// (4008; the tab reconnects). See the report of issue 15.
			reconnects++
			tab = welcomedTab(t, e, secret, fmt.Sprintf("fuzz-tab-%d", reconnects))
		}
		typ := websocket.MessageText
		if binary {
			typ = websocket.MessageBinary
		}
		probe++
		ref := fmt.Sprintf("probe-%d", probe)
		write(t, tab, typ, msg)
		// The probe's write fails when msg closed the socket already: the
		// read below gets the close code.
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		_ = tab.Write(ctx, websocket.MessageText, []byte(`{"type":"x-probe","ref":"`+ref+`"}`))
		cancel()
		env, err := protocol.DecodeType(msg)
		decodes := err == nil && !binary
		unknown := false
		if decodes {
			m, err := protocol.DecodeFromTab(env, msg)
			_, unknown = m.(protocol.Unknown)
			unknown = unknown && err == nil
		}
		for {
			m, code := read(t, tab)
			if m == nil {
				tab.CloseNow()
				tab = nil
				if code != websocket.StatusCode(protocol.CloseBadMessage) {
					t.Fatalf("closed with %d after %q", code, msg)
				}
				if unknown {
					t.Fatalf("a message of an unknown type closed the socket: %q", msg)
				}
				return
			}
			if m["type"] == protocol.TypeError && m["ref"] == ref {
				break
			}
			if unknown && m["type"] == protocol.TypeError && fmt.Sprint(m["code"]) != protocol.ErrCodeUnsupported {
				t.Fatalf("a message of an unknown type answered with %v", m)
			}
		}
		if !decodes {
			t.Fatalf("%q (binary %v) did not close the socket", msg, binary)
		}
	})
}

// FuzzTabHello sends arbitrary first frames: only a hello of this protocol
// with a well-formed secret and tab id is welcomed; anything else closes
// the socket with a stop code that says why.
func FuzzTabHello(f *testing.F) {
	for _, seed := range []string{
		`{"type":"hello","protocol":1,"secret":"` + newSecret() + `","tabId":"t1","bundle":"demo-1"}`,
		`{"type":"hello","protocol":2,"secret":"` + newSecret() + `","tabId":"t1"}`,
		`{"type":"hello","protocol":1,"secret":"short","tabId":"t1"}`,
		`{"type":"hello","protocol":1,"secret":"` + newSecret() + `","tabId":""}`,
		`{"type":"focus"}`, `{"type":"hello","protocol":"1"}`, `not json`, ``,
	} {
		f.Add([]byte(seed))
	}
	// Each valid hello makes a new pairing: no limit on them here.
	e := newEnv(f, func(c *tabsocket.Config) { c.NewPairingsPerHour = -1 })
	stops := map[websocket.StatusCode]bool{
		websocket.StatusCode(protocol.CloseBadMessage): true, websocket.StatusCode(protocol.CloseBadSecret): true,
		websocket.StatusCode(protocol.CloseUnsupportedProtocol): true, websocket.StatusMessageTooBig: true,
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		c := dialTab(t, e)
		defer c.CloseNow()
		write(t, c, websocket.MessageText, msg)
		m, code := read(t, c)
		var h protocol.Hello
		valid := json.Unmarshal(msg, &h) == nil && h.Type == protocol.TypeHello && h.Protocol == protocol.Version &&
			h.TabID != "" && len(h.TabID) <= 64 && len(msg) <= 4<<10
		if valid {
			_, err := pairing.ParseSecret(h.Secret)
			valid = err == nil
		}
		switch {
		case m != nil && m["type"] == protocol.TypeWelcome:
			if !valid {
				t.Fatalf("welcomed after %q", msg)
			}
		case m != nil:
			t.Fatalf("answered %v to a first frame %q", m, msg)
		case valid:
			t.Fatalf("a valid hello %q closed with %d", msg, code)
		case !stops[code]:
			t.Fatalf("closed with %d after %q", code, msg)
		}
	})
}

func dialTab(t *testing.T, e *env) *websocket.Conn {
	t.Helper()
	c, _, err := e.dial(origin)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c
}

func welcomedTab(t *testing.T, e *env, secret, tabID string) *websocket.Conn {
	t.Helper()
	c := dialTab(t, e)
	send(t, c, hello(secret, tabID))
	if m, code := read(t, c); m == nil || m["type"] != protocol.TypeWelcome {
		t.Fatalf("no welcome: %v (close %d)", m, code)
	}
	return c
}

func write(t *testing.T, c *websocket.Conn, typ websocket.MessageType, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := c.Write(ctx, typ, data); err != nil {
		t.Fatalf("write: %v", err)
	}
}

package tabsocket

import (
	"bytes"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// pongFrame is a pong as the relay's two tab clients write it (the SDK's
// JSON.stringify, headless's encoding/json). Recognised by its bytes, it
// skips the two JSON decodes that were a quarter of an idle relay's read
// of a pong, one from every tab each ping interval (issue 13); a pong
// spelled any other way is decoded as every message is.
var pongFrame = []byte(`{"type":"pong"}`)

// dispatch hands one message of a proven tab to whoever reads it: the
// socket itself, the connection requests, or (everything else) the tab's
// pairing actor. It returns a close code when the message ends the socket.
// data is not kept past the call: the reader's buffer is used again.
func (c *conn) dispatch(data []byte) protocol.CloseCode {
	if bytes.Equal(data, pongFrame) {
		// A pong only proves the tab alive (touch), within the rate limit.
		return c.pace(false)
	}
	env, err := protocol.DecodeType(data)
	if err != nil {
		return protocol.CloseBadMessage
	}
	if code := c.pace(env.Type == protocol.TypeResult || env.Type == protocol.TypePermissions); code != 0 {
		return code
	}
	msg, err := protocol.DecodeFromTab(env, data)
	if err != nil {
		return protocol.CloseBadMessage
	}
	tab := c.tab.Load()
	switch m := msg.(type) {
	case protocol.Hello:
		return protocol.CloseBadMessage
	case protocol.Pong:
		// A pong only proves the tab alive (touch).
	case protocol.PermissionsChanged:
		if c.s.cfg.ToolsChanged != nil {
			c.s.cfg.ToolsChanged(c.pairing)
		}
		tab.Forward(msg) // the pairing forgets the permissions answers it keeps
	case protocol.Focus:
		tab.Focus(focusTime(m.At, c.s.cfg.Clock.Now()))
	case protocol.Request:
		if c.s.cfg.Connections == nil {
			c.unsupported(env)
			break
		}
		c.request(env, msg)
	case protocol.Unknown:
		// Types of a newer protocol: answered, never a reason to close.
		c.unsupported(env)
	default:
		tab.Forward(msg)
	}
	return 0
}

// pace takes one message out of the tab's rate limit (SPEC §6): an
// answer (a result, permissions) is paid for by the question the relay
// sent (asks); asking, answered and answers beyond the questions sent
// count like everything else the tab says on its own. Over the limit the
// tab is closed as too fast.
func (c *conn) pace(answer bool) protocol.CloseCode {
	paid := answer && c.takeCredit()
	if !paid && !c.bucket.take(c.s.cfg.Clock.Now()) {
		return protocol.CloseTooFast
	}
	return 0
}

// focusTime is when a tab says it was focused (Unix ms; 0: now), never
// later than now: a focus in the future (a tab's clock ahead, or a tab
// that wants every call) would keep that tab first in its browser's
// order whatever the person focuses next (docs/security.md).
func focusTime(ms int64, now time.Time) time.Time {
	if ms <= 0 || ms > now.UnixMilli() {
		return now
	}
	return time.UnixMilli(ms)
}

package tabsocket

import (
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// dispatch hands one message of a proven tab to whoever reads it: the
// socket itself, the connection requests, or (everything else) the tab's
// pairing actor. It returns a close code when the message ends the socket.
func (c *conn) dispatch(data []byte) protocol.CloseCode {
	env, err := protocol.DecodeType(data)
	if err != nil {
		return protocol.CloseBadMessage
	}
	// A result is paid for by the call the relay sent; asking, answered
	// and results beyond the calls sent count like everything else the
	// tab says on its own.
	paid := env.Type == protocol.TypeResult && c.takeCredit()
	if !paid && !c.bucket.take(c.s.cfg.Clock.Now()) {
		return protocol.CloseTooFast
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
	case protocol.Focus:
		tab.Focus(focusTime(m.At, c.s.cfg.Clock.Now()))
	case protocol.ConnectInfoRequest, protocol.Approve, protocol.ListConnections, protocol.Forget, protocol.SetScope:
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

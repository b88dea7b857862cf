package tabsocket

import (
	"encoding/json"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// dispatch hands one message of a proven tab to its tab actor. It returns
// a close code when the message ends the socket.
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
	tab := c.tab.Load()
	switch env.Type {
	case protocol.TypeFocus:
		return handle(data, func(*protocol.Focus) bool { return true }, func(m protocol.Focus) {
			tab.Focus(focusTime(m.At, c.s.cfg.Clock.Now()))
		})
	case protocol.TypeResult:
		// The result goes on as the tab sent it, once it decodes as one.
		return handle(data, func(m *rawResult) bool {
			var r protocol.TabResult
			return m.ID != "" && json.Unmarshal(m.Result, &r) == nil
		}, func(m rawResult) { tab.Result(m.ID, m.Result) })
	case protocol.TypeAsking, protocol.TypeAnswered:
		return handle(data, func(m *protocol.Asking) bool { return m.ID != "" }, func(m protocol.Asking) {
			tab.Asking(m.ID, env.Type == protocol.TypeAsking)
		})
	case protocol.TypeProgress:
		return handle(data, func(m *protocol.Progress) bool { return m.ID != "" }, tab.Progress)
	case protocol.TypePermissions:
		return handle(data, func(m *protocol.Permissions) bool { return m.ID != "" }, tab.Permissions)
	case protocol.TypeLog:
		return handle(data, func(m *protocol.Log) bool { return m.ID != "" && json.Valid(m.Data) }, tab.Log)
	case protocol.TypeStep:
		return handle(data, func(m *protocol.Step) bool { return m.By != "" }, func(m protocol.Step) { tab.Step(m.By) })
	case protocol.TypePong:
		// A pong only proves the tab alive (touch).
	case protocol.TypePermissionsChanged:
		if c.s.cfg.ToolsChanged != nil {
			c.s.cfg.ToolsChanged(c.pairing)
		}
	case protocol.TypeHello:
		return protocol.CloseBadMessage
	case protocol.TypeConnectInfo, protocol.TypeApprove, protocol.TypeDecline, protocol.TypeListConnections, protocol.TypeForget, protocol.TypeSetScope:
		if c.s.cfg.Connections != nil {
			return c.request(env, data)
		}
		c.unsupported(env)
	default:
		// Types of a newer protocol: answered, never a reason to close.
		c.unsupported(env)
	}
	return 0
}

// rawResult is a result message whose result stays JSON.
type rawResult struct {
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result"`
}

// handle decodes data as a T, checks it with valid and hands it to use. A
// message that does not decode or check closes the socket as not of the
// protocol.
func handle[T any](data []byte, valid func(*T) bool, use func(T)) protocol.CloseCode {
	var m T
	if json.Unmarshal(data, &m) != nil || !valid(&m) {
		return protocol.CloseBadMessage
	}
	use(m)
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

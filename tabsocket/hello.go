package tabsocket

import (
	"context"
	"encoding/json"
	"time"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/protocol"
)

// storeTimeout bounds the pairing store's answer to a hello.
const storeTimeout = 5 * time.Second

// readHello reads and checks the first message: it must be a hello of this
// protocol version carrying a well-formed secret, within the hello
// deadline (the timer in run closes the socket otherwise).
func (c *conn) readHello() bool {
	typ, data, err := c.ws.Read(c.ctx)
	if err != nil {
		c.readFailed(err)
		return false
	}
	if typ != websocket.MessageText {
		c.close(protocol.CloseBadMessage)
		return false
	}
	var h protocol.Hello
	if err := json.Unmarshal(data, &h); err != nil || h.Type != protocol.TypeHello {
		c.close(protocol.CloseBadMessage)
		return false
	}
	if h.Protocol != protocol.Version {
		c.close(protocol.CloseUnsupportedProtocol)
		return false
	}
	if h.TabID == "" || len(h.TabID) > 64 {
		c.close(protocol.CloseBadMessage)
		return false
	}
	secret, err := ParseSecret(h.Secret)
	if err != nil {
		c.close(protocol.CloseBadSecret)
		return false
	}
	id, hash := DerivePairing(c.s.cfg.SigningKey, secret)
	c.log.Store(c.log.Load().With("pairing", id, "tab", h.TabID))
	ctx, cancel := context.WithTimeout(c.ctx, storeTimeout)
	defer cancel()
	p, err := c.s.cfg.Store.TouchPairing(ctx, id, hash, c.s.cfg.Clock.Now())
	switch {
	case err != nil:
		c.log.Load().Error("pairing store failed", "err", err)
		c.close(protocol.CloseUnavailable)
		return false
	case p.Forgotten:
		c.close(protocol.CloseForgotten)
		return false
	case !equalMAC(p.SecretHash, hash):
		c.close(protocol.CloseBadSecret) // another signing key, or a collision
		return false
	}
	if c.code.Load() != 0 {
		return false // the hello deadline passed meanwhile
	}
	c.proven.Store(true)
	c.pairing = id
	var focused time.Time
	if h.FocusedAt > 0 {
		focused = time.UnixMilli(h.FocusedAt)
	}
	if h.Reconnects > 0 {
		c.s.cfg.Metrics.Reconnects.Inc()
	}
	// The welcome goes first: a call waiting for this browser may be sent
	// as soon as the tab actor exists.
	c.Send(protocol.Welcome{Envelope: protocol.Typed(protocol.TypeWelcome), Protocol: protocol.Version, Pairing: id,
		PingIntervalMs: c.s.cfg.PingInterval.Milliseconds(), MaxMessage: protocol.MaxMessageBytes})
	tab := c.s.cfg.Hub.Accept(actors.TabInfo{Pairing: id, TabID: h.TabID, FocusedAt: focused}, c)
	c.tab.Store(tab)
	if c.code.Load() != 0 {
		tab.Close() // closed while the tab was being accepted: release it here
		return false
	}
	return true
}

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
	switch env.Type {
	case protocol.TypeFocus:
		var m protocol.Focus
		if json.Unmarshal(data, &m) != nil {
			return protocol.CloseBadMessage
		}
		at := c.s.cfg.Clock.Now()
		if m.At > 0 {
			at = time.UnixMilli(m.At)
		}
		c.tab.Load().Focus(at)
	case protocol.TypeResult:
		var m protocol.Result
		if json.Unmarshal(data, &m) != nil || m.ID == "" {
			return protocol.CloseBadMessage
		}
		c.tab.Load().Result(m)
	case protocol.TypeAsking, protocol.TypeAnswered:
		var m protocol.Asking
		if json.Unmarshal(data, &m) != nil || m.ID == "" {
			return protocol.CloseBadMessage
		}
		c.tab.Load().Asking(m.ID, env.Type == protocol.TypeAsking)
	case protocol.TypeProgress:
		var m protocol.Progress
		if json.Unmarshal(data, &m) != nil || m.ID == "" {
			return protocol.CloseBadMessage
		}
		c.tab.Load().Progress(m)
	case protocol.TypePermissions:
		var m protocol.Permissions
		if json.Unmarshal(data, &m) != nil || m.ID == "" {
			return protocol.CloseBadMessage
		}
		c.tab.Load().Permissions(m)
	case protocol.TypeLog:
		var m protocol.Log
		if json.Unmarshal(data, &m) != nil || m.ID == "" || !json.Valid(m.Data) {
			return protocol.CloseBadMessage
		}
		c.tab.Load().Log(m)
	case protocol.TypeStep:
		var m protocol.Step
		if json.Unmarshal(data, &m) != nil || m.By == "" {
			return protocol.CloseBadMessage
		}
		c.tab.Load().Step(m.By)
	case protocol.TypePong:
		// A pong only proves the tab alive (touch).
	case protocol.TypePermissionsChanged:
		if c.s.cfg.ToolsChanged != nil {
			c.s.cfg.ToolsChanged(c.pairing)
		}
	case protocol.TypeHello:
		return protocol.CloseBadMessage
	case protocol.TypeApprove, protocol.TypeDecline, protocol.TypeListConnections, protocol.TypeForget, protocol.TypeSetScope:
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

func (c *conn) unsupported(env protocol.Envelope) {
	c.Send(protocol.Error{Envelope: protocol.Envelope{Type: protocol.TypeError, Ref: env.Ref},
		Code: protocol.ErrCodeUnsupported, Message: "This relay does not handle " + quoteType(env.Type) + " messages."})
}

func quoteType(t string) string {
	if len(t) > 40 {
		t = t[:40]
	}
	b, _ := json.Marshal(t)
	return string(b)
}

func equalMAC(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	var v byte
	for i := range a {
		v |= a[i] ^ b[i]
	}
	return v == 0
}

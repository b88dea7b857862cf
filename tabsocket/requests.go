package tabsocket

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// requestTimeout bounds the authorization server's answer to a tab request.
const requestTimeout = 10 * time.Second

// request runs a tab's request about connections in its own goroutine (the
// store may take a moment; the reader goes on) and answers it by ref.
func (c *conn) request(env protocol.Envelope, data []byte) protocol.CloseCode {
	var m struct {
		protocol.Envelope
		Code       string                `json:"code"`
		Scope      []protocol.ScopeEntry `json:"scope"`
		Connection string                `json:"connection"`
	}
	if json.Unmarshal(data, &m) != nil {
		return protocol.CloseBadMessage
	}
	pairing, addr := c.pairing, c.addr
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, requestTimeout)
		defer cancel()
		reply, err := c.decide(ctx, env, pairing, addr, m.Code, m.Connection, m.Scope)
		if err != nil {
			c.Send(requestError(env.Ref, err))
			return
		}
		c.Send(reply)
	}()
	return 0
}

func (c *conn) decide(ctx context.Context, env protocol.Envelope, pairing, addr, code, connection string, scope []protocol.ScopeEntry) (any, error) {
	cs := c.s.cfg.Connections
	done := protocol.Done{Envelope: protocol.Envelope{Type: protocol.TypeDone, Ref: env.Ref}}
	switch env.Type {
	case protocol.TypeConnectInfo:
		info, err := cs.ConnectInfo(ctx, pairing, addr, code)
		info.Envelope = protocol.Envelope{Type: protocol.TypeConnectInfo, Ref: env.Ref}
		return info, err
	case protocol.TypeApprove:
		info, err := cs.Approve(ctx, pairing, addr, code, scope)
		done.Connection = &info
		return done, err
	case protocol.TypeDecline:
		return done, cs.Decline(ctx, pairing, addr, code)
	case protocol.TypeForget:
		return done, cs.Forget(ctx, pairing, connection)
	case protocol.TypeSetScope:
		info, err := cs.SetScope(ctx, pairing, connection, scope)
		done.Connection = &info
		return done, err
	default: // list-connections
		list, err := cs.Connections(ctx, pairing)
		return protocol.Connections{Envelope: protocol.Envelope{Type: protocol.TypeConnections, Ref: env.Ref}, Connections: list}, err
	}
}

func requestError(ref string, err error) protocol.Error {
	var rerr *protocol.RelayError
	if !errors.As(err, &rerr) {
		rerr = protocol.ErrUnavailable
	}
	return protocol.Error{Envelope: protocol.Envelope{Type: protocol.TypeError, Ref: ref}, Code: rerr.Code, Message: rerr.Message}
}

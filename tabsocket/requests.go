package tabsocket

import (
	"context"
	"errors"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// requestTimeout bounds the authorization server's answer to a tab request.
const requestTimeout = 10 * time.Second

// request runs a tab's request about connections in its own goroutine (the
// store may take a moment; the reader goes on) and answers it by ref.
func (c *conn) request(env protocol.Envelope, m protocol.FromTab) {
	pairing, addr := c.pairing, c.addr
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, requestTimeout)
		defer cancel()
		reply, err := c.decide(ctx, env, m, pairing, addr)
		if err != nil {
			c.Send(requestError(env.Ref, err))
			return
		}
		c.Send(reply)
	}()
}

// decide does what request m asks, and returns its answer or why not.
func (c *conn) decide(ctx context.Context, env protocol.Envelope, m protocol.FromTab, pairing, addr string) (protocol.ToTab, error) {
	cs := c.s.cfg.Connections
	done := protocol.Done{Envelope: protocol.Envelope{Type: protocol.TypeDone, Ref: env.Ref}}
	switch m := m.(type) {
	case protocol.ConnectInfoRequest:
		info, err := cs.ConnectInfo(ctx, pairing, addr, m.Code)
		info.Envelope = protocol.Envelope{Type: protocol.TypeConnectInfo, Ref: env.Ref}
		return info, err
	case protocol.Approve:
		if env.Type == protocol.TypeDecline {
			return done, cs.Decline(ctx, pairing, addr, m.Code)
		}
		info, confirm, err := cs.ApproveVia(ctx, pairing, addr, m.Code, m.Scope, m.Via)
		if confirm != "" {
			done.Confirm = confirm // the connection comes with the browser's proof
		} else {
			done.Connection = &info
		}
		return done, err
	case protocol.Forget:
		return done, cs.Forget(ctx, pairing, m.Connection)
	case protocol.SetScope:
		info, err := cs.SetScope(ctx, pairing, m.Connection, m.Scope)
		done.Connection = &info
		return done, err
	case protocol.ListConnections:
		list, err := cs.Connections(ctx, pairing)
		return protocol.Connections{Envelope: protocol.Envelope{Type: protocol.TypeConnections, Ref: env.Ref}, Connections: list}, err
	}
	return nil, protocol.ErrUnsupported.With("This relay does not handle " + quoteType(env.Type) + " requests.")
}

func requestError(ref string, err error) protocol.Error {
	var rerr *protocol.RelayError
	if !errors.As(err, &rerr) {
		rerr = protocol.ErrUnavailable
	}
	return protocol.Error{Envelope: protocol.Envelope{Type: protocol.TypeError, Ref: ref}, Code: rerr.Code, Message: rerr.Message}
}

package tabsocket

import (
	"context"
	"encoding/json"
	"time"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/pairing"
	"github.com/tabrelay/tabrelay/protocol"
)

// storeTimeout bounds the pairing store's answer to a hello.
const storeTimeout = 5 * time.Second

// readHello reads and checks the first message: it must be a hello of this
// protocol version carrying a well-formed secret, within the hello
// deadline (the timer in run closes the socket otherwise; a proven hello
// stops it).
func (c *conn) readHello(deadline clock.Timer) bool {
	typ, data, err := c.ws.Read(context.Background())
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
	secret, err := pairing.ParseSecret(h.Secret)
	if err != nil {
		c.close(protocol.CloseBadSecret)
		return false
	}
	c.names.Store(&socketNames{tab: h.TabID})
	ctx, cancel := context.WithTimeout(c.ctx, storeTimeout)
	defer cancel()
	p, code, wait := c.pairingOf(ctx, secret, c.s.cfg.Clock.Now())
	if wait > 0 {
		c.s.cfg.Metrics.NewPairingsRefused.Inc()
		c.endWith(endRelayClose, code, protocol.NewBrowserWaitReason(wait))
		return false
	}
	if code != 0 {
		c.close(code)
		return false
	}
	id := p.ID
	c.names.Store(&socketNames{tab: h.TabID, pairing: id})
	if c.ending.Load() {
		return false // the hello deadline passed meanwhile
	}
	c.pairing = id // before proven: PushConnections reads it once proven
	c.proven.Store(true)
	var focused time.Time // never focused
	if h.FocusedAt > 0 {
		focused = focusTime(h.FocusedAt, c.s.cfg.Clock.Now())
	}
	if h.Reconnects > 0 {
		c.s.cfg.Metrics.Reconnects.Inc()
	}
	if v := c.s.cfg.BundleVersion; v != "" && h.Bundle != v {
		// The app and the relay's catalogue disagree (one was deployed
		// before the other): hosts should list the tools anew, operators
		// should know.
		c.logger().Info("tab runs another bundle than the relay", "tab_bundle", protocol.Clip(h.Bundle, 40), "relay_bundle", v)
		if c.s.cfg.ToolsChanged != nil {
			c.s.cfg.ToolsChanged(id)
		}
	}
	// The hello's deadline ends and the pings start before the welcome:
	// what the tab sees next runs on the ping's beat.
	deadline.Stop()
	c.schedulePing()
	// The welcome goes first: a call waiting for this browser may be sent
	// as soon as the tab exists.
	c.Send(protocol.Welcome{Envelope: protocol.Typed(protocol.TypeWelcome), Protocol: protocol.Version, Pairing: id,
		PingIntervalMs: c.s.cfg.PingInterval.Milliseconds(), MaxMessage: protocol.MaxMessageBytes})
	tab := c.s.cfg.Hub.Accept(TabInfo{Pairing: id, TabID: h.TabID, FocusedAt: focused}, c)
	c.tab.Store(&accepted{tab})
	if c.ending.Load() {
		tab.Close() // closed while the tab was being accepted: release it here
		return false
	}
	return true
}

// pairingOf finds the pairing of a proven secret (SPEC §1): its record
// under the lookup id of the current signing key; else one under a
// previous key, made before a rotation, which moves under the current
// key's lookup id and keeps its ID, so its connections, tokens and
// placement stay its own (issue 15, defect 8); else a new one, unless the
// address made its new pairings for now (then wait says for how long).
// The close code is 0 when the tab may go on.
func (c *conn) pairingOf(ctx context.Context, secret []byte, now time.Time) (pairing.Record, protocol.CloseCode, time.Duration) {
	cfg := &c.s.cfg
	lookup, hash := c.s.derive.Derive(secret)
	failed := func(err error) (pairing.Record, protocol.CloseCode, time.Duration) {
		c.logger().Error("pairing store failed", "pairing", lookup, "err", err)
		return pairing.Record{}, protocol.CloseUnavailable, 0
	}
	spent := c.s.newPairings.wait(c.addr, now)
	known := false // as far as the store was asked
	if spent > 0 || len(cfg.PreviousKeys) > 0 {
		var err error
		known, err = cfg.Store.HasPairing(ctx, lookup)
		if err != nil {
			return failed(err)
		}
		for _, key := range cfg.PreviousKeys {
			if known {
				break
			}
			old, oldHash := pairing.Derive(key, secret)
			p, moved, err := cfg.Store.RekeyPairing(ctx, old, oldHash, lookup, hash, now)
			if err != nil {
				return failed(err)
			}
			if moved {
				cfg.Metrics.Rekeyed.Inc()
				c.logger().Debug("pairing re-keyed under the current signing key", "pairing", lookup, "id", p.ID)
				return p, 0, 0
			}
		}
		if spent > 0 && !known {
			return c.newPairingRefused(lookup, spent)
		}
	}
	p, err := cfg.Store.TouchPairing(ctx, lookup, hash, now)
	switch {
	case err != nil:
		return failed(err)
	case !equalMAC(p.SecretHash, hash):
		return pairing.Record{}, protocol.CloseBadSecret, 0 // a collision of lookup ids
	case known || !p.CreatedAt.Equal(now.UTC()):
		return p, 0, 0
	}
	// A new pairing: counted in the store for every node together. One
	// over the limit is undone: a node learns that an address is spent
	// from the store's refusal (its hellos then ask HasPairing first).
	wait, err := c.s.newPairings.take(ctx, cfg.Store, c.addr, now)
	if err != nil {
		// Its record is made and the store answers: the tab goes on, and
		// the limit misses one.
		c.logger().Error("count a new pairing", "pairing", lookup, "err", err)
	}
	if wait > 0 {
		if err := cfg.Store.UndoPairing(ctx, lookup, p); err != nil {
			c.logger().Error("undo a new pairing over the limit", "pairing", lookup, "err", err)
		}
		return c.newPairingRefused(lookup, wait)
	}
	return p, 0, 0
}

// newPairingRefused refuses a browser the relay does not know: its address
// made its new pairings for now. It comes back after wait.
func (c *conn) newPairingRefused(lookup string, wait time.Duration) (pairing.Record, protocol.CloseCode, time.Duration) {
	c.logger().Debug("hello of a new pairing refused: too many from this address", "pairing", lookup, "retry_in", wait)
	return pairing.Record{}, protocol.CloseUnavailable, wait
}

func (c *conn) unsupported(env protocol.Envelope) {
	c.Send(protocol.Error{Envelope: protocol.Envelope{Type: protocol.TypeError, Ref: env.Ref},
		Code: protocol.ErrUnsupported.Code, Message: "This relay does not handle " + quoteType(env.Type) + " messages."})
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

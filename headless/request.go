package headless

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/protocol"
)

// Ask connects as one more tab of this browser, sends msg (a request that
// carries a ref: connect-info, approve, decline, list-connections,
// forget, set-scope), waits for
// the answer with that ref, and hangs up. It is how a script or a test
// plays the person in the app's Connections panel. An error answer comes
// back as a *protocol.RelayError. An approve it sends is a typed one (no
// via): it has no browser to prove it opened the waiting page, so a relay
// with typed codes off (RELAY_CONNECT_CROSS_DEVICE=false) refuses it.
func (t *Tab) Ask(ctx context.Context, msg any, ref string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, welcomeTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, t.url, &websocket.DialOptions{
		HTTPClient: t.opts.Dialer, HTTPHeader: http.Header{"Origin": {t.opts.Origin}}})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusForbidden {
			return nil, fmt.Errorf("%w: %v", ErrOriginRefused, err)
		}
		return nil, fmt.Errorf("headless: connect: %w", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(protocol.MaxMessageBytes)
	hello := t.hello()
	hello.FocusedAt = 0 // a helper tab is never the one calls should go to
	// One more tab: an id of its own, or the relay would take this socket
	// for a reconnect of t's own tab and close the other one (4008).
	hello.TabID = "t" + randomHex(12)
	for _, m := range []any{hello, msg} {
		data, _ := json.Marshal(m)
		if err := ws.Write(ctx, websocket.MessageText, data); err != nil {
			return nil, fmt.Errorf("headless: send: %w", err)
		}
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			if code, reason := closeOf(err); code != 0 {
				return nil, &StopError{Code: code, Reason: reason}
			}
			return nil, fmt.Errorf("headless: no answer: %w", err)
		}
		var env protocol.Error
		if json.Unmarshal(data, &env) != nil || env.Ref != ref {
			continue // welcome, pings, calls for other tabs: not ours
		}
		ws.Close(websocket.StatusNormalClosure, "done")
		if env.Type == protocol.TypeError {
			return nil, &protocol.RelayError{Code: env.Code, Message: env.Message}
		}
		return data, nil
	}
}

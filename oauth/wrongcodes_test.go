package oauth_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

// TestWrongCodesAreLimitedForTheWholeRelay (issue 15, defect 7): guesses
// from ever new addresses, each with a tab secret (a pairing) of its own,
// share one budget. Guessing without pause through a connect request's
// ten minutes gets at most oauth.WrongCodesPerRequest wrong codes tried,
// and once the budget is spent the right code is refused as limited too,
// from anyone, until it refills.
func TestWrongCodesAreLimitedForTheWholeRelay(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := h.startConnect(h.register("App", testCB), testCB)
	guesser := 0
	guess := func() string {
		guesser++
		_, err := h.as.Approve(ctx, fmt.Sprintf("pair_guess_%d", guesser),
			fmt.Sprintf("198.%d.%d.%d", 18+guesser/62500, guesser/250%250, guesser%250), "ZZZZ-ZZZ2", whoami)
		return requestErrCode(err)
	}
	tried := 0 // wrong codes the relay looked up
	for range oauth.WrongCodesPerRequest / 2 {
		if got := guess(); got != protocol.ErrCodeWrongCode {
			t.Fatalf("guess %d of the burst: %s, want %s", tried+1, got, protocol.ErrCodeWrongCode)
		}
		tried++
	}
	if got := guess(); got != protocol.ErrCodeLimited {
		t.Fatalf("a guess past the burst: %s, want %s", got, protocol.ErrCodeLimited)
	}
	if got := requestErrCode(h.approve(ctx, "pair_person", "203.0.113.7", w.code)); got != protocol.ErrCodeLimited {
		t.Fatalf("the right code, from another browser and address, past the burst: %s, want %s", got, protocol.ErrCodeLimited)
	}
	// The rest of the request's life, a guess every 100 ms.
	start := h.clock.Now()
	for h.clock.Now().Sub(start) < oauth.ConnectCodeTTL {
		h.clock.Advance(100 * time.Millisecond)
		switch got := guess(); got {
		case protocol.ErrCodeWrongCode:
			tried++
		case protocol.ErrCodeLimited:
		default:
			t.Fatalf("a guess: %s", got)
		}
	}
	if tried > oauth.WrongCodesPerRequest || tried < oauth.WrongCodesPerRequest*9/10 {
		t.Fatalf("%d wrong codes tried in a connect request's %v, want at most %d (and near it)",
			tried, oauth.ConnectCodeTTL, oauth.WrongCodesPerRequest)
	}
	t.Logf("%d guesses from %d addresses and pairings, %d of them looked up", guesser, guesser, tried)

	w = h.startConnect(h.register("App", testCB), testCB)
	h.clock.Advance(oauth.ConnectCodeTTL / (oauth.WrongCodesPerRequest / 2))
	if err := h.approve(ctx, "pair_person", "203.0.113.7", w.code); err != nil {
		t.Fatalf("the right code once the budget refilled: %v", err)
	}
}

func (h *harness) approve(ctx context.Context, pairing, addr, code string) error {
	_, err := h.as.Approve(ctx, pairing, addr, code, whoami)
	return err
}

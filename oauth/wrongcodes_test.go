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
		_, err := h.as.Approve(ctx, fmt.Sprintf("pair_guess_%d", guesser), guesserAddr(guesser), "ZZZZ-ZZZ2", whoami)
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

// guesserAddr is the address of guesser number i: each in a network (an
// IPv4 /24) of its own, as a guesser with many addresses would spread them.
func guesserAddr(i int) string {
	return fmt.Sprintf("%d.%d.%d.7", 100+i/62500, i/250%250, i%250)
}

// TestWrongCodesOfOthersLeaveAPersonHerOwnRequest (issue 23): guessers on
// other networks who keep the relay's wrong-code budget empty do not keep
// a person from approving the host she started from her own network;
// they cannot guess such a request beyond her network's own limits, and a
// guesser on her network gets no more than those limits either.
func TestWrongCodesOfOthersLeaveAPersonHerOwnRequest(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	// The waiting page was opened from 127.0.0.1 (the harness's client):
	// the person's tab is on the same network, the guessers are not.
	w := h.startConnect(h.register("App", testCB), testCB)
	for i := range oauth.WrongCodesPerRequest / 2 {
		if _, err := h.as.Approve(ctx, fmt.Sprintf("pair_guess_%d", i), guesserAddr(i), "ZZZZ-ZZZ2", whoami); requestErrCode(err) != protocol.ErrCodeWrongCode {
			t.Fatalf("guess %d: %v", i+1, err)
		}
	}
	if _, err := h.as.Approve(ctx, "pair_late", guesserAddr(99_999), "ZZZZ-ZZZ2", whoami); requestErrCode(err) != protocol.ErrCodeLimited {
		t.Fatalf("a guess once the relay's budget is spent: %v, want limited", err)
	}
	if _, err := h.as.ConnectInfo(ctx, "pair_other", guesserAddr(99_998), w.code); requestErrCode(err) != protocol.ErrCodeLimited {
		t.Fatalf("the right code from another network while the budget is spent: %v, want limited", err)
	}
	if _, err := h.as.ConnectInfo(ctx, "pair_person", "127.0.0.1", w.code); err != nil {
		t.Fatalf("the person's own request from her network while others spent the budget: %v", err)
	}
	if err := h.approve(ctx, "pair_person", "127.0.0.1", w.code); err != nil {
		t.Fatalf("the person approves her own request while others spent the budget: %v", err)
	}
	// A guesser on her network (other addresses of it) has the network's
	// twenty wrong codes, then nothing: every code, the right one too, is
	// limited there.
	w = h.startConnect(h.register("App", testCB), testCB)
	neighbour := func(i int, code string) string {
		if _, err := h.as.ConnectInfo(ctx, "pair_neighbour", fmt.Sprintf("127.0.0.%d", 2+i%3), code); err != nil {
			return requestErrCode(err)
		}
		return ""
	}
	for i := range 19 {
		if got := neighbour(i, "ZZZZ-ZZZ2"); got != protocol.ErrCodeLimited {
			t.Fatalf("guess %d on the person's network while the relay's budget is spent: %s, want limited", i+1, got)
		}
	}
	if got := neighbour(19, w.code); got != "" {
		t.Fatalf("the right code on the network after 19 wrong ones: %s", got)
	}
	if got := neighbour(20, "ZZZZ-ZZZ2"); got != protocol.ErrCodeLimited {
		t.Fatalf("the network's 20th wrong code: %s", got)
	}
	if got := neighbour(21, w.code); got != protocol.ErrCodeLimited {
		t.Fatalf("the right code on the network once its 20 are spent: %s, want limited", got)
	}
}

func (h *harness) approve(ctx context.Context, pairing, addr, code string) error {
	_, err := h.as.Approve(ctx, pairing, addr, code, whoami)
	return err
}

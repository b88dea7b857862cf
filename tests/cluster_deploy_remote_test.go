package tests

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"os"
	"time"
)

// addRemote adds a browser whose pairing lives on home while its tab's
// socket is on pinned (a tab process that reaches pinned by its own
// address: it comes back to pinned only, once pinned's new process
// starts, pause after the old one exited). The pairing is activated on
// home by the person's approval there (a tab process of the browser that
// says hello to home, approves and leaves); the tab then registers with
// it from pinned.
func (s *deployScenario) addRemote(home, pinned *clusterNode, pause time.Duration) {
	t, c := s.t, s.c
	s.pinned, s.pause = pinned, pause
	b := newBrowser(t)
	secret := make([]byte, 32)
	crand.Read(secret)
	if err := os.WriteFile(b.secretFile, []byte(base64.RawURLEncoding.EncodeToString(secret)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(c.key)
	id := b.pairing(key)
	h, err := registerHost(c.public)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := h.connect(approveByProcess(b, home.url))
	if err != nil {
		t.Fatal(err)
	}
	b.startTab(pinned.url, "remote", "--focus")
	db := &deployBrowser{b: b, name: "remote", host: h, token: tok.Access, refresh: tok.Refresh, values: map[float64]bool{}}
	eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a, err := pinned.callTool(ctx, db.token, "whoami", nil)
		return err == nil && a.data()["tab"] == "remote"
	}, "the remote browser's tab answers")
	if at := c.recordOf(id); at != home.i {
		t.Fatalf("the remote browser's pairing is on node %d, want node %d (its tab is on node %d)", at, home.i, pinned.i)
	}
	s.browsers = append(s.browsers, db)
	t.Logf("the remote browser's pairing is on node %d, its tab on node %d", home.i, pinned.i)
}

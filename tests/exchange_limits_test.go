package tests

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/oauth"
)

// exchangeOK exchanges subject and returns the child's token.
func (h *host) exchangeOK(subject, what string) string {
	h.t.Helper()
	status, out := h.tokenExchange(subject, "")
	if status != http.StatusOK {
		h.t.Fatalf("%s: %d %v", what, status, out)
	}
	return out["access_token"].(string)
}

// TestDerivedTreeIsBoundedAndRateLimited (issue 23 §2): 16 children at
// each of four levels let one approved connection mint 69,904 derived
// connections an hour, as fast as the relay could answer. Now a tree
// holds oauth.Derivations.PerRoot live ones, its exchanges are paced by
// oauth.ExchangeRate in the store, a revoked child's token gives its
// place back, and a forgotten connection takes its subtree out at once.
func TestDerivedTreeIsBoundedAndRateLimited(t *testing.T) {
	r := startRelay(t, nil)
	b, pairing := pairedBrowser(t, r)
	h, root, _ := scopedHost(t, r, b, false, "whoami")
	burst, every, perRoot := oauth.ExchangeRate.Burst, oauth.ExchangeRate.Every, oauth.Derivations.PerRoot

	// The burst: 16 children, then grandchildren of the first child.
	var kids, grand []string
	for range oauth.MaxDerivedPerConnection {
		kids = append(kids, h.exchangeOK(root.token, "a child"))
	}
	for len(kids)+len(grand) < burst {
		grand = append(grand, h.exchangeOK(kids[0], "a grandchild"))
	}
	status, out := h.tokenExchange(kids[1], "")
	if status != http.StatusTooManyRequests || out["error"] != "slow_down" {
		t.Fatalf("an exchange past the burst: %d %v", status, out)
	}

	// Paced, the tree grows to its bound and no further.
	parents := kids[1:]
	for n := burst; n < perRoot; n++ {
		r.clock.Advance(every)
		grand = append(grand, h.exchangeOK(parents[n%len(parents)], "a paced exchange"))
	}
	r.clock.Advance(every)
	status, out = h.tokenExchange(kids[2], "")
	desc, _ := out["error_description"].(string)
	if status != http.StatusBadRequest || out["error"] != "invalid_request" || !strings.Contains(desc, "64 live derived connections in its tree") {
		t.Fatalf("an exchange over the tree's bound: %d %v", status, out)
	}

	// A revoked child's token gives its place back.
	resp, err := http.PostForm(r.url+"/revoke", url.Values{"token": {grand[len(grand)-1]}, "client_id": {h.clientID}})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	resp.Body.Close()
	r.clock.Advance(every)
	h.exchangeOK(kids[2], "an exchange after a revocation")

	// Forgetting the first child ends its grandchildren with it: they
	// leave the list and the tree's count.
	list, err := r.node.OAuth().Connections(t.Context(), pairing)
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.node.OAuth().Verify(t.Context(), kids[0])
	if err != nil {
		t.Fatal(err)
	}
	first, before := g.ConnectionID, len(list)
	if err := r.node.OAuth().Forget(t.Context(), pairing, first); err != nil {
		t.Fatal(err)
	}
	list, err = r.node.OAuth().Connections(t.Context(), pairing)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) >= before-1 {
		t.Fatalf("forgetting a child with children left %d of %d connections listed", len(list), before)
	}
	r.clock.Advance(every)
	h.exchangeOK(kids[3], "an exchange after a forget")
}

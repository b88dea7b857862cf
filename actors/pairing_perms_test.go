package actors

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
)

// TestPermissionsQuestionsAreMergedAndCapped (issue 23 §2): identical
// questions asked at once reach the tab once and all get its answer;
// different ones are out at most maxQueries at once, and one more is
// answered at once without the tab (its list says the settings are not
// known) rather than sent.
func TestPermissionsQuestionsAreMergedAndCapped(t *testing.T) {
	r := newRig(t, nil)
	tab := r.connect("p1", "tab-a", epoch)
	ask := func(conn string) (map[string]string, bool) {
		return r.caller.permissions(context.Background(), "p1", protocol.Connection{ID: conn}, []string{"whoami"}, patience)
	}
	var wg sync.WaitGroup
	answers := make(chan bool, 3*maxQueries)
	for i := range maxQueries {
		for range 3 { // three identical questions of each connection
			wg.Go(func() {
				got, ok := ask(fmt.Sprintf("c%d", i))
				answers <- ok && got["whoami"] == protocol.PermissionRuns
			})
		}
	}
	var queries []protocol.PermissionsQuery
	for len(queries) < maxQueries {
		if q, ok := (<-tab.in).(protocol.PermissionsQuery); ok {
			queries = append(queries, q)
		}
	}
	if _, ok := ask("one-more"); ok {
		t.Fatal("a question past the cap was answered as if the tab had")
	}
	for _, q := range queries {
		tab.tab.Forward(protocol.Permissions{Envelope: protocol.Typed(protocol.TypePermissions), ID: q.ID,
			Tools: map[string]string{"whoami": protocol.PermissionRuns}})
	}
	wg.Wait()
	close(answers)
	for ok := range answers {
		if !ok {
			t.Fatal("a merged question did not get the tab's answer")
		}
	}
	select {
	case m := <-tab.in:
		t.Fatalf("the tab was asked more than once per question: %v", m)
	default:
	}
}

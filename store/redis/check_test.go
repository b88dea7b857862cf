package redis

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

// TestReadCheckAnswersAsTheStoreDoes: what ReadCheck read ahead of a
// token, its family and its chain (a connection derived twice, the
// middle one without a scope of its own) reads as the store's own reads
// do: records, not found, a record that does not decode; what it did not
// read comes from the store. On one Redis and on Redis Cluster.
func TestReadCheckAnswersAsTheStoreDoes(t *testing.T) {
	t.Run("one Redis", func(t *testing.T) { readCheck(t, startRedis(t)) })
	t.Run("Redis Cluster", func(t *testing.T) { readCheck(t, redistest.StartCluster(t, 3, 0).Client()) })
}

func readCheck(t *testing.T, client goredis.UniversalClient) {
	ctx := context.Background()
	s := newStore(client)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	end := suiteNow.Add(time.Hour)
	must(s.PutConnection(ctx, oauth.Connection{ID: "root", PairingID: "p1", CreatedAt: suiteNow}))
	must(s.PutConnection(ctx, oauth.Connection{ID: "mid", PairingID: "p1", ParentID: "root", ExpiresAt: end}))
	must(s.PutConnection(ctx, oauth.Connection{ID: "leaf", PairingID: "p1", ParentID: "mid", ExpiresAt: end}))
	must(s.PutScope(ctx, "root", oauth.Scope{Entries: []protocol.ScopeEntry{{Tool: "echo", Actions: []string{"*"}}}}))
	must(s.PutScope(ctx, "leaf", oauth.Scope{}))
	must(s.PutFamily(ctx, oauth.Family{ID: "f1", ConnectionID: "root", PairingID: "p1", LastUsed: suiteNow,
		AbsoluteExpiry: end}))
	must(s.PutAccessToken(ctx, oauth.AccessToken{Hash: []byte("tok"), FamilyID: "f1", ConnectionID: "leaf", ExpiresAt: end}))

	// The token under the second hashing key (the first holds none).
	rs, err := s.ReadCheck(ctx, [][]byte{[]byte("old"), []byte("tok")}, 6)
	must(err)
	if _, err := rs.AccessToken(ctx, []byte("old")); !errors.Is(err, oauth.ErrNotFound) {
		t.Errorf("the token under a key that holds none: %v, want not found", err)
	}
	tok, err := rs.AccessToken(ctx, []byte("tok"))
	if err != nil || tok.ConnectionID != "leaf" || tok.FamilyID != "f1" {
		t.Errorf("the token: %+v %v", tok, err)
	}
	if f, err := rs.Family(ctx, "f1"); err != nil || f.ConnectionID != "root" {
		t.Errorf("the family: %+v %v", f, err)
	}
	for _, id := range []string{"leaf", "mid", "root"} {
		c, err := rs.Connection(ctx, id)
		want, _ := s.Connection(ctx, id)
		if err != nil || c != want {
			t.Errorf("connection %s: %+v %v, want %+v", id, c, err, want)
		}
		sc, err := rs.ScopeRecord(ctx, id)
		wantSc, wantErr := s.ScopeRecord(ctx, id)
		if !bytes.Equal(sc, wantSc) || !errors.Is(err, wantErr) {
			t.Errorf("scope of %s: %s %v, want %s %v", id, sc, err, wantSc, wantErr)
		}
	}
	// Not read ahead: from the store.
	must(s.PutConnection(ctx, oauth.Connection{ID: "later", PairingID: "p1", CreatedAt: suiteNow}))
	if c, err := rs.Connection(ctx, "later"); err != nil || c.ID != "later" {
		t.Errorf("a connection not read ahead: %+v %v", c, err)
	}
	if _, err := rs.Connection(ctx, "never"); !errors.Is(err, oauth.ErrNotFound) {
		t.Errorf("a connection never stored: %v, want not found", err)
	}

	// A damaged middle connection: the walk stops there, and the check
	// reads it as the store would, an error that is not "not found".
	must(client.Set(ctx, s.connKey("mid"), "{damaged", time.Hour).Err())
	rs, err = s.ReadCheck(ctx, [][]byte{[]byte("tok")}, 6)
	must(err)
	if _, err := rs.Connection(ctx, "mid"); err == nil || errors.Is(err, oauth.ErrNotFound) ||
		!strings.Contains(err.Error(), "connection mid does not decode") {
		t.Errorf("a damaged connection: %v", err)
	}
	// A token under no key.
	rs, err = s.ReadCheck(ctx, [][]byte{[]byte("none")}, 6)
	must(err)
	if _, err := rs.AccessToken(ctx, []byte("none")); !errors.Is(err, oauth.ErrNotFound) {
		t.Errorf("a token never stored: %v, want not found", err)
	}
}

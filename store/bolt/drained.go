package bolt

import (
	"context"
	"errors"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/pairing"
)

// bucketDrained holds the marks of browsers whose tabs a drain told to
// reconnect (pairing.Drained), by pairing id, until their Until: a node
// restarted on this store reads them (issue 25).
var bucketDrained = []byte("drained")

// MarkDrained keeps the marks, in one transaction.
func (s *Store) MarkDrained(_ context.Context, marks map[string]pairing.Drained) error {
	if len(marks) == 0 {
		return nil
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		for id, d := range marks {
			if err := put(tx, bucketDrained, []byte(id), d); err != nil {
				return err
			}
		}
		return nil
	})
}

// Drained returns the pairing's mark while its Until has not passed.
func (s *Store) Drained(_ context.Context, id string, now time.Time) (pairing.Drained, bool, error) {
	var d pairing.Drained
	err := s.db.View(func(tx *bbolt.Tx) error { return get(tx, bucketDrained, []byte(id), &d) })
	switch {
	case errors.Is(err, oauth.ErrNotFound):
		return pairing.Drained{}, false, nil
	case err != nil:
		return pairing.Drained{}, false, err
	case !now.Before(d.Until):
		return pairing.Drained{}, false, nil
	}
	return d, true, nil
}

func dropDrained(tx *bbolt.Tx, key, _ []byte) error { return tx.Bucket(bucketDrained).Delete(key) }

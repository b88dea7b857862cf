package oauth

import "sync"

// keyedLocks is a mutex per key, made when first locked and dropped when
// its last holder unlocks.
type keyedLocks struct {
	mu    sync.Mutex // guards locks
	locks map[string]*keyedLock
}

type keyedLock struct {
	mu      sync.Mutex
	holders int // holding or waiting; guarded by keyedLocks.mu
}

func (k *keyedLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.holders++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.holders--; l.holders == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

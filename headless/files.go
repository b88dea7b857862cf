package headless

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// secretBytes is the size of a tab secret (SPEC §1).
const secretBytes = 32

// Claim files are kept this long: far past the relay's wait for a call
// (TAB_CALL_WAIT, SPEC §10), after which nobody redelivers its id.
const (
	claimsKept       = time.Hour
	pruneEveryClaims = 256
	claimPoll        = 20 * time.Millisecond
)

func newSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// loadOrCreateSecret reads the browser's secret from path, or makes it.
// The file appears whole or not at all (written aside, then linked into
// place); when another process made it first, theirs is the secret.
func loadOrCreateSecret(path string) (string, error) {
	if s, err := readSecret(path); !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("headless: secret file: %w", err)
	}
	tmp, err := writeTemp(dir, ".secret-*", []byte(newSecret()+"\n"))
	if err != nil {
		return "", fmt.Errorf("headless: secret file: %w", err)
	}
	defer os.Remove(tmp)
	// A link, unlike a rename, fails when the name exists: two processes
	// starting at once agree on one secret.
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		// No hard links on this file system: a rename, where the last of
		// two processes racing wins.
		if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
			if err := os.Rename(tmp, path); err != nil {
				return "", fmt.Errorf("headless: secret file: %w", err)
			}
		}
	}
	return readSecret(path)
}

func readSecret(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("headless: secret file: %w", err)
	}
	s := strings.TrimSpace(string(data))
	if b, err := base64.RawURLEncoding.DecodeString(s); err != nil || len(b) != secretBytes {
		return "", fmt.Errorf("headless: secret file %s does not hold 32 bytes in unpadded base64url; remove it to make a new browser", path)
	}
	return s, nil
}

// writeTemp writes data to a new file (0600) in dir, synced, and returns its name.
func writeTemp(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern) // CreateTemp makes files 0600
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// claimDir holds one file per call id a tab of this browser started: made
// empty (O_EXCL) before the call runs, replaced by its result after. It is
// how the processes sharing a secret file run each call id at most once.
type claimDir struct {
	dir    string
	claims atomic.Int64
}

func openClaimDir(dir string) (*claimDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("headless: calls directory: %w", err)
	}
	return &claimDir{dir: dir}, nil
}

// claim reports whether this process took id (false: another did first).
func (d *claimDir) claim(id string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(d.dir, id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if d.claims.Add(1)%pruneEveryClaims == 0 {
		go d.prune(time.Now())
	}
	return true, f.Close()
}

// store replaces id's claim with its result, atomically.
func (d *claimDir) store(id string, res protocol.TabResult) error {
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	tmp, err := writeTemp(d.dir, ".result-*", data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(d.dir, id)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// read returns id's result when its claim holds one.
func (d *claimDir) read(id string) (protocol.TabResult, bool) {
	var res protocol.TabResult
	data, err := os.ReadFile(filepath.Join(d.dir, id))
	if err != nil || len(data) == 0 || json.Unmarshal(data, &res) != nil {
		return res, false
	}
	return res, true
}

// await polls id's claim for its result for up to wait.
func (d *claimDir) await(ctx context.Context, id string, wait time.Duration) (protocol.TabResult, bool) {
	deadline := time.Now().Add(wait)
	for {
		if res, ok := d.read(id); ok {
			return res, true
		}
		if time.Now().After(deadline) || sleep(ctx, claimPoll) != nil {
			return protocol.TabResult{}, false
		}
	}
}

// prune removes claims (and stray temporary files) older than claimsKept.
func (d *claimDir) prune(now time.Time) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > claimsKept {
			os.Remove(filepath.Join(d.dir, e.Name()))
		}
	}
}

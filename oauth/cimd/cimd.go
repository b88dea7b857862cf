// Package cimd fetches and checks Client ID Metadata Documents
// (draft-ietf-oauth-client-id-metadata-document; SPEC §5): an https
// client_id names the document that says who the client is. It guards
// every fetch against SSRF (https only, public addresses only, checked on
// the connection made; no proxy, no redirect; size and time limits) and
// caches what it fetched. The rules a document shares with a dynamic
// registration (oauth's) are here too: which characters make a client's
// name misleading, how long a redirect URI may be.
package cimd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configures a Fetcher. The zero value is the production
// setting.
type Options struct {
	AllowLoopback  bool             // test switch: loopback addresses allowed (never private/link-local/multicast); off by default
	RootCAs        *x509.CertPool   // nil: the system's; tests pass their httptest TLS server's pool
	Timeout        time.Duration    // default 5s, whole fetch
	MaxBytes       int64            // default 64 KiB
	MinTTL, MaxTTL time.Duration    // cache bounds: default 1 min and 24 h
	Now            func() time.Time // default time.Now
}

// The kinds of Error, for errors.Is: the client_id is not a document
// URL; the document's address is not public; the document could not be
// fetched (network, status, type, size, time); it breaks the rules.
var (
	ErrBadURL           = errors.New("oauth: client_id is not a client metadata document URL")
	ErrForbiddenAddress = errors.New("oauth: client metadata document address not allowed")
	ErrFetch            = errors.New("oauth: client metadata document not fetched")
	ErrInvalid          = errors.New("oauth: client metadata document not valid")
)

// Error is why a client metadata document was refused. Its message is a
// plain sentence fit for an error page; it never quotes the document.
type Error struct {
	Kind   error  // one of the Err… values
	Reason string // the sentence shown to the person
	cause  error  // for logs and errors.Is; never shown
}

// Error returns the Reason.
func (e *Error) Error() string { return e.Reason }

// Unwrap returns the Kind and the underlying cause, if any.
func (e *Error) Unwrap() []error { return []error{e.Kind, e.cause} }

// errBadURL is the one error of a client_id that is no document URL.
var errBadURL = &Error{Kind: ErrBadURL,
	Reason: "the client_id is not an https URL that can name a client metadata document"}

func fetchErr(cause error, format string, args ...any) *Error {
	return &Error{Kind: ErrFetch, cause: cause,
		Reason: "the client's metadata document could not be fetched: " + fmt.Sprintf(format, args...)}
}

func invalidErr(cause error, format string, args ...any) *Error {
	return &Error{Kind: ErrInvalid, cause: cause,
		Reason: "the client's metadata document is not valid: " + fmt.Sprintf(format, args...)}
}

const (
	MaxURLLen       = 2048 // the longest client_id that may name a document
	maxEntries      = 1024
	negativeTTL     = 10 * time.Second // blunts hammering a failing URL
	maxRedirectURIs = 20               // as for dynamic registration
	publicOnly      = "but the relay accepts only public clients (method none)"
)

// Fetcher fetches and caches Client ID Metadata Documents
// (draft-ietf-oauth-client-id-metadata-document; SPEC §5: "fetched with SSRF
// protection: https only, no private or loopback addresses, size and time
// limits, cached"). It is safe for concurrent use.
type Fetcher struct {
	opts   Options
	client *http.Client

	mu    sync.Mutex // guards the fields below
	cache map[string]*entry
	calls map[string]*call
	seq   uint64 // insertion counter, for evicting the oldest entry
}

// entry is a cached outcome: a document, or an error kept briefly.
type entry struct {
	md      Metadata
	err     error
	expires time.Time
	seq     uint64
}

// call is a fetch in flight that later callers wait on.
type call struct {
	done    chan struct{}
	md      Metadata // set before done is closed
	err     error    // set before done is closed
	callers int      // guarded by Fetcher.mu
}

// NewFetcher returns a fetcher; zero options take their defaults.
func NewFetcher(opts Options) *Fetcher {
	setDefault(&opts.Timeout, 5*time.Second)
	setDefault(&opts.MaxBytes, 64<<10)
	setDefault(&opts.MinTTL, time.Minute)
	setDefault(&opts.MaxTTL, 24*time.Hour)
	opts.MaxTTL = max(opts.MaxTTL, opts.MinTTL)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Fetcher{
		opts:   opts,
		client: httpClient(opts),
		cache:  make(map[string]*entry),
		calls:  make(map[string]*call),
	}
}

func setDefault[T int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// httpClient builds a client that checks every address it connects to,
// uses no proxy and follows no redirect.
func httpClient(opts Options) *http.Client {
	dialer := &net.Dialer{Timeout: opts.Timeout, Control: dialControl(opts.AllowLoopback)}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would make the connection we check the wrong one
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    opts.Timeout,
		ResponseHeaderTimeout:  opts.Timeout,
		MaxResponseHeaderBytes: 32 << 10,
		DisableKeepAlives:      true, // fetches are rare (cached); nothing idles
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Fetch returns the metadata of the client whose client_id is the https URL
// clientID, from the cache or by fetching the document. Concurrent calls for
// one URL share one fetch. Every error is a *Error.
func (f *Fetcher) Fetch(ctx context.Context, clientID string) (Metadata, error) {
	if !IsClientID(clientID) {
		return Metadata{}, errBadURL
	}
	f.mu.Lock()
	if e, ok := f.cache[clientID]; ok {
		if f.opts.Now().Before(e.expires) {
			f.mu.Unlock()
			return clone(e.md), e.err
		}
		delete(f.cache, clientID)
	}
	c, ok := f.calls[clientID]
	if !ok {
		c = &call{done: make(chan struct{})}
		f.calls[clientID] = c
		// The fetch outlives a caller who gives up, so that the others
		// waiting on it still get an answer; Timeout bounds it.
		go f.run(context.WithoutCancel(ctx), clientID, c)
	}
	c.callers++
	f.mu.Unlock()
	select {
	case <-c.done:
		return clone(c.md), c.err
	case <-ctx.Done():
		return Metadata{}, fetchErr(ctx.Err(), "the request was cancelled")
	}
}

// run performs one fetch and publishes its outcome to the cache and the
// waiting callers.
func (f *Fetcher) run(ctx context.Context, clientID string, c *call) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	md, ttl, err := f.fetch(ctx, clientID)
	if err != nil {
		ttl = negativeTTL
	}
	f.mu.Lock()
	delete(f.calls, clientID)
	c.md, c.err = md, err
	if ttl > 0 {
		f.store(clientID, &entry{md: md, err: err, expires: f.opts.Now().Add(ttl)})
	}
	f.mu.Unlock()
	close(c.done)
}

// store caches e under clientID, first dropping expired entries and then the
// oldest when the cache is full. f.mu must be held.
func (f *Fetcher) store(clientID string, e *entry) {
	if _, ok := f.cache[clientID]; !ok && len(f.cache) >= maxEntries {
		now := f.opts.Now()
		var oldest string
		for k, v := range f.cache {
			if !now.Before(v.expires) {
				delete(f.cache, k)
			} else if oldest == "" || v.seq < f.cache[oldest].seq {
				oldest = k
			}
		}
		if len(f.cache) >= maxEntries {
			delete(f.cache, oldest)
		}
	}
	f.seq++
	e.seq = f.seq
	f.cache[clientID] = e
}

// fetch gets and checks the document, and says how long it may be cached
// (0: not at all).
func (f *Fetcher) fetch(ctx context.Context, clientID string) (Metadata, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return Metadata{}, 0, errBadURL
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "tabrelay")
	resp, err := f.client.Do(req)
	if err != nil {
		return Metadata{}, 0, f.transportErr(err)
	}
	defer resp.Body.Close()
	// net/http may still hand over a response that raced the deadline: a
	// server that answers only once the client gives up (its request's
	// context ends when our connection closes) then looks like an empty 200.
	if err := ctx.Err(); err != nil {
		return Metadata{}, 0, f.transportErr(err)
	}
	if err := checkResponse(resp, f.opts.MaxBytes); err != nil {
		return Metadata{}, 0, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return Metadata{}, 0, f.transportErr(err)
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return Metadata{}, 0, fetchErr(nil, "it is larger than %d bytes", f.opts.MaxBytes)
	}
	md, err := parse(body, clientID)
	if err != nil {
		return Metadata{}, 0, err
	}
	return md, cacheTTL(resp.Header, f.opts.Now(), f.opts.MinTTL, f.opts.MaxTTL), nil
}

// transportErr turns a failure to connect or read into a sentence.
func (f *Fetcher) transportErr(err error) error {
	var cerr *Error
	var dnsErr *net.DNSError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &cerr):
		return cerr
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fetchErr(err, "its server did not answer within %s", f.opts.Timeout)
	case errors.As(err, &dnsErr):
		return fetchErr(err, "its host name could not be resolved")
	case errors.As(err, &certErr):
		return fetchErr(err, "its server's TLS certificate is not trusted")
	}
	return fetchErr(err, "the connection to its server failed")
}

// checkResponse refuses anything but a 200 JSON answer within the size
// limit (as far as its headers tell).
func checkResponse(resp *http.Response, maxBytes int64) error {
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return fetchErr(nil, "its server answered with a redirect, and redirects are not followed")
	case resp.StatusCode != http.StatusOK:
		return fetchErr(nil, "its server answered with HTTP status %d", resp.StatusCode)
	case resp.ContentLength > maxBytes:
		return fetchErr(nil, "it is larger than %d bytes", maxBytes)
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return fetchErr(err, "its server did not answer with JSON")
	}
	return nil
}

// cacheTTL says how long a document may be cached from its response headers
// (RFC 9111): 0 for no-store; else max-age less Age, or Expires less Date,
// or nothing; clamped to [minTTL, maxTTL]. no-cache counts as max-age=0: a
// document is kept at least minTTL to blunt hammering, and is never
// revalidated.
func cacheTTL(h http.Header, now time.Time, minTTL, maxTTL time.Duration) time.Duration {
	maxAge, haveMaxAge := int64(0), false
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store":
				return 0
			case "no-cache":
				maxAge, haveMaxAge = 0, true
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
				if err == nil && n >= 0 && (!haveMaxAge || n < maxAge) {
					maxAge, haveMaxAge = n, true
				}
			}
		}
	}
	ttl := time.Duration(0)
	switch {
	case haveMaxAge:
		age, _ := strconv.ParseInt(h.Get("Age"), 10, 64)
		limit := int64(maxTTL/time.Second) + 1 // keeps the arithmetic from overflowing
		secs := min(maxAge, limit) - min(max(age, 0), limit)
		ttl = time.Duration(secs) * time.Second
	case h.Get("Expires") != "":
		if exp, err := http.ParseTime(h.Get("Expires")); err == nil {
			base := now
			if date, err := http.ParseTime(h.Get("Date")); err == nil {
				base = date
			}
			ttl = exp.Sub(base)
		}
	}
	return min(max(ttl, minTTL), maxTTL)
}

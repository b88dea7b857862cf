package oauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// ClientMetadata is what a client metadata document (or a DCR registration) says of a client.
type ClientMetadata struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	ClientURI               string   `json:"client_uri,omitempty"`
	LogoURI                 string   `json:"logo_uri,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
}

// CIMDOptions configures a CIMDFetcher. The zero value is the production
// setting.
type CIMDOptions struct {
	AllowLoopback  bool             // test switch: loopback addresses allowed (never private/link-local/multicast); off by default
	RootCAs        *x509.CertPool   // nil: the system's; tests pass their httptest TLS server's pool
	Timeout        time.Duration    // default 5s, whole fetch
	MaxBytes       int64            // default 64 KiB
	MinTTL, MaxTTL time.Duration    // cache bounds: default 1 min and 24 h
	Now            func() time.Time // default time.Now
}

// The kinds of CIMDError, for errors.Is: the client_id is not a document
// URL; the document's address is not public; the document could not be
// fetched (network, status, type, size, time); it breaks the rules.
var (
	ErrCIMDBadURL           = errors.New("oauth: client_id is not a client metadata document URL")
	ErrCIMDForbiddenAddress = errors.New("oauth: client metadata document address not allowed")
	ErrCIMDFetch            = errors.New("oauth: client metadata document not fetched")
	ErrCIMDInvalid          = errors.New("oauth: client metadata document not valid")
)

// CIMDError is why a client metadata document was refused. Its message is a
// plain sentence fit for an error page; it never quotes the document.
type CIMDError struct {
	Kind   error  // one of the ErrCIMD… values
	Reason string // the sentence shown to the person
	cause  error  // for logs and errors.Is; never shown
}

// Error returns the Reason.
func (e *CIMDError) Error() string { return e.Reason }

// Unwrap returns the Kind and the underlying cause, if any.
func (e *CIMDError) Unwrap() []error { return []error{e.Kind, e.cause} }

// cimdErrBadURL is the one error of a client_id that is no document URL.
var cimdErrBadURL = &CIMDError{Kind: ErrCIMDBadURL,
	Reason: "the client_id is not an https URL that can name a client metadata document"}

func cimdFetchErr(cause error, format string, args ...any) *CIMDError {
	return &CIMDError{Kind: ErrCIMDFetch, cause: cause,
		Reason: "the client's metadata document could not be fetched: " + fmt.Sprintf(format, args...)}
}

func cimdInvalidErr(cause error, format string, args ...any) *CIMDError {
	return &CIMDError{Kind: ErrCIMDInvalid, cause: cause,
		Reason: "the client's metadata document is not valid: " + fmt.Sprintf(format, args...)}
}

const (
	cimdMaxURLLen       = 2048
	cimdMaxEntries      = 1024
	cimdNegativeTTL     = 10 * time.Second // blunts hammering a failing URL
	cimdMaxRedirectURIs = 20               // as for dynamic registration
	cimdMaxNameRunes    = 100
	cimdPublicOnly      = "but the relay accepts only public clients (method none)"
)

// CIMDFetcher fetches and caches Client ID Metadata Documents
// (draft-ietf-oauth-client-id-metadata-document; SPEC §5: "fetched with SSRF
// protection: https only, no private or loopback addresses, size and time
// limits, cached"). It is safe for concurrent use.
type CIMDFetcher struct {
	opts   CIMDOptions
	client *http.Client

	mu    sync.Mutex // guards the fields below
	cache map[string]*cimdEntry
	calls map[string]*cimdCall
	seq   uint64 // insertion counter, for evicting the oldest entry
}

// cimdEntry is a cached outcome: a document, or an error kept briefly.
type cimdEntry struct {
	md      ClientMetadata
	err     error
	expires time.Time
	seq     uint64
}

// cimdCall is a fetch in flight that later callers wait on.
type cimdCall struct {
	done    chan struct{}
	md      ClientMetadata // set before done is closed
	err     error          // set before done is closed
	callers int            // guarded by CIMDFetcher.mu
}

// NewCIMDFetcher returns a fetcher; zero options take their defaults.
func NewCIMDFetcher(opts CIMDOptions) *CIMDFetcher {
	cimdDefault(&opts.Timeout, 5*time.Second)
	cimdDefault(&opts.MaxBytes, 64<<10)
	cimdDefault(&opts.MinTTL, time.Minute)
	cimdDefault(&opts.MaxTTL, 24*time.Hour)
	opts.MaxTTL = max(opts.MaxTTL, opts.MinTTL)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &CIMDFetcher{
		opts:   opts,
		client: cimdHTTPClient(opts),
		cache:  make(map[string]*cimdEntry),
		calls:  make(map[string]*cimdCall),
	}
}

func cimdDefault[T int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// cimdHTTPClient builds a client that checks every address it connects to,
// uses no proxy and follows no redirect.
func cimdHTTPClient(opts CIMDOptions) *http.Client {
	dialer := &net.Dialer{Timeout: opts.Timeout, Control: cimdDialControl(opts.AllowLoopback)}
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

// IsCIMDClientID reports whether clientID is a URL a client metadata
// document may have: https, a host, a path other than "/" without dot
// segments, no fragment, no user info (draft-ietf-oauth-client-id-metadata-document §3).
func IsCIMDClientID(clientID string) bool {
	if len(clientID) > cimdMaxURLLen || !strings.HasPrefix(clientID, "https://") ||
		strings.ContainsAny(clientID, "#\\") ||
		strings.ContainsFunc(clientID, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return false
	}
	u, err := url.Parse(clientID)
	if err != nil || u.Opaque != "" || u.User != nil || u.Hostname() == "" ||
		u.Path == "" || u.Path == "/" {
		return false
	}
	for _, p := range []string{u.Path, u.EscapedPath()} {
		for seg := range strings.SplitSeq(p, "/") {
			if seg == "." || seg == ".." {
				return false
			}
		}
	}
	return true
}

// Fetch returns the metadata of the client whose client_id is the https URL
// clientID, from the cache or by fetching the document. Concurrent calls for
// one URL share one fetch. Every error is a *CIMDError.
func (f *CIMDFetcher) Fetch(ctx context.Context, clientID string) (ClientMetadata, error) {
	if !IsCIMDClientID(clientID) {
		return ClientMetadata{}, cimdErrBadURL
	}
	f.mu.Lock()
	if e, ok := f.cache[clientID]; ok {
		if f.opts.Now().Before(e.expires) {
			f.mu.Unlock()
			return cimdClone(e.md), e.err
		}
		delete(f.cache, clientID)
	}
	c, ok := f.calls[clientID]
	if !ok {
		c = &cimdCall{done: make(chan struct{})}
		f.calls[clientID] = c
		// The fetch outlives a caller who gives up, so that the others
		// waiting on it still get an answer; Timeout bounds it.
		go f.run(context.WithoutCancel(ctx), clientID, c)
	}
	c.callers++
	f.mu.Unlock()
	select {
	case <-c.done:
		return cimdClone(c.md), c.err
	case <-ctx.Done():
		return ClientMetadata{}, cimdFetchErr(ctx.Err(), "the request was cancelled")
	}
}

// run performs one fetch and publishes its outcome to the cache and the
// waiting callers.
func (f *CIMDFetcher) run(ctx context.Context, clientID string, c *cimdCall) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	md, ttl, err := f.fetch(ctx, clientID)
	if err != nil {
		ttl = cimdNegativeTTL
	}
	f.mu.Lock()
	delete(f.calls, clientID)
	c.md, c.err = md, err
	if ttl > 0 {
		f.store(clientID, &cimdEntry{md: md, err: err, expires: f.opts.Now().Add(ttl)})
	}
	f.mu.Unlock()
	close(c.done)
}

// store caches e under clientID, first dropping expired entries and then the
// oldest when the cache is full. f.mu must be held.
func (f *CIMDFetcher) store(clientID string, e *cimdEntry) {
	if _, ok := f.cache[clientID]; !ok && len(f.cache) >= cimdMaxEntries {
		now := f.opts.Now()
		var oldest string
		for k, v := range f.cache {
			if !now.Before(v.expires) {
				delete(f.cache, k)
			} else if oldest == "" || v.seq < f.cache[oldest].seq {
				oldest = k
			}
		}
		if len(f.cache) >= cimdMaxEntries {
			delete(f.cache, oldest)
		}
	}
	f.seq++
	e.seq = f.seq
	f.cache[clientID] = e
}

// fetch gets and checks the document, and says how long it may be cached
// (0: not at all).
func (f *CIMDFetcher) fetch(ctx context.Context, clientID string) (ClientMetadata, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return ClientMetadata{}, 0, cimdErrBadURL
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "tabrelay")
	resp, err := f.client.Do(req)
	if err != nil {
		return ClientMetadata{}, 0, f.transportErr(err)
	}
	defer resp.Body.Close()
	// net/http may still hand over a response that raced the deadline: a
	// server that answers only once the client gives up (its request's
	// context ends when our connection closes) then looks like an empty 200.
	if err := ctx.Err(); err != nil {
		return ClientMetadata{}, 0, f.transportErr(err)
	}
	if err := cimdCheckResponse(resp, f.opts.MaxBytes); err != nil {
		return ClientMetadata{}, 0, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return ClientMetadata{}, 0, f.transportErr(err)
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return ClientMetadata{}, 0, cimdFetchErr(nil, "it is larger than %d bytes", f.opts.MaxBytes)
	}
	md, err := cimdParse(body, clientID)
	if err != nil {
		return ClientMetadata{}, 0, err
	}
	return md, cimdTTL(resp.Header, f.opts.Now(), f.opts.MinTTL, f.opts.MaxTTL), nil
}

// transportErr turns a failure to connect or read into a sentence.
func (f *CIMDFetcher) transportErr(err error) error {
	var cerr *CIMDError
	var dnsErr *net.DNSError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &cerr):
		return cerr
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return cimdFetchErr(err, "its server did not answer within %s", f.opts.Timeout)
	case errors.As(err, &dnsErr):
		return cimdFetchErr(err, "its host name could not be resolved")
	case errors.As(err, &certErr):
		return cimdFetchErr(err, "its server's TLS certificate is not trusted")
	}
	return cimdFetchErr(err, "the connection to its server failed")
}

// cimdCheckResponse refuses anything but a 200 JSON answer within the size
// limit (as far as its headers tell).
func cimdCheckResponse(resp *http.Response, maxBytes int64) error {
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return cimdFetchErr(nil, "its server answered with a redirect, and redirects are not followed")
	case resp.StatusCode != http.StatusOK:
		return cimdFetchErr(nil, "its server answered with HTTP status %d", resp.StatusCode)
	case resp.ContentLength > maxBytes:
		return cimdFetchErr(nil, "it is larger than %d bytes", maxBytes)
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return cimdFetchErr(err, "its server did not answer with JSON")
	}
	return nil
}

// cimdParse decodes and checks a document fetched from clientID. Keys are
// matched exactly (encoding/json alone would match them case-insensitively).
func cimdParse(body []byte, clientID string) (ClientMetadata, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return ClientMetadata{}, cimdInvalidErr(err, "it is not a JSON object")
	}
	var md ClientMetadata
	fields := []struct {
		name string
		dst  any
	}{
		{"client_id", &md.ClientID}, {"client_name", &md.ClientName},
		{"redirect_uris", &md.RedirectURIs}, {"client_uri", &md.ClientURI},
		{"logo_uri", &md.LogoURI}, {"grant_types", &md.GrantTypes},
		{"response_types", &md.ResponseTypes},
		{"token_endpoint_auth_method", &md.TokenEndpointAuthMethod},
	}
	for _, fd := range fields {
		if v, ok := raw[fd.name]; ok {
			if err := json.Unmarshal(v, fd.dst); err != nil {
				return ClientMetadata{}, cimdInvalidErr(err, "its %s field has the wrong type", fd.name)
			}
		}
	}
	if md.ClientID != clientID {
		return ClientMetadata{}, cimdInvalidErr(nil, "its client_id is not the URL it was fetched from")
	}
	for _, check := range []func(*ClientMetadata) error{cimdCheckName, cimdCheckRedirectURIs, cimdCheckAuthMethod} {
		if err := check(&md); err != nil {
			return ClientMetadata{}, err
		}
	}
	// Shown on the consent page as links or images: https only.
	md.ClientURI = cimdHTTPSOrEmpty(md.ClientURI)
	md.LogoURI = cimdHTTPSOrEmpty(md.LogoURI)
	return md, nil
}

// cimdCheckName trims client_name and requires a short one without control
// characters or the bidirectional overrides that make a name read as
// another: it is what the person is shown.
func cimdCheckName(md *ClientMetadata) error {
	md.ClientName = strings.TrimSpace(md.ClientName)
	switch {
	case md.ClientName == "":
		return cimdInvalidErr(nil, "it has no client_name")
	case utf8.RuneCountInString(md.ClientName) > cimdMaxNameRunes:
		return cimdInvalidErr(nil, "its client_name is longer than %d characters", cimdMaxNameRunes)
	case strings.ContainsFunc(md.ClientName, misleadingRune):
		return cimdInvalidErr(nil, "its client_name contains control characters")
	}
	return nil
}

// cimdCheckRedirectURIs requires one to twenty https or http loopback URIs
// (reference/mcp.md: "Redirect URIs: https or loopback").
func cimdCheckRedirectURIs(md *ClientMetadata) error {
	uris := md.RedirectURIs
	if len(uris) == 0 {
		return cimdInvalidErr(nil, "it lists no redirect_uris")
	}
	if len(uris) > cimdMaxRedirectURIs {
		return cimdInvalidErr(nil, "it lists more than %d redirect_uris", cimdMaxRedirectURIs)
	}
	for i, raw := range uris {
		if problem := cimdRedirectProblem(raw); problem != "" {
			return cimdInvalidErr(nil, "its redirect URI number %d %s", i+1, problem)
		}
	}
	return nil
}

// cimdRedirectProblem says what is wrong with one redirect URI, or "". It
// names only schemes from a fixed list, never the URI itself.
func cimdRedirectProblem(raw string) string {
	if len(raw) > maxRedirectURI {
		return fmt.Sprintf("is longer than %d bytes", maxRedirectURI)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "is not a valid URL"
	}
	switch u.Scheme {
	case "javascript", "data", "file", "vbscript":
		return "uses the " + u.Scheme + ": scheme, which is never allowed"
	}
	switch {
	case !u.IsAbs() || u.Opaque != "" || u.Host == "":
		return "is not an absolute URL"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "has a fragment"
	case u.User != nil:
		return "carries a user name or password"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && slices.Contains([]string{"127.0.0.1", "::1", "localhost"}, u.Hostname()):
		return "" // loopback, RFC 8252 §7.3
	}
	return "is neither https nor http on a loopback address"
}

// cimdCheckAuthMethod admits public clients only. It names the method only
// when it is one of the registered ones, never arbitrary document text.
func cimdCheckAuthMethod(md *ClientMetadata) error {
	switch m := md.TokenEndpointAuthMethod; m {
	case "", "none":
		return nil
	case "client_secret_basic", "client_secret_post", "client_secret_jwt",
		"private_key_jwt", "tls_client_auth", "self_signed_tls_client_auth":
		return cimdInvalidErr(nil, "it asks for token endpoint authentication %q, %s", m, cimdPublicOnly)
	}
	return cimdInvalidErr(nil, "it asks for an unknown token endpoint authentication method, %s", cimdPublicOnly)
}

func cimdHTTPSOrEmpty(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil {
		return raw
	}
	return ""
}

func cimdClone(md ClientMetadata) ClientMetadata {
	md.RedirectURIs, md.GrantTypes = slices.Clone(md.RedirectURIs), slices.Clone(md.GrantTypes)
	md.ResponseTypes = slices.Clone(md.ResponseTypes)
	return md
}

// cimdTTL says how long a document may be cached from its response headers
// (RFC 9111): 0 for no-store; else max-age less Age, or Expires less Date,
// or nothing; clamped to [minTTL, maxTTL]. no-cache counts as max-age=0: a
// document is kept at least minTTL to blunt hammering, and is never
// revalidated.
func cimdTTL(h http.Header, now time.Time, minTTL, maxTTL time.Duration) time.Duration {
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

// cimdDialControl returns the net.Dialer Control func that refuses to
// connect to any address that is not public. It runs on the connection
// actually made, after DNS, so a name that resolves differently between a
// check and the dial (DNS rebinding) cannot slip past it.
func cimdDialControl(allowLoopback bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &CIMDError{Kind: ErrCIMDForbiddenAddress, cause: err,
				Reason: "the client's metadata document could not be fetched: its address could not be checked"}
		}
		return cimdCheckAddr(ap.Addr(), allowLoopback)
	}
}

// cimdCheckAddr refuses every address that is not public unicast; with
// allowLoopback, loopback passes (nothing else does).
func cimdCheckAddr(ip netip.Addr, allowLoopback bool) error {
	what := cimdAddrClass(ip)
	if what == "" || (allowLoopback && what == "loopback") {
		return nil
	}
	return &CIMDError{Kind: ErrCIMDForbiddenAddress,
		Reason: fmt.Sprintf("the client's metadata document could not be fetched: its address %s is %s", ip, what)}
}

// cimdAddrClass says what kind of non-public address ip is, or "" for a
// public one. IPv4 addresses inside IPv6 ones (mapped, NAT64, 6to4) are
// judged by the IPv4 address.
func cimdAddrClass(ip netip.Addr) string {
	// Prefix.Contains never matches an address with a zone.
	ip = ip.WithZone("").Unmap()
	if !ip.IsValid() {
		return "not valid"
	}
	for _, b := range cimdBlocked {
		if b.prefix.Contains(ip) {
			return b.what
		}
	}
	a := ip.As16()
	switch {
	case cimdNAT64.Contains(ip):
		return cimdAddrClass(netip.AddrFrom4([4]byte(a[12:16])))
	case cimd6to4.Contains(ip):
		return cimdAddrClass(netip.AddrFrom4([4]byte(a[2:6])))
	case !ip.IsGlobalUnicast():
		return "not a public address"
	}
	return ""
}

var cimdNAT64, cimd6to4 = netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("2002::/16") // RFC 6052, RFC 3056

// cimdBlocked lists the special-purpose ranges (RFC 6890 and its IANA
// registries) a client's document may not be fetched from. The first match
// names the address.
var cimdBlocked = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"}, // "this network"
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared carrier-grade NAT space"}, // RFC 6598
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved for documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "reserved"}, // RFC 7526
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved for benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "reserved for documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "reserved for documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // and 255.255.255.255, broadcast
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "reserved"},          // IPv4-compatible, deprecated
	{netip.MustParsePrefix("64:ff9b:1::/48"), "reserved"}, // RFC 8215 local-use NAT64
	{netip.MustParsePrefix("100::/64"), "reserved"},       // RFC 6666 discard-only
	{netip.MustParsePrefix("2001::/32"), "a Teredo tunnel address"},
	{netip.MustParsePrefix("2001:2::/48"), "reserved for benchmarking"},
	{netip.MustParsePrefix("2001:db8::/32"), "reserved for documentation"},
	{netip.MustParsePrefix("3fff::/20"), "reserved for documentation"}, // RFC 9637
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"}, // deprecated, RFC 3879
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

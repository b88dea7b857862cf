package livecheck

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// maxBody bounds what the live check reads of an answer.
const maxBody = 4 << 20

// web is the host's HTTP side: a browser-like client (cookies, redirects
// not followed: the host reads them) whose errors never quote a URL.
type web struct {
	client *http.Client
}

func newWeb(base *http.Client) *web {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 0,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if base != nil && base.Transport != nil {
		c.Transport = base.Transport
	}
	return &web{client: c}
}

// reply is an HTTP answer, read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into v, saying what it is when it is not JSON.
func (r reply) json(v any) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		return fmt.Errorf("the answer (HTTP %d) is not the JSON expected: %s", r.status, clip(string(r.body), 120))
	}
	return nil
}

// do sends one request. Its error names the method and the path (never a
// query, which can hold a code) and says in words what went wrong.
func (w *web) do(ctx context.Context, method, rawURL string, body io.Reader, header http.Header) (reply, error) {
	label := method + " " + pathOf(rawURL)
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return reply{}, fmt.Errorf("%s: not a valid request", label)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s: %s", label, netWords(ctx, err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return reply{}, fmt.Errorf("%s: the answer (HTTP %d) broke off: %s", label, resp.StatusCode, netWords(ctx, err))
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

func (w *web) get(ctx context.Context, rawURL string) (reply, error) {
	return w.do(ctx, http.MethodGet, rawURL, nil, nil)
}

// postForm posts an application/x-www-form-urlencoded body.
func (w *web) postForm(ctx context.Context, rawURL string, form url.Values) (reply, error) {
	return w.do(ctx, http.MethodPost, rawURL, strings.NewReader(form.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
}

// postJSON posts v as JSON.
func (w *web) postJSON(ctx context.Context, rawURL string, v any) (reply, error) {
	data, _ := json.Marshal(v)
	return w.do(ctx, http.MethodPost, rawURL, strings.NewReader(string(data)),
		http.Header{"Content-Type": {"application/json"}})
}

// pathOf is the path of rawURL, for messages: no query, no fragment, and
// no id after /authorize/status/ (it names one person's request).
func pathOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(a URL that does not parse)"
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if i := strings.Index(p, "/authorize/status/"); i >= 0 {
		p = p[:i] + "/authorize/status/…"
	}
	return p
}

// netWords says what a network error means, without the URL the HTTP
// library quotes in it.
func netWords(ctx context.Context, err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var dns *net.DNSError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return "no answer in time"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (nothing listens there)"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before an answer"
	case errors.As(err, &dns):
		return "the name " + dns.Name + " does not resolve"
	case errors.As(err, &unknownAuthority):
		return "its TLS certificate is signed by an authority this machine does not trust"
	case errors.As(err, &hostname):
		return "its TLS certificate is for another name"
	case errors.As(err, &invalid):
		return "its TLS certificate is not valid"
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return "no answer in time"
	}
	return err.Error()
}

// since is d for a line: "0.4 s", "12 s".
func since(start time.Time) string {
	d := time.Since(start)
	if d < 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}

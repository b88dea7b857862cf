package livecheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
)

// browser is a headless Chromium with a profile of its own, removed when
// it closes: a new browser for the relay, so a new pairing, whose
// connections are only the live check's.
type browser struct {
	dir    string
	ctx    context.Context // the first tab, kept blank: closing it would close the browser
	cancel func()
}

// startBrowser launches Chromium (a path, or a name on PATH).
func startBrowser(ctx context.Context, chromium string, logf func(string, ...any)) (*browser, error) {
	path, err := exec.LookPath(chromium)
	if err != nil {
		return nil, fmt.Errorf("Chromium %q is not found (--chromium names it, or install chromium)", chromium)
	}
	dir, err := os.MkdirTemp("", "tabrelay-live-check-")
	if err != nil {
		return nil, err
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), ChromiumOptions(path, dir)...)
	bctx, cancelBrowser := chromedp.NewContext(alloc, chromedp.WithLogf(logf), chromedp.WithErrorf(logf))
	b := &browser{dir: dir, ctx: bctx, cancel: func() {
		cancelBrowser()
		cancelAlloc()
		_ = os.RemoveAll(dir)
	}}
	// The first action on a chromedp context starts what it stands for (the
	// browser here, a tab in open) and binds it to the context it is given:
	// never a check's, which ends with the check.
	stop := context.AfterFunc(ctx, cancelBrowser) // a check that ends first ends the start
	defer stop()
	if err := chromedp.Do(bctx); err != nil {
		b.cancel()
		return nil, fmt.Errorf("Chromium did not start: %v", err)
	}
	return b, nil
}

// ChromiumOptions are how the live check, and the browser tests, run
// Chromium at path: headless, with the profile directory dir of its own,
// no GPU, QUIC or component updates, no background features that call
// out, and without its sandbox as root (where Chromium refuses it).
func ChromiumOptions(path, dir string) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-features", "MediaRouter,OptimizationHints,Translate"),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	return opts
}

func (b *browser) close() {
	if b != nil {
		b.cancel()
	}
}

// within is a context of the browser's (tab) that also ends with ctx,
// the check's: chromedp's actions need the tab's context.
func within(ctx, tab context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(tab)
	if d, ok := ctx.Deadline(); ok {
		c, cancel = context.WithDeadline(tab, d)
	}
	stop := context.AfterFunc(ctx, cancel)
	return c, func() { stop(); cancel() }
}

// page is one tab of the browser showing the app.
type page struct {
	ctx    context.Context
	cancel context.CancelFunc
	origin string // the page's origin once loaded (after any redirect)
}

// open loads rawURL in a new tab.
func (b *browser) open(ctx context.Context, rawURL string) (*page, error) {
	tab, cancel := chromedp.NewContext(b.ctx)
	p := &page{ctx: tab, cancel: cancel}
	if err := chromedp.Do(tab); err != nil {
		cancel()
		return nil, fmt.Errorf("Chromium opened no tab: %v", err)
	}
	c, stop := within(ctx, tab)
	defer stop()
	if err := chromedp.Do(c, chromedp.Navigate(rawURL)); err != nil {
		cancel()
		return nil, fmt.Errorf("the app page did not load: %v", err)
	}
	origin, err := chromedp.Run(c, chromedp.Evaluate[string](`location.origin`))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("the app page: %v", err)
	}
	p.origin = origin
	return p, nil
}

// holdWaitingPage gives the browser the cookies jar holds for the waiting
// page of statusURL, as if it had opened that page itself: the relay
// releases a link approval only to the browser that opened its waiting
// page (docs/security.md, consent phishing), and the live check opened it
// over HTTP, as the host.
func (b *browser) holdWaitingPage(ctx context.Context, statusURL string, jar http.CookieJar) error {
	u, err := url.Parse(statusURL)
	if err != nil || jar == nil {
		return fmt.Errorf("the waiting page's status URL %q: %v", statusURL, err)
	}
	c, stop := within(ctx, b.ctx)
	defer stop()
	yes, secure := true, u.Scheme == "https"
	for _, k := range jar.Cookies(u) {
		_, err := chromedp.Call(c, network.SetCookie, network.SetCookieParams{Name: k.Name, Value: k.Value, URL: statusURL,
			Path: u.Path, HTTPOnly: &yes, Secure: &secure, SameSite: network.CookieSameSiteStrict})
		if err != nil {
			return fmt.Errorf("handing the waiting page's cookie to Chromium: %v", err)
		}
	}
	return nil
}

// close closes the tab, as the person closing it: its socket ends.
func (p *page) close() {
	if p != nil {
		p.cancel()
	}
}

// eval runs a script in the page and decodes its value into T.
func eval[T any](ctx context.Context, p *page, script string) (T, error) {
	c, stop := within(ctx, p.ctx)
	defer stop()
	return chromedp.Run(c, chromedp.Evaluate[T](script))
}

// poll evaluates script every 100 ms until done says so or ctx ends.
func poll[T any](ctx context.Context, p *page, script string, done func(T) bool) (T, error) {
	for {
		v, err := eval[T](ctx, p, script)
		if err == nil && done(v) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return v, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// js quotes s as a JavaScript string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// originRefused dials the relay's tab endpoint as a page of origin would
// and reports whether the relay refuses that origin (403): the one reason
// a page cannot connect that a browser hides from the page.
func originRefused(ctx context.Context, relay, origin string, hc *http.Client) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, relay+"/tab", &websocket.DialOptions{HTTPClient: hc,
		HTTPHeader: http.Header{"Origin": {origin}}})
	if err == nil {
		conn.Close(websocket.StatusNormalClosure, "live-check: origin probe")
		return false, nil
	}
	if resp != nil && resp.StatusCode == http.StatusForbidden {
		return true, nil
	}
	if resp != nil {
		return false, fmt.Errorf("GET /tab answered %d", resp.StatusCode)
	}
	return false, errors.New("GET /tab: " + netWords(ctx, err))
}

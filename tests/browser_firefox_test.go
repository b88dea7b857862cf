package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/tabrelay/tabrelay/internal/syncbuf"
)

// Firefox ESR, headless, driven through WebDriver BiDi over its
// --remote-debugging-port (Debian ships no geckodriver, so classic
// WebDriver is not the way; BiDi is plain JSON over a WebSocket).

// firefoxPrefs keep the test's Firefox quiet on a closed network: no
// updates, telemetry, safe browsing, remote settings or captive portal
// checks, and no first-run pages.
var firefoxPrefs = map[string]any{
	"app.normandy.enabled":                       false,
	"app.update.disabledForTesting":              true,
	"browser.newtabpage.enabled":                 false,
	"browser.region.network.url":                 "",
	"browser.safebrowsing.blockedURIs.enabled":   false,
	"browser.safebrowsing.downloads.enabled":     false,
	"browser.safebrowsing.malware.enabled":       false,
	"browser.safebrowsing.phishing.enabled":      false,
	"browser.sessionstore.resume_from_crash":     false,
	"browser.shell.checkDefaultBrowser":          false,
	"browser.startup.homepage_override.mstone":   "ignore",
	"browser.startup.page":                       0,
	"browser.tabs.warnOnClose":                   false,
	"datareporting.healthreport.uploadEnabled":   false,
	"datareporting.policy.dataSubmissionEnabled": false,
	"extensions.getAddons.cache.enabled":         false,
	"extensions.update.enabled":                  false,
	"geo.provider.network.url":                   "",
	"media.gmp-manager.url":                      "",
	"network.captive-portal-service.enabled":     false,
	"network.connectivity-service.enabled":       false,
	"network.dns.disablePrefetch":                true,
	"network.http.speculative-parallel-limit":    0,
	"remote.active-protocols":                    1, // WebDriver BiDi only
	"services.settings.server":                   "data:,",
	"toolkit.telemetry.enabled":                  false,
	"toolkit.telemetry.server":                   "",
	"trailhead.firstrun.didSeeAboutWelcome":      true,
	"browser.aboutwelcome.enabled":               false,
	"browser.contentblocking.introCount":         99,
	"browser.uitour.enabled":                     false,
}

var bidiListening = regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)

// startFirefox starts a headless Firefox ESR on a fresh profile and opens
// a BiDi session to it.
func startFirefox(t *testing.T) *engine {
	path, err := exec.LookPath("firefox-esr")
	if err != nil {
		t.Fatal("firefox-esr is missing: make test installs it (scripts/ensure-deps.sh), or apt-get install firefox-esr")
	}
	profile := t.TempDir()
	var prefs []byte
	for k, v := range firefoxPrefs {
		value, _ := json.Marshal(v)
		prefs = fmt.Appendf(prefs, "user_pref(%q, %s);\n", k, value)
	}
	if err := os.WriteFile(filepath.Join(profile, "user.js"), prefs, 0o600); err != nil {
		t.Fatal(err)
	}
	var b *bidi
	out := &syncbuf.Buffer{}
	startGroup(t, []string{path, "--headless", "--no-remote", "--profile", profile, "--remote-debugging-port=0", "about:blank"},
		[]string{"HOME=" + profile, "MOZ_CRASHREPORTER_DISABLE=1"}, out, func() {
			if b != nil {
				b.call("browser.close", struct{}{}, nil)
			}
		})
	var url string
	eventually(t, func() bool {
		m := bidiListening.FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, "firefox's WebDriver BiDi endpoint (firefox said: %s)", out)
	b, err = dialBiDi(url + "/session")
	if err != nil {
		t.Fatalf("firefox: %v", err)
	}
	var session struct {
		Capabilities struct {
			BrowserVersion string `json:"browserVersion"`
		} `json:"capabilities"`
	}
	if err := b.call("session.new", map[string]any{"capabilities": map[string]any{}}, &session); err != nil {
		t.Fatalf("firefox: session.new: %v", err)
	}
	return &engine{name: "firefox", version: "Firefox " + session.Capabilities.BrowserVersion, newTab: func() (engineTab, error) {
		var created struct {
			Context string `json:"context"`
		}
		err := b.call("browsingContext.create", map[string]any{"type": "tab"}, &created)
		return &bidiTab{b: b, context: created.Context}, err
	}}
}

// bidi is a WebDriver BiDi connection: commands out, their results in by
// id; events are not subscribed to.
type bidi struct {
	conn    *websocket.Conn
	mu      sync.Mutex
	next    int
	waiting map[int]chan bidiResult
	failed  error // set once reading failed; every call after fails so
}

type bidiResult struct {
	Type    string          `json:"type"` // success, error
	ID      int             `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
}

func dialBiDi(url string) (*bidi, error) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	conn.SetReadLimit(64 << 20)
	b := &bidi{conn: conn, waiting: map[int]chan bidiResult{}}
	go b.read()
	return b, nil
}

func (b *bidi) read() {
	for {
		_, data, err := b.conn.Read(context.Background())
		var r bidiResult
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		b.mu.Lock()
		if err != nil {
			b.failed = fmt.Errorf("the BiDi connection: %w", err)
			for id, ch := range b.waiting {
				delete(b.waiting, id)
				close(ch)
			}
			b.mu.Unlock()
			return
		}
		if ch := b.waiting[r.ID]; ch != nil && r.Type != "event" {
			delete(b.waiting, r.ID)
			ch <- r
		}
		b.mu.Unlock()
	}
}

// call sends the command method with params and decodes its result into
// out (when not nil).
func (b *bidi) call(method string, params, out any) error {
	b.mu.Lock()
	if b.failed != nil {
		b.mu.Unlock()
		return b.failed
	}
	b.next++
	id := b.next
	ch := make(chan bidiResult, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	if err := b.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return b.failed
		}
		if r.Type != "success" {
			return fmt.Errorf("%s: %s: %s", method, r.Error, r.Message)
		}
		if out == nil {
			return nil
		}
		return json.Unmarshal(r.Result, out)
	case <-ctx.Done():
		return fmt.Errorf("%s: no answer in %v", method, 2*patience)
	}
}

// bidiTab is a Firefox tab: a top-level browsing context.
type bidiTab struct {
	b       *bidi
	context string
}

func (f *bidiTab) navigate(url string) error {
	return f.b.call("browsingContext.navigate", map[string]any{"context": f.context, "url": url, "wait": "complete"}, nil)
}

// evaluate runs js in the page and returns its BiDi remote value.
func (f *bidiTab) evaluate(js string) (remoteValue, error) {
	var r struct {
		Type             string      `json:"type"` // success, exception
		Result           remoteValue `json:"result"`
		ExceptionDetails struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	err := f.b.call("script.evaluate", map[string]any{"expression": js, "target": map[string]any{"context": f.context},
		"awaitPromise": true, "resultOwnership": "none"}, &r)
	if err == nil && r.Type != "success" {
		err = fmt.Errorf("the page threw: %s", r.ExceptionDetails.Text)
	}
	return r.Result, err
}

// remoteValue is the part of a BiDi remote value the tests read.
type remoteValue struct {
	Type     string `json:"type"`
	Value    any    `json:"value"`
	SharedID string `json:"sharedId"`
}

func (f *bidiTab) eval(js string, out any) error {
	v, err := f.evaluate(evalScript(js))
	if err != nil {
		return err
	}
	text, _ := v.Value.(string)
	return decodeEval(text, out)
}

// element scrolls the element css selects into view and returns its
// shared id, for input actions.
func (f *bidiTab) element(css string) (string, error) {
	v, err := f.evaluate(`((el) => { el?.scrollIntoView({ block: "center" }); return el; })(document.querySelector(` + jsString(css) + `))`)
	if err == nil && v.SharedID == "" {
		err = fmt.Errorf("no element %s", css)
	}
	return v.SharedID, err
}

func (f *bidiTab) perform(source map[string]any) error {
	return f.b.call("input.performActions", map[string]any{"context": f.context, "actions": []any{source}}, nil)
}

func (f *bidiTab) click(css string) error {
	id, err := f.element(css)
	if err != nil {
		return err
	}
	return f.perform(map[string]any{"type": "pointer", "id": "mouse", "parameters": map[string]any{"pointerType": "mouse"}, "actions": []any{
		map[string]any{"type": "pointerMove", "x": 0, "y": 0, "origin": map[string]any{"type": "element", "element": map[string]any{"sharedId": id}}},
		map[string]any{"type": "pointerDown", "button": 0},
		map[string]any{"type": "pointerUp", "button": 0},
	}})
}

func (f *bidiTab) typeText(css, text string) error {
	if err := f.click(css); err != nil {
		return err
	}
	var keys []any
	for _, r := range text {
		keys = append(keys, map[string]any{"type": "keyDown", "value": string(r)}, map[string]any{"type": "keyUp", "value": string(r)})
	}
	return f.perform(map[string]any{"type": "key", "id": "keyboard", "actions": keys})
}

func (f *bidiTab) close() error {
	return f.b.call("browsingContext.close", map[string]any{"context": f.context}, nil)
}

package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/internal/syncbuf"
)

// WebKitGTK through WebKitWebDriver (classic W3C WebDriver: HTTP and JSON),
// which drives its MiniBrowser. MiniBrowser has no headless mode, so the
// driver runs under xvfb-run, on a virtual display.

// miniBrowsers is where Debian's libwebkit2gtk-4.1-0 (a dependency of
// webkit2gtk-driver) keeps MiniBrowser, under the machine's multiarch name.
const miniBrowsers = "/usr/lib/*/webkit2gtk-4.1/MiniBrowser"

// startWebKit starts WebKitWebDriver on a virtual display and opens a
// session of MiniBrowser with it.
func startWebKit(t *testing.T) *engine {
	for _, need := range []string{"WebKitWebDriver", "xvfb-run", "xauth"} {
		if _, err := exec.LookPath(need); err != nil {
			t.Fatalf("%s is missing: make test installs it (scripts/ensure-deps.sh), or apt-get install webkit2gtk-driver xvfb xauth", need)
		}
	}
	miniBrowser, _ := filepath.Glob(miniBrowsers)
	if len(miniBrowser) == 0 {
		t.Fatalf("no %s: make test installs it (scripts/ensure-deps.sh), or apt-get install webkit2gtk-driver", miniBrowsers)
	}
	port := redistest.FreePort(t)
	w := &webDriver{url: "http://127.0.0.1:" + port}
	out := &syncbuf.Buffer{}
	// The driver outlives its session: the group ends without waiting,
	// after the session closed MiniBrowser.
	startGroup(t, []string{"xvfb-run", "-a", "WebKitWebDriver", "--port=" + port}, []string{"HOME=" + t.TempDir()}, out, nil)
	t.Cleanup(func() {
		if w.session != "" {
			w.do(http.MethodDelete, "", nil, nil)
		}
	})
	eventually(t, func() bool {
		var status struct {
			Ready bool `json:"ready"`
		}
		return w.do(http.MethodGet, "/status", nil, &status) == nil && status.Ready
	}, "WebKitWebDriver ready (it said: %s)", out)
	var session struct {
		SessionID    string `json:"sessionId"`
		Capabilities struct {
			BrowserVersion string `json:"browserVersion"`
		} `json:"capabilities"`
	}
	caps := map[string]any{"alwaysMatch": map[string]any{"browserName": "MiniBrowser",
		"webkitgtk:browserOptions": map[string]any{"binary": miniBrowser[0], "args": []string{"--automation"}}}}
	if err := w.do(http.MethodPost, "/session", map[string]any{"capabilities": caps}, &session); err != nil {
		t.Fatalf("webkit: new session: %v (the driver said: %s)", err, out)
	}
	w.session = "/session/" + session.SessionID
	if err := w.do(http.MethodPost, "/timeouts", map[string]any{"script": 2 * patience.Milliseconds()}, nil); err != nil {
		t.Fatalf("webkit: timeouts: %v", err)
	}
	if err := w.do(http.MethodGet, "/window", nil, &w.current); err != nil {
		t.Fatalf("webkit: its window: %v", err)
	}
	return &engine{name: "webkit", version: "WebKitGTK " + session.Capabilities.BrowserVersion, newTab: func() (engineTab, error) {
		var win struct {
			Handle string `json:"handle"`
		}
		err := w.do(http.MethodPost, "/window/new", map[string]any{"type": "tab"}, &win)
		return &webDriverTab{w: w, handle: win.Handle}, err
	}}
}

// webDriver is a classic WebDriver session. Its commands go to the
// current window, so a tab switches to its own first; mu keeps a switch
// and the command after it together.
type webDriver struct {
	url     string
	session string // "/session/<id>" once open
	mu      sync.Mutex
	current string // the window commands go to
}

// do sends a command (path under the session) and decodes its value.
func (w *webDriver) do(method, path string, body, out any) error {
	var in bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		in = *bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	url := w.url + w.session + path
	if method == http.MethodGet && path == "/status" {
		url = w.url + path
	}
	req, err := http.NewRequestWithContext(ctx, method, url, &in)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var reply struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		return fmt.Errorf("%s %s: %d, unreadable: %w", method, path, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, reply.Value)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(reply.Value, out)
}

// webDriverTab is a WebKit tab: a window handle of the session.
type webDriverTab struct {
	w      *webDriver
	handle string
}

// in sends a command to this tab's window.
func (k *webDriverTab) in(method, path string, body, out any) error {
	k.w.mu.Lock()
	defer k.w.mu.Unlock()
	if k.w.current != k.handle {
		if err := k.w.do(http.MethodPost, "/window", map[string]any{"handle": k.handle}, nil); err != nil {
			return err
		}
		k.w.current = k.handle
	}
	return k.w.do(method, path, body, out)
}

func (k *webDriverTab) navigate(url string) error {
	return k.in(http.MethodPost, "/url", map[string]any{"url": url}, nil)
}

func (k *webDriverTab) eval(js string, out any) error {
	var text string
	script := `const done = arguments[arguments.length - 1]; ` + evalScript(js) + `.then(done);`
	if err := k.in(http.MethodPost, "/execute/async", map[string]any{"script": script, "args": []any{}}, &text); err != nil {
		return err
	}
	return decodeEval(text, out)
}

// element returns the WebDriver id of the element css selects.
func (k *webDriverTab) element(css string) (string, error) {
	var el map[string]string
	if err := k.in(http.MethodPost, "/element", map[string]any{"using": "css selector", "value": css}, &el); err != nil {
		return "", err
	}
	return el["element-6066-11e4-a52e-4f735466cecf"], nil
}

func (k *webDriverTab) click(css string) error {
	id, err := k.element(css)
	if err != nil {
		return err
	}
	return k.in(http.MethodPost, "/element/"+id+"/click", map[string]any{}, nil)
}

func (k *webDriverTab) typeText(css, text string) error {
	id, err := k.element(css)
	if err != nil {
		return err
	}
	return k.in(http.MethodPost, "/element/"+id+"/value", map[string]any{"text": text}, nil)
}

func (k *webDriverTab) close() error {
	return k.in(http.MethodDelete, "/window", nil, nil)
}

package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tabrelay/tabrelay/internal/syncbuf"
)

// The SDK's browser tests run in three engines (issue 26 item 8): Debian's
// Chromium through chromedp, its Firefox ESR through WebDriver BiDi
// (browser_firefox_test.go) and its WebKitGTK through classic WebDriver
// (browser_webkit_test.go), each headless, with a profile of its own,
// driven from Go through the small interface below. scripts/ensure-deps.sh
// installs all three.

// engineTab is one tab of a browser: a top-level page.
type engineTab interface {
	navigate(url string) error
	// eval runs the JavaScript expression js in the page, awaits it when
	// it is a promise, and decodes its value (as JSON) into out, unless
	// out is nil. What js throws comes back as the error.
	eval(js string, out any) error
	// click clicks the first element css selects, as the person's pointer.
	click(css string) error
	// typeText types text into the first element css selects, as the
	// person's keyboard.
	typeText(css, text string) error
	// close closes the tab, as the person does; the browser stays.
	close() error
}

// engine is a running browser: its first tab stays open on about:blank
// (closing the last tab may end the browser), newTab opens more.
type engine struct {
	name    string
	version string
	newTab  func() (engineTab, error)
}

// engines are the three browsers, each started by its function, which
// ends it with the test.
var engines = []struct {
	name  string
	start func(t *testing.T) *engine
}{
	{"chromium", startChromium},
	{"firefox", startFirefox},
	{"webkit", startWebKit},
}

// inEachEngine runs test once per engine, as a subtest named after it,
// with a browser of its own. The test is parallel, as every browser test
// (browser_test.go).
func inEachEngine(t *testing.T, test func(t *testing.T, e *engine)) {
	t.Parallel()
	for _, en := range engines {
		t.Run(en.name, func(t *testing.T) {
			start := time.Now()
			e := en.start(t)
			t.Logf("%s %s started in %v", e.name, e.version, time.Since(start).Round(time.Millisecond))
			test(t, e)
		})
	}
}

// openTab opens url in a new tab of e.
func openTab(t *testing.T, e *engine, url string) engineTab {
	t.Helper()
	tab, err := e.newTab()
	if err != nil {
		t.Fatalf("%s: open a tab: %v", e.name, err)
	}
	if err := tab.navigate(url); err != nil {
		t.Fatalf("%s: open %s: %v", e.name, url, err)
	}
	return tab
}

// evalAs returns the value of js in tab, failing the test when it throws.
func evalAs[T any](t testing.TB, tab engineTab, js string) T {
	t.Helper()
	var v T
	if err := tab.eval(js, &v); err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitTrue waits until the expression js is true in tab. what says what
// it waits for: a string, or a lazy one, made when the wait failed.
func waitTrue(t testing.TB, tab engineTab, js string, what any) {
	t.Helper()
	eventually(t, func() bool {
		var ok bool
		return tab.eval(js, &ok) == nil && ok
	}, "%v (%s)", what, js)
}

// lazy is a text made when it is printed.
type lazy func() string

func (l lazy) String() string { return l() }

// waitStateIn waits until the client of the page in tab reports state.
func waitStateIn(t testing.TB, tab engineTab, state string) {
	t.Helper()
	waitTrue(t, tab, `((window.tabrelayStatus || {}).state || "") === `+jsString(state), "the page's client "+state)
}

// visible is the JavaScript test that css selects an element the person sees.
func visible(css string) string {
	return `((el) => !!el && el.getClientRects().length > 0)(document.querySelector(` + jsString(css) + `))`
}

// evalScript wraps the expression js so that it always resolves, to the
// JSON of {value} or of {error}: one shape for every engine's protocol.
func evalScript(js string) string {
	return `(async () => (` + js + `))().then(
  (v) => JSON.stringify({ value: v === undefined ? null : v }),
  (e) => JSON.stringify({ error: String((e && e.stack) || e) }))`
}

// decodeEval decodes what evalScript resolved to into out.
func decodeEval(text string, out any) error {
	var got struct {
		Value json.RawMessage `json:"value"`
		Error *string         `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		return fmt.Errorf("the page answered %q: %w", text, err)
	}
	if got.Error != nil {
		return errors.New(*got.Error)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(got.Value, out)
}

// startChromium is the chromium of browser_test.go as an engine.
func startChromium(t *testing.T) *engine {
	first := chromium(t)
	ua, err := chromedp.Run(first, chromedp.Evaluate[string](`navigator.userAgent`))
	if err != nil {
		t.Fatalf("chromium's version: %v", err)
	}
	v := "Chromium " + strings.TrimPrefix(regexp.MustCompile(`Chrome/\S+`).FindString(ua), "Chrome/")
	return &engine{name: "chromium", version: v, newTab: func() (engineTab, error) {
		ctx, cancel := chromedp.NewContext(first)
		t.Cleanup(cancel)
		return cdpTab{ctx}, chromedp.Do(ctx)
	}}
}

// cdpTab is a Chromium tab driven by chromedp.
type cdpTab struct{ ctx context.Context }

func (c cdpTab) navigate(url string) error { return chromedp.Do(c.ctx, chromedp.Navigate(url)) }

func (c cdpTab) eval(js string, out any) error {
	text, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](evalScript(js), chromedp.EvalAwaitPromise))
	if err != nil {
		return err
	}
	return decodeEval(text, out)
}

func (c cdpTab) click(css string) error {
	return chromedp.Do(c.ctx, chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible))
}

func (c cdpTab) typeText(css, text string) error {
	return chromedp.Do(c.ctx, chromedp.SendKeys(chromedp.CSS(css), text, chromedp.NodeVisible))
}

func (c cdpTab) close() error { return chromedp.Cancel(c.ctx) }

// startGroup starts argv in a process group of its own, with its output
// to out, and ends the whole group (the browser's and the driver's child
// processes, Xvfb) by its id with the test: at once, or when shutdown is
// not nil, after shutdown asked the program to end and it did (or 10 s
// passed).
func startGroup(t *testing.T, argv []string, env []string, out *syncbuf.Buffer, shutdown func()) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", argv[0], err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		if shutdown != nil {
			shutdown()
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
			}
		}
		endGroup(cmd.Process.Pid)
		<-exited
	})
	return cmd
}

// endGroup ends the process group pgid: SIGTERM first, which lets Xvfb
// remove its display's lock and socket (killed, it leaves them in /tmp),
// then SIGKILL to whatever is left after 5 s.
func endGroup(pgid int) {
	syscall.Kill(-pgid, syscall.SIGTERM)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(-pgid, 0) != nil {
			return // no process of the group is left
		}
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
}

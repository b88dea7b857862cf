package tests

import (
	"bufio"
	"context"
	"github.com/tabrelay/tabrelay/internal/syncbuf"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// conformanceSuite returns the Node 22 binary and the pinned suite's entry
// point of the given package (installed by scripts/ensure-deps.sh, which
// `make test` runs).
func conformanceSuite(t *testing.T, pkg string) (node, entry string) {
	t.Helper()
	out, err := exec.Command("bash", "../scripts/node22.sh").Output()
	if err != nil {
		t.Fatalf("no Node 22 for the conformance suite (run make test: scripts/ensure-deps.sh installs it): %v", err)
	}
	node = strings.TrimSpace(string(out))
	entry, _ = filepath.Abs(filepath.Join("..", "scripts", "conformance", "node_modules", pkg, "dist", "index.js"))
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("the conformance suite is not installed (run make test: scripts/ensure-deps.sh installs it): %v", err)
	}
	return node, entry
}

// TestConformanceAuthorizationServer runs the official suite's
// authorization-server check against the relay. The suite prints the
// authorization URL and waits for its callback; the test plays the person:
// it opens the waiting page, approves the connect code from a headless
// tab, and follows the page's redirect to the suite's callback.
func TestConformanceAuthorizationServer(t *testing.T) {
	node, entry := conformanceSuite(t, "@modelcontextprotocol/conformance")
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	port := strings.TrimPrefix(freePort(t), "127.0.0.1:")
	h.redirectURI = "http://127.0.0.1:" + port + "/callback"
	h.register()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outDir := t.TempDir()
	cmd := exec.CommandContext(ctx, node, entry, "authorization", "--url", r.url, "--client-id", h.clientID,
		"--resource", r.url, "--port", port, "-o", outDir)
	stdout, _ := cmd.StdoutPipe()
	var transcript syncbuf.Buffer
	cmd.Stderr = &transcript
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	authURL := waitForAuthorizationURL(t, io.TeeReader(stdout, &transcript))
	go io.Copy(&transcript, stdout)

	f := h.authorizeURL(authURL)
	if out, err := b.ask(r.url, "approve", f.code); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	st := h.status(f)
	if st["state"] != "approved" {
		t.Fatalf("status %v", st)
	}
	eventually(t, func() bool { // the suite's callback listener may still be starting
		resp, err := http.Get(st["redirect"])
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "the suite's callback answers")

	err := cmd.Wait()
	out := transcript.String()
	if err != nil || !strings.Contains(out, " 0 failed") {
		t.Fatalf("conformance authorization: %v\n%s\n%s", err, out, checks(outDir))
	}
	t.Logf("conformance authorization:\n%s", summary(out))
	r.assertNoSecretsLogged(f)
}

// waitForAuthorizationURL reads the suite's output up to the URL it asks a
// browser to open: the line after "Access the following URL".
func waitForAuthorizationURL(t *testing.T, r io.Reader) string {
	t.Helper()
	sc := bufio.NewScanner(r)
	next := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if next && strings.HasPrefix(line, "http") {
			return line
		}
		next = next || strings.Contains(line, "Access the following URL")
	}
	t.Fatal("the suite printed no authorization URL")
	return ""
}

// authorizeURL opens an authorization URL someone else made (the suite's)
// and reads its waiting page.
func (h *host) authorizeURL(raw string) *flow {
	h.t.Helper()
	resp, err := h.http.Get(raw)
	if err != nil {
		h.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("authorize: %d\n%s", resp.StatusCode, body)
	}
	f := &flow{page: string(body)}
	m1, m2 := codeAttr.FindStringSubmatch(f.page), statusAttr.FindStringSubmatch(f.page)
	if m1 == nil || m2 == nil {
		h.t.Fatalf("the waiting page has no code or status URL:\n%s", f.page)
	}
	f.code, f.statusURL = m1[1], m2[1]
	return f
}

func summary(out string) string {
	if i := strings.Index(out, "=== SUMMARY ==="); i >= 0 {
		return out[i:]
	}
	return out
}

// checks returns the suite's detailed results, for a failure's message.
func checks(dir string) string {
	var sb strings.Builder
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(path, "checks.json") {
			data, _ := os.ReadFile(path)
			sb.WriteString(path + ":\n" + string(data) + "\n")
		}
		return nil
	})
	return sb.String()
}

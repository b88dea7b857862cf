package tests

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/protocol"
)

// TestConformanceServer runs the official MCP server suites against a
// relay whose tab runs the suites' fixture tools: 0.1.16 (handshake era),
// and 0.2.0-alpha.12 with the 2025-11-25 and the 2026-07-28 requirements.
// The suites send no token, so the relay runs with its loopback-only
// switch that lets such requests reach the conformance tab's pairing.
// What tabrelay fails on purpose is in scripts/conformance/expected-
// failures-*.yml, each entry argued; anything else fails the test.
func TestConformanceServer(t *testing.T) {
	nodeBin, modern := conformanceSuite(t, "@modelcontextprotocol/conformance")
	_, legacy := conformanceSuite(t, "conformance-legacy")
	b := newBrowser(t)
	secret := make([]byte, 32)
	rand.Read(secret)
	if err := writeFile(b.secretFile, base64.RawURLEncoding.EncodeToString(secret)); err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, func(c *node.Config) {
		c.Bundle = protocol.ConformanceBundle()
		c.OpenPairingSecretFile = b.secretFile
	})
	b.startTab(r.url, "conformance", "--bundle", "conformance")
	r.waitTabs(b.pairing(r.key), 1)
	if !strings.Contains(r.logs.String(), "TEST SWITCH ON") {
		t.Fatal("the open-pairing switch is not loud in the log")
	}
	baselines, _ := filepath.Abs("../scripts/conformance")
	runs := []struct {
		name     string
		args     []string
		baseline string
	}{
		{"0.1.16 handshake era", []string{legacy, "server"}, "expected-failures-legacy.yml"},
		{"0.2.0-alpha.12 requirements 2025-11-25", []string{modern, "server", "--requirements", "2025-11-25"}, "expected-failures-legacy.yml"},
		{"0.2.0-alpha.12 requirements 2026-07-28", []string{modern, "server", "--requirements", "2026-07-28"}, "expected-failures-2026-07-28.yml"},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			args := append(run.args, "--url", r.url+"/", "-o", t.TempDir(),
				"--expected-failures", filepath.Join(baselines, run.baseline))
			out, err := exec.CommandContext(ctx, nodeBin, args...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Baseline check passed") {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Logf("%s", summary(string(out)))
		})
	}
}

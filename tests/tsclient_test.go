package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tsClient returns the system node (the client needs Node >= 20) and the
// script that drives the official TypeScript client, pinned in
// tests/node/package-lock.json (installed by scripts/ensure-deps.sh, which
// `make test` runs).
func tsClient(t *testing.T) (node, script string) {
	t.Helper()
	return tsClientScript(t, "ts-client-e2e.mjs")
}

// tsClientScript is tsClient for the script name of tests/node.
func tsClientScript(t testing.TB, name string) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("no node on PATH (the TypeScript client needs Node >= 20)")
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	major, _ := strconv.Atoi(strings.Split(strings.TrimSpace(string(out)), ".")[0])
	if err != nil || major < 20 {
		t.Fatalf("node %s on PATH: the TypeScript client needs Node >= 20 (%v)", strings.TrimSpace(string(out)), err)
	}
	dir, _ := filepath.Abs("node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "client", "package.json")); err != nil {
		t.Fatalf("the TypeScript client is not installed (run make test: scripts/ensure-deps.sh installs it): %v", err)
	}
	return node, filepath.Join(dir, name)
}

// TestTypeScriptClient runs the official TypeScript client (v2) through a
// connection's whole life, once per protocol era: registration, the
// person's approval in a headless tab, tools and resources, a refresh,
// revocation and the 401 after it. The script prints a line per step.
func TestTypeScriptClient(t *testing.T) {
	node, script := tsClient(t)
	for _, era := range []string{"legacy", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			r := startRelay(t, nil)
			b, _ := pairedBrowser(t, r)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script)
			cmd.Dir = filepath.Dir(script)
			cmd.Env = append(os.Environ(), "TABRELAY_URL="+r.url, "TABRELAY_BIN="+binary, "TABRELAY_ORIGIN="+origin,
				"TABRELAY_SECRET_FILE="+b.secretFile, "TABRELAY_ERA="+era)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the TypeScript client (%s era): %v\n%s", era, err, out)
			}
			t.Logf("the TypeScript client (%s era):\n%s", era, out)
		})
	}
}

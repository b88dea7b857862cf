package tests

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

const adminToken = "e2e-admin-token-0123456789abcdef"

// scopeCLI runs `tabrelay scope ARGS…` against the admin listener admin
// with the token in the environment (token "" leaves it out).
func scopeCLI(t *testing.T, admin, token string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"scope"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "RELAY_ADMIN_LISTEN=" + strings.TrimPrefix(admin, "http://")}
	if token != "" {
		cmd.Env = append(cmd.Env, "RELAY_ADMIN_TOKEN="+token)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), exitCode(err)
}

// connectServe makes a real connection to a `tabrelay serve` process: a
// host registers and authorizes, the person approves in a tab of b, the
// host exchanges the code for tokens. It returns the connection's id.
func connectServe(t *testing.T, p *serveProc, b *browser, scope ...string) (string, map[string]any) {
	t.Helper()
	h := newHost(t, p.url)
	h.register()
	f := h.authorize()
	args := []string{"approve"}
	for _, s := range scope {
		args = append(args, "--scope", s)
	}
	if out, err := b.ask(p.url, append(args, f.code)...); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	st := h.status(f)
	if st["state"] != "approved" {
		t.Fatalf("status after approval: %v", st)
	}
	status, tokens := h.exchange(f, h.codeFrom(f, st["redirect"]))
	if status != http.StatusOK || tokens["access_token"] == nil {
		t.Fatalf("token: %d %v", status, tokens)
	}
	out, err := b.ask(p.url, "connections")
	var list struct {
		Connections []struct{ ID string } `json:"connections"`
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Connections) != 1 {
		t.Fatalf("connections: %v\n%s", err, out)
	}
	return list.Connections[0].ID, tokens
}

// TestScopeCLIRoundTrip drives `tabrelay scope` against a running relay
// process with a real connection: show, only, set, who, clear, and the
// exit codes of the refusals.
func TestScopeCLIRoundTrip(t *testing.T) {
	listen, admin := freePort(t), freePort(t)
	p := startServe(t, listen, admin, t.TempDir(), "RELAY_ADMIN_TOKEN="+adminToken)
	b := newBrowser(t)
	b.startTab(p.url, "a", "--focus")
	b.waitSecret()
	eventually(t, func() bool { return p.metric(t, "tabrelay_tabs_connected") == "1" }, "tab connected")
	conn, tokens := connectServe(t, p, b, "counter:get,increment", "whoami")

	run := func(want int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := scopeCLI(t, p.admin, adminToken, args...)
		if code != want {
			t.Fatalf("tabrelay scope %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		if strings.Contains(out+errOut, adminToken) {
			t.Fatalf("tabrelay scope %s printed the admin token", strings.Join(args, " "))
		}
		return out, errOut
	}
	contains := func(what, s string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(s, w) {
				t.Fatalf("%s: no %q in:\n%s", what, w, s)
			}
		}
	}

	// show: as the person approved it.
	out, _ := run(0, "show", conn)
	contains("show", out, conn+" (E2E Host, 127.0.0.1:33418) may use:\n", "  counter: get, increment\n", "  whoami: every action\n", "by tab")
	out, _ = run(0, "show", "--json", conn)
	var rec struct {
		Connection string `json:"connection"`
		Version    int    `json:"version"`
		Entries    []struct {
			Tool    string   `json:"tool"`
			Actions []string `json:"actions"`
		} `json:"entries"`
		UpdatedAt string `json:"updatedAt"`
		UpdatedBy string `json:"updatedBy"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Connection != conn || rec.Version != 1 || len(rec.Entries) != 2 || rec.UpdatedBy != "tab" || rec.UpdatedAt == "" {
		t.Fatalf("show --json: %v %+v\n%s", err, rec, out)
	}

	// only replaces; flags may follow the arguments.
	out, _ = run(0, "only", conn, "counter:get", "notes:list", "--who", "ops")
	contains("only", out, "  counter: get\n", "  notes: list\n", "by admin:ops")
	if strings.Contains(out, "whoami") {
		t.Fatalf("only kept whoami:\n%s", out)
	}
	// The person's Connections panel sees what the admin wrote.
	if panel, err := b.ask(p.url, "connections"); err != nil || !strings.Contains(panel, `"notes"`) || strings.Contains(panel, `"whoami"`) {
		t.Fatalf("the tab's connections after only: %v\n%s", err, panel)
	}

	// set adds.
	out, _ = run(0, "set", conn, "whoami", "counter:reset")
	contains("set", out, "  counter: get, reset\n", "  notes: list\n", "  whoami: every action\n", "by admin:cli")

	// who: by tool, by tool and action.
	out, _ = run(0, "who", "--tool", "counter")
	contains("who counter", out, "1 connection(s) may use counter:\n", "  "+conn+"\n")
	out, _ = run(0, "who", "--tool", "counter", "--action", "reset", "--json")
	var holders struct {
		Tool, Action string
		Connections  []string
	}
	if err := json.Unmarshal([]byte(out), &holders); err != nil || holders.Tool != "counter" || holders.Action != "reset" || len(holders.Connections) != 1 || holders.Connections[0] != conn {
		t.Fatalf("who --json: %v %+v\n%s", err, holders, out)
	}
	// --admin wins over RELAY_ADMIN_LISTEN, as a URL too.
	out, errOut, code := scopeCLI(t, "127.0.0.1:1", adminToken, "who", "--admin", p.admin, "--tool", "counter")
	if code != 0 || !strings.Contains(out, conn) {
		t.Fatalf("who --admin %s: exit %d\n%s%s", p.admin, code, out, errOut)
	}
	out, _ = run(0, "who", "--tool", "counter", "--action", "increment")
	contains("who counter:increment", out, "no connection may use counter:increment")

	// clear: no access, and the index says so.
	out, _ = run(0, "clear", conn)
	contains("clear", out, conn+" (E2E Host, 127.0.0.1:33418): no access\n")
	out, _ = run(0, "show", conn)
	contains("show after clear", out, ": no access\n", "by admin:cli")
	for _, tool := range []string{"counter", "whoami", "notes"} {
		out, _ = run(0, "who", "--tool", tool)
		contains("who after clear", out, "no connection may use "+tool)
	}

	// Refusals and their exit codes.
	_, errOut = run(3, "show", "conn_nope")
	contains("unknown connection", errOut, `"conn_nope"`)
	run(3, "set", "conn_nope", "whoami")
	_, errOut = run(1, "set", conn, "bogus")
	contains("bad tool", errOut, `"bogus"`, "no such tool")
	_, errOut = run(1, "only", conn, "counter:explode")
	contains("bad action", errOut, `"explode"`)
	_, errOut = run(1, "who", "--tool", "bogus")
	contains("who bad tool", errOut, `"bogus"`)
	run(2, "show")
	run(2, "who")
	run(2, "set", conn)
	run(2, "frobnicate")
	for _, wrong := range []string{"wrong-token-0123456789", adminToken + "x"} {
		_, errOut, code := scopeCLI(t, p.admin, adminToken, "show", "--token", wrong, conn)
		if code != 4 || strings.Contains(errOut, wrong) || !strings.Contains(errOut, "admin token") {
			t.Fatalf("wrong token: exit %d\n%s", code, errOut)
		}
	}
	if _, errOut, code := scopeCLI(t, p.admin, "", "show", conn); code != 4 || !strings.Contains(errOut, "RELAY_ADMIN_TOKEN") {
		t.Fatalf("no token: exit %d\n%s", code, errOut)
	}
	// Nothing secret reached the relay's log.
	logs := p.stderr.String()
	for _, s := range []string{adminToken, tokens["access_token"].(string), tokens["refresh_token"].(string)} {
		if strings.Contains(logs, s) {
			t.Fatalf("a secret reached the relay's log: %.12s…", s)
		}
	}
	if !strings.Contains(logs, `"by":"admin:ops"`) {
		t.Fatalf("no log line of the admin's write:\n%s", logs)
	}
}

// TestScopeCLIAdminAPIOff: a relay without RELAY_ADMIN_TOKEN answers that
// its admin API is off, and the CLI exits 1 saying so; /metrics stays open.
func TestScopeCLIAdminAPIOff(t *testing.T) {
	p := startServe(t, freePort(t), freePort(t), t.TempDir())
	_, errOut, code := scopeCLI(t, p.admin, adminToken, "show", "conn_x")
	if code != 1 || !strings.Contains(errOut, "admin API is off") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	resp, err := http.Get(p.admin + "/metrics")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics without a token: %v %v", err, resp)
	}
	resp.Body.Close()
	// Nothing listens: exit 1 with where it looked.
	closed := freePort(t)
	if _, errOut, code := scopeCLI(t, "http://"+closed, adminToken, "show", "conn_x"); code != 1 || !strings.Contains(errOut, closed) {
		t.Fatalf("no relay: exit %d\n%s", code, errOut)
	}
}

// TestScopeAdminTokenSetting: a short RELAY_ADMIN_TOKEN stops the relay
// with one line, and `tabrelay serve -h` never prints the token.
func TestScopeAdminTokenSetting(t *testing.T) {
	cmd := exec.Command(binary, "serve")
	cmd.Env = []string{"RELAY_DATA_DIR=" + t.TempDir(), "ALLOWED_ORIGINS=" + origin, "RELAY_ADMIN_TOKEN=short"}
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if exitCode(err) != 2 || len(lines) != 1 || !strings.Contains(lines[0], "RELAY_ADMIN_TOKEN") {
		t.Fatalf("short token: exit %d\n%s", exitCode(err), out)
	}
	cmd = exec.Command(binary, "serve", "-h")
	cmd.Env = []string{"RELAY_ADMIN_TOKEN=" + adminToken}
	out, _ = cmd.CombinedOutput()
	if !strings.Contains(string(out), "admin-token") || strings.Contains(string(out), adminToken) {
		t.Fatalf("serve -h:\n%s", out)
	}
}

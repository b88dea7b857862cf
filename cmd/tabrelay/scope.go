package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/tabrelay/tabrelay/admin"
	"github.com/tabrelay/tabrelay/protocol"
)

const scopeUsage = `usage: tabrelay scope COMMAND [flags] ARGS

Reads and writes each connection's scope through a running relay's admin
API (on its admin listener, RELAY_ADMIN_LISTEN; it needs RELAY_ADMIN_TOKEN).

  tabrelay scope show CONN                    what CONN may use
  tabrelay scope set CONN TOOL[:ACTION,…]…    add tools or actions to CONN's scope
  tabrelay scope only CONN TOOL[:ACTION,…]…   replace CONN's scope with these
  tabrelay scope clear CONN                   CONN may use nothing
  tabrelay scope who --tool TOOL [--action ACTION]
                                              which connections may use TOOL (ACTION)

TOOL alone grants every action of the tool, including actions added later;
TOOL:a,b grants those actions. CONN is a connection id (conn_…), as
tabrelay tab connections lists them.

Flags (before or after the arguments):
  --admin ADDR   the admin listener, host:port or URL (RELAY_ADMIN_LISTEN; default 127.0.0.1:9090)
  --token TOKEN  the admin token (RELAY_ADMIN_TOKEN; prefer the variable: flags show in ps)
  --who NAME     recorded as updatedBy "admin:NAME" (default cli)
  --json         print the admin API's JSON answer instead of sentences

Exit codes:
  0  done
  1  the relay refused (a bad tool or action, the admin API off) or could not be reached
  2  usage: the command line is wrong
  3  not found: no such connection (or it was forgotten)
  4  unauthorized: the admin token is missing or wrong
`

// Exit codes of tabrelay scope.
const (
	scopeOK           = 0
	scopeFailed       = 1
	scopeBadUsage     = 2
	scopeNotFound     = 3
	scopeUnauthorized = 4
)

// scopeCmd is `tabrelay scope …`: a client of the admin API.
func scopeCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, scopeUsage)
		return scopeBadUsage
	}
	verb := args[0]
	switch verb {
	case "show", "set", "only", "clear", "who":
	case "help", "-h", "--help":
		fmt.Fprint(stdout, scopeUsage)
		return scopeOK
	default:
		fmt.Fprintf(stderr, "tabrelay scope: unknown command %q\n\n%s", verb, scopeUsage)
		return scopeBadUsage
	}
	fs := flag.NewFlagSet("tabrelay scope "+verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	admin := fs.String("admin", "", "")
	token := fs.String("token", "", "")
	who := fs.String("who", "cli", "")
	asJSON := fs.Bool("json", false, "")
	tool := fs.String("tool", "", "")
	action := fs.String("action", "", "")
	rest, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, scopeUsage)
		return scopeOK
	}
	if err != nil {
		return scopeUsageError(stderr, err.Error())
	}
	if verb != "who" && (*tool != "" || *action != "") {
		return scopeUsageError(stderr, "--tool and --action belong to tabrelay scope who")
	}
	var method, path string
	var body any
	switch verb {
	case "show", "clear":
		if len(rest) != 1 {
			return scopeUsageError(stderr, "tabrelay scope "+verb+" takes one connection id")
		}
		method, path = http.MethodGet, "/admin/scopes/"+url.PathEscape(rest[0])
		if verb == "clear" {
			method = http.MethodDelete
		}
	case "set", "only":
		if len(rest) < 2 {
			return scopeUsageError(stderr, "tabrelay scope "+verb+" takes a connection id and one or more TOOL[:ACTION,…]")
		}
		var entries scopeFlags
		for _, e := range rest[1:] {
			if err := entries.Set(e); err != nil {
				return scopeUsageError(stderr, fmt.Sprintf("%q: %v", e, err))
			}
		}
		method, path, body = http.MethodPost, "/admin/scopes/"+url.PathEscape(rest[0]), map[string]any{"entries": []protocol.ScopeEntry(entries)}
		if verb == "only" {
			method = http.MethodPut
		}
	case "who":
		if len(rest) != 0 || *tool == "" {
			return scopeUsageError(stderr, "tabrelay scope who takes --tool TOOL [--action ACTION]")
		}
		q := url.Values{"tool": {*tool}}
		if *action != "" {
			q.Set("action", *action)
		}
		method, path = http.MethodGet, "/admin/scopes?"+q.Encode()
	}

	base, err := adminBase(*admin)
	if err != nil {
		return scopeUsageError(stderr, err.Error())
	}
	if *token == "" {
		*token = strings.TrimSpace(os.Getenv("RELAY_ADMIN_TOKEN"))
	}
	if *token == "" {
		fmt.Fprintln(stderr, "tabrelay scope: no admin token: set RELAY_ADMIN_TOKEN (or pass --token)")
		return scopeUnauthorized
	}
	status, raw, err := adminRequest(method, base+path, *token, *who, body)
	if err != nil {
		fmt.Fprintf(stderr, "tabrelay scope: cannot reach the admin API at %s (is the relay running? RELAY_ADMIN_LISTEN / --admin): %v\n", base, err)
		return scopeFailed
	}
	if status != http.StatusOK {
		return scopeRefused(stderr, status, raw)
	}
	if *asJSON {
		var out bytes.Buffer
		if json.Indent(&out, raw, "", "  ") != nil {
			out.Reset()
			out.Write(raw)
		}
		fmt.Fprintln(stdout, strings.TrimSpace(out.String()))
		return scopeOK
	}
	if verb == "who" {
		return printAnswer(raw, stdout, stderr, printHolders)
	}
	return printAnswer(raw, stdout, stderr, printScope)
}

// printAnswer decodes an admin API answer into the API's own type and
// prints it for a person.
func printAnswer[V any](raw []byte, stdout, stderr io.Writer, print func(io.Writer, V)) int {
	var v V
	if err := json.Unmarshal(raw, &v); err != nil {
		fmt.Fprintln(stderr, "tabrelay scope: the relay's answer is not the admin API's:", err)
		return scopeFailed
	}
	print(stdout, v)
	return scopeOK
}

func scopeUsageError(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "tabrelay scope: %s\n\n%s", msg, scopeUsage)
	return scopeBadUsage
}

// parseInterspersed parses flags before, between and after the
// arguments ("--" ends the flags).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if used := len(args) - len(left); used > 0 && args[used-1] == "--" {
			return append(rest, left...), nil
		}
		if len(left) == 0 {
			return rest, nil
		}
		rest, args = append(rest, left[0]), left[1:]
	}
}

// adminBase turns RELAY_ADMIN_LISTEN (or --admin) into the admin API's
// base URL: a listen address on every interface is reached on loopback.
func adminBase(v string) (string, error) {
	if v == "" {
		v = strings.TrimSpace(os.Getenv("RELAY_ADMIN_LISTEN"))
	}
	if v == "" {
		v = "127.0.0.1:9090"
	}
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("--admin %q is neither host:port nor an http(s) URL", v)
		}
		return strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/"), nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", fmt.Errorf("the admin address %q is not host:port (RELAY_ADMIN_LISTEN or --admin)", v)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// adminRequest sends one request to the admin API; the token goes only in
// the Authorization header.
func adminRequest(method, u, token, who string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Admin-Who", who)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, raw, err
}

// scopeRefused prints the relay's refusal and chooses the exit code.
func scopeRefused(stderr io.Writer, status int, raw []byte) int {
	var e struct{ Error, Message string }
	if json.Unmarshal(raw, &e) != nil || e.Message == "" {
		e.Message = fmt.Sprintf("the admin API answered %d %s", status, http.StatusText(status))
	}
	if status == http.StatusUnauthorized {
		fmt.Fprintln(stderr, "tabrelay scope: the relay refused the admin token: check RELAY_ADMIN_TOKEN (or --token)")
		return scopeUnauthorized
	}
	fmt.Fprintln(stderr, "tabrelay scope:", e.Message)
	switch {
	case status == http.StatusNotFound && e.Error == protocol.ErrNotFound.Code:
		return scopeNotFound
	}
	return scopeFailed
}

func printScope(w io.Writer, v admin.ScopeView) {
	name := v.Connection
	if v.Client != "" {
		name += " (" + v.Client
		if v.Host != "" {
			name += ", " + v.Host
		}
		name += ")"
	}
	switch {
	case v.Revoked:
		fmt.Fprintf(w, "%s was forgotten: no access\n", name)
	case v.Unreadable:
		fmt.Fprintf(w, "%s: no access: its stored scope cannot be read (write it anew with tabrelay scope only or clear)\n", name)
	case v.Parent != "":
		fmt.Fprintf(w, "%s is derived from %s\n", name, v.Parent)
		if len(v.Entries) > 0 {
			fmt.Fprintln(w, "its own entries (narrowing its parent's):")
			printEntries(w, v.Entries)
		}
		if v.Resolved == nil || len(*v.Resolved) == 0 {
			fmt.Fprintln(w, "no access")
		} else {
			fmt.Fprintln(w, "may use:")
			printEntries(w, *v.Resolved)
		}
	case len(v.Entries) == 0:
		fmt.Fprintf(w, "%s: no access\n", name)
	default:
		fmt.Fprintf(w, "%s may use:\n", name)
		printEntries(w, v.Entries)
	}
	if v.UpdatedAt != nil && !v.Revoked {
		fmt.Fprintf(w, "(changed %s by %s)\n", v.UpdatedAt.UTC().Format(time.RFC3339), v.UpdatedBy)
	}
}

func printEntries(w io.Writer, entries []protocol.ScopeEntry) {
	for _, e := range entries {
		actions := strings.Join(e.Actions, ", ")
		if protocol.GrantsAll(e) {
			actions = "every action"
		}
		fmt.Fprintf(w, "  %s: %s\n", e.Tool, actions)
	}
}

func printHolders(w io.Writer, h admin.HoldersView) {
	what := h.Tool
	if h.Action != "" {
		what += ":" + h.Action
	}
	if len(h.Connections) == 0 {
		fmt.Fprintf(w, "no connection may use %s\n", what)
		return
	}
	fmt.Fprintf(w, "%d connection(s) may use %s:\n", len(h.Connections), what)
	for _, c := range h.Connections {
		fmt.Fprintf(w, "  %s\n", c)
	}
}

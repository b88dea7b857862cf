package livecheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Options are the live check's flags.
type Options struct {
	// Relay is the relay's public origin, as hosts reach it.
	Relay string
	// App is the app page to approve in ("" : the waiting page's link,
	// which points at the relay's APP_URL).
	App string
	// ClientIDURL is a client metadata document URL: the first connection
	// is then made by that client (CIMD) instead of a registered one.
	ClientIDURL string
	// Chromium is the browser's path or name on PATH ("": chromium).
	Chromium string
	// Timeout bounds each check (0: 30 s).
	Timeout time.Duration
	// Tool and Args pick the call (Tool "": the first read-only tool whose
	// schema requires nothing, one the relay's list says runs without
	// asking when there is one; Args nil: {}).
	Tool string
	Args json.RawMessage
	// Verbose prints detail lines (never a secret either).
	Verbose bool
	// HTTPClient's transport carries every request of the host's side
	// (nil: the default); cookies, redirects and time limits are the live
	// check's own.
	HTTPClient *http.Client
}

// DefaultTimeout bounds a check unless Options.Timeout says otherwise.
const DefaultTimeout = 30 * time.Second

// promptly is how soon a call with no tab must be answered: the relay
// waits a few seconds for a tab that just left (its tab grace, 5 s by
// default), never the call's whole wait (SPEC §3).
const promptly = 15 * time.Second

// idleSettle is how long the idle check waits between closing the page
// and its call.
const idleSettle = time.Second

// live is one run's state, filled in by the checks in order.
type live struct {
	opts  Options
	rep   *reporter
	web   *web
	relay string // the bare origin, as the resource must read

	meta     serverMeta
	first    client // the first connection's client
	flow     *flow
	code     string
	tok      tokens // the first connection's tokens, as issued
	rotated  tokens // their successors, after the rotation check
	tools    []tool
	callTool tool
	browser  *browser
	page     *page
	// what the cleanup revokes, should a check not get as far as to end it
	cleanup map[string]client // refresh token → its client
}

// Run runs every check in order, printing a line for each and a summary
// to out. It reports whether every check passed or was skipped.
func Run(ctx context.Context, opts Options, out io.Writer) bool {
	rep := &reporter{out: out, verbose: opts.Verbose}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Chromium == "" {
		opts.Chromium = "chromium"
	}
	relay, err := origin(opts.Relay)
	if err != nil {
		rep.emit(Result{Name: "reachability", Status: Fail, Why: "--relay " + err.Error()})
		line, _ := rep.summary()
		fmt.Fprintln(out, line)
		return false
	}
	l := &live{opts: opts, rep: rep, web: newWeb(opts.HTTPClient), relay: relay, cleanup: map[string]client{}}
	defer l.close()
	done := map[string]Status{}
	for _, c := range l.checks() {
		res := Result{Name: c.name}
		if missing := blocked(c.needs, done); ctx.Err() != nil {
			res.Status, res.Why = Skip, "the live check was interrupted"
		} else if missing != "" {
			res.Status, res.Why = Skip, "needs "+missing+", which did not pass"
		} else {
			cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
			why, err := c.run(cctx)
			cancel()
			var skip skipped
			switch {
			case errors.As(err, &skip):
				res.Status, res.Why = Skip, skip.why
			case err != nil:
				res.Status, res.Why = Fail, err.Error()
			default:
				res.Status, res.Why = Pass, why
			}
		}
		done[c.name] = res.Status
		rep.emit(res)
	}
	line, failed := rep.summary()
	fmt.Fprintln(out, line)
	return !failed
}

// check is one line of the live check.
type check struct {
	name  string
	needs []string // checks that must have passed
	run   func(context.Context) (string, error)
}

// skipped is a check that cannot run for a reason of its own.
type skipped struct{ why string }

func (s skipped) Error() string { return s.why }

func blocked(needs []string, done map[string]Status) string {
	for _, n := range needs {
		if done[n] != Pass {
			return n
		}
	}
	return ""
}

// origin checks that s is a bare origin and returns it without a slash.
func origin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	switch {
	case s == "":
		return "", errors.New("is required: the relay's public origin, e.g. https://relay.example.com")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "", fmt.Errorf("%q is not an http(s) origin", s)
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", fmt.Errorf("%q must be a bare origin (scheme, host, port), as hosts are given it", s)
	}
	return u.Scheme + "://" + u.Host, nil
}

// close ends what the run opened: the browser (its profile removed) and
// any token family a failed check left alive.
func (l *live) close() {
	l.page.close()
	l.browser.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for token, c := range l.cleanup {
		l.revoke(ctx, c, token)
	}
	if len(l.cleanup) > 0 {
		l.rep.debugf("cleanup: revoked %d token families a check left alive", len(l.cleanup))
	}
}

// mcp is an MCP client of token.
func (l *live) mcp(token string, modern bool) *mcpClient {
	return &mcpClient{web: l.web, endpoint: l.relay + "/", token: token, modern: modern}
}

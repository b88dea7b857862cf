package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tabrelay/tabrelay/livecheck"
)

const liveCheckUsage = `usage: tabrelay live-check --relay URL [--app URL] [flags]

An MCP host of a deployed relay, with a headless Chromium page of the app as
the person's tab: discovery, registration, PKCE, the approval in the page's
<tabrelay-connect>, tool calls, the view card, a call with no tab, refresh
token rotation and reuse detection, and Forget in the page's
<tabrelay-connections>. One line per check, PASS, FAIL or SKIP with why;
no token, code or secret is ever printed. It makes two connections in a
browser profile of its own and ends both.

Flags:
`

// liveCheck is `tabrelay live-check`: exit 0 when no check failed, 1 when
// one did, 2 on a usage mistake.
func liveCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tabrelay live-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, liveCheckUsage)
		fs.PrintDefaults()
	}
	relay := fs.String("relay", os.Getenv("RELAY_PUBLIC_URL"), "the relay's public origin, as hosts are given it (RELAY_PUBLIC_URL)")
	app := fs.String("app", "", "the app page to approve in (default: the waiting page's link, to the relay's APP_URL)")
	clientIDURL := fs.String("client-id-url", "", "a client metadata document URL (https): the first connection is made by that client")
	chromium := fs.String("chromium", "chromium", "the Chromium to run, a path or a name on PATH")
	timeout := fs.Duration("timeout", livecheck.DefaultTimeout, "the longest one check may take")
	toolName := fs.String("tool", "", "the tool to call (default: the first read-only tool whose schema requires nothing)")
	toolArgs := fs.String("args", "{}", "the call's arguments, a JSON object")
	verbose := fs.Bool("v", false, "print detail lines (they carry no secret either)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *relay == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "tabrelay live-check: --relay is required, and nothing else follows the flags")
		return 2
	}
	var obj map[string]any
	if json.Unmarshal([]byte(*toolArgs), &obj) != nil {
		fmt.Fprintln(stderr, "tabrelay live-check: --args must be a JSON object")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ok := livecheck.Run(ctx, livecheck.Options{Relay: *relay, App: *app, ClientIDURL: *clientIDURL, Chromium: *chromium,
		Timeout: *timeout, Tool: *toolName, Args: json.RawMessage(*toolArgs), Verbose: *verbose}, stdout)
	if !ok {
		return 1
	}
	return 0
}

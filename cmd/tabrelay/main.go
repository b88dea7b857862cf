// Command tabrelay is the relay between AI agent hosts and the browser
// tabs of a web application: `tabrelay serve` runs a node, `tabrelay tab`
// runs a headless tab (for demos, tests and load), `tabrelay live-check`
// checks a deployed relay end to end.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// version is set at build time (-ldflags "-X main.version=…").
var version = "dev"

const usage = `tabrelay: the relay between AI agent hosts and a web app's browser tabs

Usage:
  tabrelay serve [flags]    run a relay node (flags and environment: tabrelay serve -h)
  tabrelay tab [flags]      run a headless tab of the demo app (tabrelay tab -h)
  tabrelay tab connect-info|approve|decline [flags] CODE
                            see who waits behind a connect code, approve or decline
                            it as the person, from another tab of the same browser
                            (--secret-file)
  tabrelay tab connections|forget|set-scope [flags] [CONNECTION]
                            list the browser's connections, or forget one
  tabrelay scope show|set|only|clear|who [flags] …
                            read and write connections' scopes through a running
                            relay's admin API (tabrelay scope -h)
  tabrelay live-check --relay URL [--app URL] [flags]
                            check a deployed relay end to end as a host, with a
                            Chromium page of the app as the person's tab
                            (tabrelay live-check -h)
  tabrelay version          print the version
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "tab":
		return tab(args[1:], stdout, stderr)
	case "scope":
		return scopeCmd(args[1:], stdout, stderr)
	case "live-check":
		return liveCheck(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "tabrelay: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// quietLogger drops everything: for one-shot commands whose output is
// their answer.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newLogger returns the JSON logger every command writes to stderr.
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("RELAY_LOG_LEVEL %q must be debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tabrelay/tabrelay/headless"
	"github.com/tabrelay/tabrelay/protocol"
)

// scopeFlags collects repeated --scope TOOL[:ACTION,…] flags.
type scopeFlags []protocol.ScopeEntry

func (s *scopeFlags) String() string { return fmt.Sprint(*s) }

// Set reads TOOL (every action) or TOOL:ACTION,ACTION, in the scope's
// text form (protocol.ParseScopeWord): "TOOL:" with nothing after the
// colon is a mistake, never "every action".
func (s *scopeFlags) Set(v string) error {
	e, err := protocol.ParseScopeWord(v)
	if err != nil {
		return err
	}
	*s = append(*s, e)
	return nil
}

// tabAsk plays the person in the app's Connections panel, as one more tab
// of the browser whose secret file it is given: approve or decline a
// connect code, list the connections, forget one.
func tabAsk(verb string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tabrelay tab "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	relay := fs.String("relay", os.Getenv("RELAY_PUBLIC_URL"), "the relay's URL (RELAY_PUBLIC_URL)")
	secretFile := fs.String("secret-file", "", "the browser's existing secret file")
	origin := fs.String("origin", "", "the Origin to present (default: the relay's URL)")
	var scope scopeFlags
	bundleFile := new(string)
	if verb == "set-scope" {
		fs.Var(&scope, "scope", "TOOL or TOOL:ACTION,… the connection may use from now on (repeat); none: no access")
	}
	if verb == "approve" {
		fs.Var(&scope, "scope", "TOOL or TOOL:ACTION,… the connection may use (repeat); default every tool of the bundle")
		bundleFile = fs.String("bundle", "probe", "the relay's bundle, for the default scope: probe, demo, conformance or a bundle file")
	}
	pos, err := parseInterspersed(fs, args) // flags may follow the code, as people type them
	if err != nil {
		return 2
	}
	arg, ok := oneArg(pos, verb)
	if problem := askProblem(verb, ok, *relay, *secretFile); problem != "" {
		fmt.Fprintf(stderr, "tabrelay tab %s: %s\nusage: tabrelay tab %s --relay URL --secret-file FILE [--origin O] %s\n",
			verb, problem, verb, argName(verb))
		return 2
	}
	if _, err := os.Stat(*secretFile); err != nil {
		fmt.Fprintln(stderr, "tabrelay tab:", *secretFile, "is not a browser's secret file (start a tab with it first)")
		return 2
	}
	if *origin == "" {
		*origin = *relay
	}
	t, err := headless.New(headless.Options{Relay: *relay, SecretFile: *secretFile, Origin: *origin, Logger: quietLogger()})
	if err != nil {
		fmt.Fprintln(stderr, "tabrelay tab:", err)
		return 2
	}
	if verb == "approve" && len(scope) == 0 {
		b, err := bundle(*bundleFile)
		if err != nil {
			fmt.Fprintln(stderr, "tabrelay tab:", err)
			return 2
		}
		for _, tool := range b.Tools {
			scope = append(scope, protocol.ScopeEntry{Tool: tool.Name, Actions: []string{protocol.AllActions}})
		}
	}
	ref := "cli-" + fmt.Sprint(time.Now().UnixNano())
	msg := askMessage(verb, ref, arg, scope)
	reply, err := t.Ask(context.Background(), msg, ref)
	var rerr *protocol.RelayError
	switch {
	case errors.As(err, &rerr):
		fmt.Fprintf(stderr, "tabrelay tab %s: %s (%s)\n", verb, rerr.Message, rerr.Code)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "tabrelay tab %s: %v\n", verb, err)
		return 1
	}
	var pretty any
	_ = json.Unmarshal(reply, &pretty)
	out, _ := json.MarshalIndent(pretty, "", "  ")
	fmt.Fprintln(stdout, string(out))
	return 0
}

func oneArg(pos []string, verb string) (string, bool) {
	if verb == "connections" {
		return "", len(pos) == 0
	}
	if len(pos) != 1 {
		return "", false
	}
	return pos[0], true
}

// askProblem says what is wrong with a tab command's arguments ("": nothing).
func askProblem(verb string, argOK bool, relay, secretFile string) string {
	switch {
	case relay == "":
		return "no relay: pass --relay URL or set RELAY_PUBLIC_URL"
	case secretFile == "":
		return "no --secret-file: the tabs of one browser share one"
	case !argOK && verb == "connections":
		return "it takes no argument"
	case !argOK && (verb == "approve" || verb == "decline" || verb == "connect-info"):
		return "it takes exactly one connect code (as the host's page shows it, e.g. KQ7M-2XDP)"
	case !argOK:
		return "it takes exactly one connection id (tabrelay tab connections lists them)"
	}
	return ""
}

func argName(verb string) string {
	switch verb {
	case "approve":
		return "[--scope TOOL[:ACTION,…]]… CODE"
	case "decline", "connect-info":
		return "CODE"
	case "forget":
		return "CONNECTION"
	case "set-scope":
		return "[--scope TOOL[:ACTION,…]]… CONNECTION"
	}
	return ""
}

func askMessage(verb, ref, arg string, scope []protocol.ScopeEntry) any {
	env := protocol.Envelope{Ref: ref}
	switch verb {
	case "connect-info":
		env.Type = protocol.TypeConnectInfo
		return protocol.Approve{Envelope: env, Code: arg}
	case "approve":
		env.Type = protocol.TypeApprove
		return protocol.Approve{Envelope: env, Code: arg, Scope: scope}
	case "decline":
		env.Type = protocol.TypeDecline
		return protocol.Approve{Envelope: env, Code: arg}
	case "forget":
		env.Type = protocol.TypeForget
		return protocol.Forget{Envelope: env, Connection: arg}
	case "set-scope":
		env.Type = protocol.TypeSetScope
		if scope == nil {
			scope = []protocol.ScopeEntry{}
		}
		return protocol.SetScope{Envelope: env, Connection: arg, Scope: scope}
	}
	env.Type = protocol.TypeListConnections
	return env
}

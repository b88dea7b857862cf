package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tabrelay/tabrelay/headless"
	"github.com/tabrelay/tabrelay/protocol"
)

// tab runs a headless tab of the probe app (or of the conformance fixtures,
// --bundle conformance) until SIGTERM or SIGINT, or until the relay closes
// it with a stop code. SIGUSR1 reports focus, as a person clicking into the
// tab would; SIGUSR2 sends permissions-changed, as a tab whose allowed tools
// changed would.
func tab(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "connect-info", "approve", "decline", "connections", "forget", "set-scope":
			return tabAsk(args[0], args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("tabrelay tab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	relay := fs.String("relay", os.Getenv("RELAY_PUBLIC_URL"), "the relay's URL (RELAY_PUBLIC_URL)")
	secretFile := fs.String("secret-file", "", "the browser's secret, made on first use; tabs sharing it are tabs of one browser")
	origin := fs.String("origin", "", "the Origin to present: one of the relay's ALLOWED_ORIGINS")
	bundleFile := fs.String("bundle", "", `the bundle the tab runs: "probe" (the default: the probe app's tools), "conformance" (the MCP conformance fixtures) or a bundle file`)
	name := fs.String("name", "", "this tab's name, as whoami answers it")
	focus := fs.Bool("focus", false, "report focus on every connect")
	answerAfter := fs.Duration("answer-after", 2*time.Second, "how long the person takes to answer a question; negative: never")
	execLog := fs.String("exec-log", "", "append \"<call id> <tool>\" per call actually run (tests count them)")
	minBackoff := fs.Duration("backoff-min", headless.DefaultMinBackoff, "shortest reconnect wait")
	maxBackoff := fs.Duration("backoff-max", headless.DefaultMaxBackoff, "longest reconnect wait")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *relay == "" || *secretFile == "" || *origin == "" {
		fmt.Fprintln(stderr, "tabrelay tab: --relay, --secret-file and --origin are required")
		return 2
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "tabrelay tab:", err)
		return 2
	}
	bundle := protocol.ProbeBundle()
	switch *bundleFile {
	case "", "probe":
	case "demo":
		fmt.Fprintln(stderr, "tabrelay tab: the headless tab runs the probe app's tools, not the demo app's (a page in a browser, /demo/ of a relay with RELAY_DEMO): start the relay with RELAY_BUNDLE=probe")
		return 2
	default:
		if bundle = namedBundle(*bundleFile); bundle == nil {
			data, err := os.ReadFile(*bundleFile)
			if err == nil {
				bundle, err = protocol.LoadBundle(data)
			}
			if err != nil {
				fmt.Fprintln(stderr, "tabrelay tab:", err)
				return 2
			}
		}
	}
	t, err := headless.New(headless.Options{Relay: *relay, SecretFile: *secretFile, Origin: *origin, Bundle: bundle,
		Name: *name, Focus: *focus, AnswerAfter: *answerAfter, ExecLog: *execLog, Logger: logger,
		MinBackoff: *minBackoff, MaxBackoff: *maxBackoff})
	if err != nil {
		fmt.Fprintln(stderr, "tabrelay tab:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	userSignals := make(chan os.Signal, 1)
	signal.Notify(userSignals, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(userSignals)
	go func() {
		for sig := range userSignals {
			if sig == syscall.SIGUSR2 {
				t.PermissionsChanged()
			} else {
				t.Focus()
			}
		}
	}()
	err = t.Run(ctx)
	var stopErr *headless.StopError
	switch {
	case errors.As(err, &stopErr):
		fmt.Fprintln(stderr, "tabrelay tab:", err)
		return 1
	case err != nil && ctx.Err() == nil:
		fmt.Fprintln(stderr, "tabrelay tab:", err)
		return 1
	}
	return 0
}

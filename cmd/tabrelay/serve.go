package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/web/demo"
)

// serve runs one relay node until SIGTERM or SIGINT, then drains it.
// Once it listens it prints, in plain lines on stdout, where a person and
// a host reach it (the logs are JSON on stderr).
func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tabrelay serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	settings := newServeSettings(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := settings.config()
	if err != nil {
		fmt.Fprintln(stderr, "tabrelay serve:", err)
		return 2
	}
	logger, err := newLogger(stderr, settings.logLevel.get())
	if err != nil {
		fmt.Fprintln(stderr, "tabrelay serve:", err)
		return 2
	}
	cfg.Logger, cfg.Version = logger, version
	n, err := node.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "tabrelay serve:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := n.Start(); err != nil {
		fmt.Fprintln(stderr, "tabrelay serve:", err)
		n.Shutdown(context.Background())
		return 1
	}
	printWhereToGo(stdout, cfg)
	<-ctx.Done()
	stop()
	n.Shutdown(context.Background())
	return 0
}

// printWhereToGo says where a person opens the demo app (when it is
// served) and what URL to give an MCP host: the bare origin, where the
// MCP endpoint is.
func printWhereToGo(w io.Writer, cfg node.Config) {
	fmt.Fprintln(w, "tabrelay is listening.")
	if cfg.Demo {
		fmt.Fprintln(w, "  Open the demo app in a browser: ", cfg.PublicURL+demo.Path)
	}
	fmt.Fprintln(w, "  Give an MCP host this server URL:", cfg.PublicURL+"/")
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/tabrelay/tabrelay/node"
)

// serve runs one relay node until SIGTERM or SIGINT, then drains it.
func serve(args []string, stderr io.Writer) int {
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
	<-ctx.Done()
	stop()
	n.Shutdown(context.Background())
	return 0
}

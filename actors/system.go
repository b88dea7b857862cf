package actors

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// NewSystem returns an actor system whose own log lines go to logger,
// demoted one level: protoactor logs routine events (a system started, a
// message to a stopped actor) at INFO, which are DEBUG to an operator
// (reference/protoactor.md).
func NewSystem(logger *slog.Logger) *actor.ActorSystem {
	if logger == nil {
		logger = slog.Default()
	}
	lib := slog.New(demoted{logger.Handler()}).With("lib", "protoactor")
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return lib }))
}

// demoted lowers every record by one level (INFO → DEBUG, WARN → INFO…).
type demoted struct{ slog.Handler }

func (d demoted) Enabled(ctx context.Context, l slog.Level) bool {
	return d.Handler.Enabled(ctx, l-4)
}

// Handle logs r one level lower and without its "message" attribute:
// protoactor puts a whole message there (a dead letter's), and a message
// may hold a tool's arguments or result, which never go into a log.
func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level-4, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "message" {
			out.AddAttrs(a)
		}
		return true
	})
	return d.Handler.Handle(ctx, out)
}

func (d demoted) WithAttrs(as []slog.Attr) slog.Handler { return demoted{d.Handler.WithAttrs(as)} }
func (d demoted) WithGroup(name string) slog.Handler    { return demoted{d.Handler.WithGroup(name)} }

// namedProcess returns the process of system registered under name (the
// switchboard, the confirms: one per node, under a fixed name every node
// knows), made and registered on first use; of two first uses at once,
// the one registered first is the one both get.
func namedProcess[T actor.Process](system *actor.ActorSystem, name string, build func() T) T {
	if p, ok := system.ProcessRegistry.GetLocal(name); ok {
		if t, ok := p.(T); ok {
			return t
		}
	}
	t := build()
	if _, added := system.ProcessRegistry.Add(t, name); !added {
		if p, ok := system.ProcessRegistry.GetLocal(name); ok {
			if other, ok := p.(T); ok {
				return other
			}
		}
	}
	return t
}

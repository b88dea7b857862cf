package actors

import (
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/protocol"
)

// A host's tools/list asks the browser's tab what the person's settings
// make of the tools (SPEC §4). Those questions are the relay's, not the
// tab's: a flood of lists must cost the tab neither its rate limit (the
// socket pays its answers with the questions it sent, tabsocket) nor one
// question per list (issue 23 §2: 2,000 lists in 1.5 s from one token
// sent the tab 2,000 questions and had it closed too_fast). So a pairing
// asks one question at a time per connection and tool set (identical
// ones wait for its answer), keeps that answer for answerLife, forgets it
// at once when a tab says the settings changed, and has at most
// maxQueries different questions out at once.

// pendingQuery is a permissions question on its way to a tab, and who
// waits for its answer.
type pendingQuery struct {
	key    string // the connection and tools asked about ("" for one adopted from a move)
	askers []*actor.PID
	at     time.Time
}

// answered is a tab's answer, kept for identical questions.
type answered struct {
	tools map[string]string
	at    time.Time
}

const (
	// queryLife bounds how long a permissions question is remembered;
	// its askers have given up long before.
	queryLife = 30 * time.Second
	// answerLife is how long an answer serves identical questions (a
	// settings change in a tab ends it sooner).
	answerLife = 5 * time.Second
	// maxQueries bounds the different questions out to a tab at once;
	// one more is answered at once as unanswered (the host's list says
	// the settings are not known).
	maxQueries = 32
	// maxAnswers bounds the answers kept: past it they are all dropped.
	maxAnswers = 256
)

func queryKey(m *wire.PermissionsRequest) string {
	return m.GetConnection().GetId() + "\x00" + strings.Join(m.GetTools(), "\x00")
}

// onPermissionsRequest answers from a kept answer, joins an identical
// question out already, or asks the tab focused last (SPEC §4). No tab:
// answered at once, unanswered.
func (p *pairing) onPermissionsRequest(ctx actor.Context, m *wire.PermissionsRequest) {
	asker := ctx.Sender()
	if len(p.tabs) == 0 || asker == nil {
		ctx.Respond(&wire.PermissionsAnswer{})
		return
	}
	now := p.cfg.Clock.Now()
	p.dropStaleQueries(now)
	key := queryKey(m)
	if a, ok := p.answers[key]; ok && now.Sub(a.at) < answerLife {
		ctx.Respond(&wire.PermissionsAnswer{Answered: true, Tools: a.tools})
		return
	}
	for _, q := range p.queries {
		if q.key == key {
			q.askers = append(q.askers, asker)
			return
		}
	}
	if len(p.queries) >= maxQueries {
		ctx.Respond(&wire.PermissionsAnswer{})
		return
	}
	id := NewID("perm-")
	p.queries[id] = &pendingQuery{key: key, askers: []*actor.PID{asker}, at: now}
	sendTab(ctx, p.tabs[0].pid, protocol.PermissionsQuery{Envelope: protocol.Typed(protocol.TypePermissionsQuery),
		ID: id, Connection: fromWireConnection(m.GetConnection()), Tools: m.GetTools()})
}

// onPermissions hands a tab's answer to everyone waiting for it, and
// keeps it for the identical questions to come.
func (p *pairing) onPermissions(ctx actor.Context, m *wire.TabPermissions) {
	q, ok := p.queries[m.GetId()]
	if !ok {
		return
	}
	delete(p.queries, m.GetId())
	if q.key != "" {
		if len(p.answers) >= maxAnswers {
			clear(p.answers)
		}
		p.answers[q.key] = answered{tools: m.GetTools(), at: p.cfg.Clock.Now()}
	}
	for _, a := range q.askers {
		ctx.Send(a, &wire.PermissionsAnswer{Answered: true, Tools: m.GetTools()})
	}
}

// settingsChanged forgets the answers kept: a tab said the person's
// settings changed (permissions-changed).
func (p *pairing) settingsChanged() { clear(p.answers) }

func (p *pairing) dropStaleQueries(now time.Time) {
	for id, q := range p.queries {
		if now.Sub(q.at) > queryLife {
			delete(p.queries, id)
		}
	}
	for k, a := range p.answers {
		if now.Sub(a.at) >= answerLife {
			delete(p.answers, k)
		}
	}
}

package livecheck

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// connectionsState is what the Connections panel lists.
type connectionsState struct {
	Present bool     `json:"present"`
	Names   []string `json:"names"`
	Error   string   `json:"error"`
}

const connectionsStateJS = `(() => {
  const el = document.querySelector("tabrelay-connections");
  if (!el) return { present: false, names: [] };
  const err = el.querySelector("[data-part=error]");
  return { present: true, error: err ? err.textContent.trim() : "",
    names: [...el.querySelectorAll("li[data-connection] [data-part=client]")].map((n) => n.textContent.trim()) };
})()`

// rowJS finds the panel's row of the connection named name and presses
// its button part, saying "pressed" or what is missing.
func rowJS(name, part string) string {
	return `((name, part) => {
  const li = [...document.querySelectorAll("tabrelay-connections li[data-connection]")]
    .find((li) => { const c = li.querySelector("[data-part=client]"); return c && c.textContent.trim() === name; });
  if (!li) return "no row";
  const b = li.querySelector("button[data-part=" + part + "]");
  if (!b) return "no button";
  b.click();
  return "pressed";
})(` + js(name) + `, ` + js(part) + `)`
}

// forget: a second connection, approved the same way, is forgotten in the
// page's Connections panel, and its token stops working at once.
func (l *live) forget(ctx context.Context) (string, error) {
	c, err := l.register(ctx, "tabrelay live-check (forget)")
	if err != nil {
		return "", err
	}
	f, err := l.authorize(ctx, c)
	if err != nil {
		return "", err
	}
	l.page.close() // a page of its own, opened at this request's link
	p, st, err := l.openAndAsk(ctx, f)
	l.page = p
	if err != nil {
		return "", err
	}
	if !st.Panels {
		_, _ = eval[bool](ctx, p, `(document.querySelector("tabrelay-connect [data-part=decline]").click(), true)`)
		return "", skipped{"the app page has no <tabrelay-connections> panel, where the person forgets a connection (the second connection was declined)"}
	}
	if _, err := l.approveAsked(ctx, p, st); err != nil {
		return "", fmt.Errorf("the second connection: %w", err)
	}
	code, err := l.awaitCode(ctx, f)
	if err != nil {
		return "", fmt.Errorf("the second connection: %w", err)
	}
	rep, err := l.exchange(ctx, f, code, f.verifier)
	if err != nil {
		return "", err
	}
	t, err := rep.issued("the second connection's code exchange")
	if err != nil {
		return "", err
	}
	l.cleanup[t.refresh] = c
	if _, err := l.list(ctx, l.mcp(t.access, false)); err != nil {
		return "", fmt.Errorf("the second connection's token, before the forget: %w", err)
	}
	if err := l.forgetRow(ctx, p, c.name); err != nil {
		return "", err
	}
	a, err := l.mcp(t.access, false).call(ctx, "tools/list", nil)
	if err != nil {
		return "", err
	}
	if a.status != http.StatusUnauthorized {
		return "", fmt.Errorf("after Forget in the Connections panel, the connection's access token still gets %d, want 401", a.status)
	}
	delete(l.cleanup, t.refresh)
	also := ""
	if now, err := eval[connectionsState](ctx, p, connectionsStateJS); err == nil && containsName(now.Names, l.first.name) &&
		l.forgetRow(ctx, p, l.first.name) == nil {
		also = " (the first connection forgotten there too)"
	}
	return "a second connection, approved the same way, then forgotten in the page's Connections panel: its access token now gets 401" + also, nil
}

// forgetRow forgets the connection named name in the Connections panel:
// Forget, then the confirming Forget, then its row is gone.
func (l *live) forgetRow(ctx context.Context, p *page, name string) error {
	st, err := poll(ctx, p, connectionsStateJS, func(s connectionsState) bool { return containsName(s.Names, name) })
	if err != nil {
		return fmt.Errorf("the Connections panel does not list %q (it lists %q)", name, strings.Join(st.Names, ", "))
	}
	for _, part := range []string{"forget", "confirm-forget"} {
		got, err := poll(ctx, p, rowJS(name, part), func(s string) bool { return s == "pressed" })
		if err != nil {
			return fmt.Errorf("the Connections panel's row of %q: %s %s", name, got, part)
		}
	}
	st, err = poll(ctx, p, connectionsStateJS, func(s connectionsState) bool { return s.Error != "" || !containsName(s.Names, name) })
	switch {
	case err == nil && st.Error != "":
		return fmt.Errorf("Forget in the Connections panel was answered %q", clip(st.Error, 160))
	case err != nil:
		return errors.New("after Forget, the Connections panel still lists the connection")
	}
	return nil
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

package deploy

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestDashboard: the dashboard's shape (uid, data source variable, unique
// panel ids, panels that do not overlap), every panel querying, and every
// metric of the relay's own that a running relay serves (tabrelay_…) shown
// on some panel.
func TestDashboard(t *testing.T) {
	var dash struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []map[string]any `json:"panels"`
	}
	const file = "grafana/tabrelay-dashboard.json"
	if err := json.Unmarshal([]byte(readFile(t, file)), &dash); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Errorf("%s: uid %q, title %q: both are needed", file, dash.UID, dash.Title)
	}
	if dash.SchemaVersion < 36 {
		t.Errorf("%s: schemaVersion %d, want 36 or later", file, dash.SchemaVersion)
	}
	hasDS := false
	for _, v := range dash.Templating.List {
		if v.Name == "DS_PROMETHEUS" && v.Type == "datasource" && v.Query == "prometheus" {
			hasDS = true
		}
	}
	if !hasDS {
		t.Errorf("%s: no datasource variable DS_PROMETHEUS of type prometheus", file)
	}
	c := &panelCheck{t: t, file: file, ids: map[float64]string{}}
	c.walk(dash.Panels)
	if len(c.queries) == 0 {
		t.Errorf("%s: no queries", file)
	}
	t.Run("every metric shown", func(t *testing.T) { checkEveryMetricShown(t, file, c.queries) })
	t.Run("queries parse", func(t *testing.T) { checkQueriesParse(t, c.queries, c.queried) })
}

// panelCheck checks a dashboard's panels, rows' panels included.
type panelCheck struct {
	t       *testing.T
	file    string
	ids     map[float64]string // panel id → title
	placed  []any              // the gridPos of the panels seen
	titles  []string           // and their titles
	queries []string           // every target's expr
	queried []string           // and its panel's title
}

func (c *panelCheck) walk(panels []map[string]any) {
	t, file := c.t, c.file
	for _, p := range panels {
		title, _ := p["title"].(string)
		id, _ := p["id"].(float64)
		if other, dup := c.ids[id]; dup || id == 0 {
			t.Errorf("%s: panel %q: id %v missing or also used by %q", file, title, id, other)
		}
		c.ids[id] = title
		if get(p, "gridPos", "w") == nil || get(p, "gridPos", "h") == nil {
			t.Errorf("%s: panel %q has no gridPos", file, title)
		}
		for i, other := range c.placed {
			if overlap(other, p["gridPos"]) {
				t.Errorf("%s: panel %q overlaps panel %q", file, title, c.titles[i])
			}
		}
		c.placed, c.titles = append(c.placed, p["gridPos"]), append(c.titles, title)
		if p["type"] == "row" {
			var inner []map[string]any
			for _, q := range list(p["panels"]) {
				if m, ok := q.(map[string]any); ok {
					inner = append(inner, m)
				}
			}
			c.walk(inner)
			continue
		}
		if uid := str(get(p, "datasource", "uid")); uid != "${DS_PROMETHEUS}" {
			t.Errorf("%s: panel %q: datasource uid %q, want ${DS_PROMETHEUS}", file, title, uid)
		}
		targets := list(p["targets"])
		if len(targets) == 0 {
			t.Errorf("%s: panel %q has no query", file, title)
		}
		for _, q := range targets {
			if str(get(q, "expr")) == "" {
				t.Errorf("%s: panel %q: a target without expr", file, title)
			}
			if uid := str(get(q, "datasource", "uid")); uid != "" && uid != "${DS_PROMETHEUS}" {
				t.Errorf("%s: panel %q: target datasource uid %q, want ${DS_PROMETHEUS}", file, title, uid)
			}
			c.queries, c.queried = append(c.queries, str(get(q, "expr"))), append(c.queried, title)
		}
	}
}

// checkEveryMetricShown: each of the relay's own metrics (tabrelay_…) that
// a running relay serves is read by one of the dashboard's queries.
func checkEveryMetricShown(t *testing.T, file string, queries []string) {
	served := servedMetrics(t)
	shown := map[string]bool{}
	for _, name := range usedMetric.FindAllString(strings.Join(queries, "\n"), -1) {
		if base, ok := family(served, name); ok {
			shown[base] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(served)) {
		if strings.HasPrefix(name, "tabrelay_") && !shown[name] {
			t.Errorf("%s: no panel shows %s", file, name)
		}
	}
}

// overlap reports whether two gridPos rectangles share a cell.
func overlap(a, b any) bool {
	n := func(p any, k string) float64 { f, _ := get(p, k).(float64); return f }
	return n(a, "x") < n(b, "x")+n(b, "w") && n(b, "x") < n(a, "x")+n(a, "w") &&
		n(a, "y") < n(b, "y")+n(b, "h") && n(b, "y") < n(a, "y")+n(a, "h")
}

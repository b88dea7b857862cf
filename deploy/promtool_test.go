package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	yaml "go.yaml.in/yaml/v2"
)

// promtool runs Prometheus's promtool (Debian's prometheus package, which
// scripts/ensure-deps.sh installs) with args, failing t with its output.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is missing: run scripts/ensure-deps.sh (it installs Debian's prometheus package)")
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %v: %v\n%s", args, err, out)
	}
}

// TestPromtool: the rule file is valid for Prometheus (promtool check
// rules: PromQL, durations, templates), and every alert fires and stays
// quiet where its unit tests say, with its labels and annotations as
// rendered (promtool test rules).
func TestPromtool(t *testing.T) {
	promtool(t, "check", "rules", "prometheus/alerts.yaml")
	promtool(t, "test", "rules", "prometheus/alerts_test.yaml")
}

// TestEveryAlertUnitTested: alerts_test.yaml tests alerts.yaml, and each
// alert there has a case that fires and one where it does not.
func TestEveryAlertUnitTested(t *testing.T) {
	docs := yamlFiles(t)
	rules, tests := docs["prometheus/alerts.yaml"], docs["prometheus/alerts_test.yaml"]
	if len(rules) != 1 || len(tests) != 1 {
		t.Fatalf("alerts.yaml has %d documents, alerts_test.yaml %d: want 1 each", len(rules), len(tests))
	}
	if !slices.Contains(list(get(tests[0], "rule_files")), any("alerts.yaml")) {
		t.Errorf("alerts_test.yaml's rule_files do not name alerts.yaml")
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, g := range list(get(tests[0], "tests")) {
		for _, c := range list(get(g, "alert_rule_test")) {
			name := str(get(c, "alertname"))
			if len(list(get(c, "exp_alerts"))) > 0 {
				fires[name] = true
			} else {
				quiet[name] = true
			}
		}
	}
	alerts := map[string]bool{}
	for _, g := range list(get(rules[0], "groups")) {
		for _, r := range list(get(g, "rules")) {
			name := str(get(r, "alert"))
			if name == "" {
				continue
			}
			alerts[name] = true
			if !fires[name] {
				t.Errorf("alerts_test.yaml has no case where %s fires", name)
			}
			if !quiet[name] {
				t.Errorf("alerts_test.yaml has no case where %s does not fire", name)
			}
		}
	}
	for name := range fires {
		if !alerts[name] {
			t.Errorf("alerts_test.yaml tests %s, which alerts.yaml does not have", name)
		}
	}
	for name := range quiet {
		if !alerts[name] {
			t.Errorf("alerts_test.yaml tests %s, which alerts.yaml does not have", name)
		}
	}
}

// grafanaVariable is a dashboard variable in a query: the range ones
// become a duration, the others (in a matcher's value) a regexp.
var grafanaVariable = regexp.MustCompile(`\$(__rate_interval|__interval|__range|[A-Za-z_]\w*)`)

var notMetricName = regexp.MustCompile(`[^a-zA-Z0-9_]+`)

// checkQueriesParse: every dashboard query, its Grafana variables
// replaced, is PromQL that Prometheus accepts: promtool checks them as
// the expressions of recording rules named after their panels.
func checkQueriesParse(t *testing.T, queries, panels []string) {
	var rules []map[string]string
	for i, q := range queries {
		expr := grafanaVariable.ReplaceAllStringFunc(q, func(v string) string {
			if v == "$__rate_interval" || v == "$__interval" || v == "$__range" {
				return "5m"
			}
			return ".*"
		})
		name := fmt.Sprintf("dashboard:%s:query_%d", notMetricName.ReplaceAllString(panels[i], "_"), i)
		rules = append(rules, map[string]string{"record": name, "expr": expr})
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", file)
}

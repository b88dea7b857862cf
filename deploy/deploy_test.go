package deploy

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests run in deploy/; the relay's source is the rest of the module.
const repoRoot = ".."

// ---------------------------------------------------------------- files

// yamlFiles returns every YAML file under deploy/, parsed.
func yamlFiles(t *testing.T) map[string][]any {
	t.Helper()
	out := map[string][]any{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		docs, err := parseYAML(path, src)
		if err != nil {
			t.Errorf("%v", err)
			return nil
		}
		if len(docs) == 0 {
			t.Errorf("%s: no YAML document", path)
		}
		out[filepath.ToSlash(path)] = docs
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// get walks v by map keys (string) and list indexes (int); nil if absent.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// ------------------------------------------------------- the relay's source

// relayStrings are the string literals of the module's non-test .go
// files outside deploy/: the environment variables the relay reads among
// them.
func relayStrings(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != repoRoot && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				slices.Contains([]string{"deploy", "bin", "data", "node_modules", "testdata", "vendor"}, name)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("reading the relay's source: %v", err)
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					out[s] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// -------------------------------------------------------------- alerts

// TestAlertRules: each alert has a severity, a summary and a runbook_url
// naming a section of RUNBOOK.md. promtool_test.go checks the rules'
// PromQL and runs their unit tests; the metric names they read are
// checked against the relay's in TestMetricNamesAreRegistered.
func TestAlertRules(t *testing.T) {
	const file = "prometheus/alerts.yaml"
	docs := yamlFiles(t)[file]
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1", file, len(docs))
	}
	anchors := runbookAnchors(t)
	groups := list(get(docs[0], "groups"))
	if len(groups) == 0 {
		t.Fatalf("%s: no groups", file)
	}
	seen := map[string]bool{}
	for _, g := range groups {
		if str(get(g, "name")) == "" {
			t.Errorf("%s: a group without a name", file)
		}
		rules := list(get(g, "rules"))
		if len(rules) == 0 {
			t.Errorf("%s: group %q has no rules", file, get(g, "name"))
		}
		for _, r := range rules {
			name := str(get(r, "alert"))
			if name == "" {
				if str(get(r, "record")) == "" {
					t.Errorf("%s: a rule that is neither an alert nor a recording rule", file)
				}
				continue
			}
			if seen[name] {
				t.Errorf("%s: alert %s twice", file, name)
			}
			seen[name] = true
			if str(get(r, "labels", "severity")) == "" {
				t.Errorf("%s: %s has no severity label", file, name)
			}
			if str(get(r, "annotations", "summary")) == "" {
				t.Errorf("%s: %s has no summary", file, name)
			}
			raw := str(get(r, "annotations", "runbook_url"))
			u, err := url.Parse(raw)
			switch {
			case raw == "" || err != nil:
				t.Errorf("%s: %s: runbook_url %q", file, name, raw)
			case !strings.HasSuffix(u.Path, "deploy/RUNBOOK.md"):
				t.Errorf("%s: %s: runbook_url %q does not point at deploy/RUNBOOK.md", file, name, raw)
			case !anchors[u.Fragment]:
				t.Errorf("%s: %s: runbook_url anchor #%s is no heading of RUNBOOK.md", file, name, u.Fragment)
			}
		}
	}
}

var (
	mdHeading = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	mdLink    = regexp.MustCompile(`\]\(#([^)]+)\)`)
)

// runbookAnchors returns RUNBOOK.md's heading anchors, as GitHub makes them.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	anchors := map[string]bool{}
	counts := map[string]int{}
	fenced := false
	for _, line := range strings.Split(readFile(t, "RUNBOOK.md"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := mdHeading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		slug := githubSlug(m[1])
		if n := counts[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		counts[slug]++
	}
	return anchors
}

func githubSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestRunbookLinks(t *testing.T) {
	anchors := runbookAnchors(t)
	for _, m := range mdLink.FindAllStringSubmatch(readFile(t, "RUNBOOK.md"), -1) {
		if !anchors[m[1]] {
			t.Errorf("RUNBOOK.md links to #%s, which is no heading", m[1])
		}
	}
	for _, want := range []string{"deploying", "redis", "a-node-keeps-restarting", "signing-key-rotation"} {
		if !anchors[want] {
			t.Errorf("RUNBOOK.md has no section #%s", want)
		}
	}
}

// --------------------------------------------------------- kubernetes

type k8sObject struct {
	file string
	doc  map[string]any
}

func (o k8sObject) kind() string { return str(o.doc["kind"]) }
func (o k8sObject) name() string { return str(get(o.doc, "metadata", "name")) }

func k8sObjects(t *testing.T) []k8sObject {
	t.Helper()
	var objs []k8sObject
	for file, docs := range yamlFiles(t) {
		// The base: kubernetes/sentinel/ is a variant of it (sentinel_test.go).
		if !strings.HasPrefix(file, "kubernetes/") || strings.Count(file, "/") > 1 || file == "kubernetes/kustomization.yaml" {
			continue
		}
		for _, d := range docs {
			m, ok := d.(map[string]any)
			if !ok {
				t.Errorf("%s: a document that is not a mapping", file)
				continue
			}
			objs = append(objs, k8sObject{file, m})
		}
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].file+objs[i].name() < objs[j].file+objs[j].name() })
	return objs
}

func find(t *testing.T, objs []k8sObject, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o.kind() == kind && o.name() == name {
			return o.doc
		}
	}
	t.Fatalf("deploy/kubernetes has no %s %s", kind, name)
	return nil
}

// selects reports whether a matchLabels selector matches labels.
func selects(sel, labels any) bool {
	m, ok := sel.(map[string]any)
	if !ok || len(m) == 0 {
		return false
	}
	for k, v := range m {
		if get(labels, k) != v {
			return false
		}
	}
	return true
}

func TestKubernetesManifests(t *testing.T) {
	objs := k8sObjects(t)
	var podLabels []any // of every pod template
	for _, o := range objs {
		if o.kind() == "" || str(o.doc["apiVersion"]) == "" || o.name() == "" {
			t.Errorf("%s: an object without apiVersion, kind or metadata.name", o.file)
		}
		if get(o.doc, "metadata", "namespace") != nil {
			t.Errorf("%s: %s %s names a namespace; the manifests are namespace-less", o.file, o.kind(), o.name())
		}
		for _, path := range [][]any{{"metadata"}, {"spec", "template", "metadata"}} {
			for _, field := range []string{"labels", "annotations"} {
				m, _ := get(o.doc, append(path, field)...).(map[string]any)
				for k, v := range m {
					if _, ok := v.(string); !ok {
						t.Errorf("%s: %s %s: %s %s is %T %v: quote it", o.file, o.kind(), o.name(), field, k, v, v)
					}
				}
			}
		}
		if tpl := get(o.doc, "spec", "template", "metadata", "labels"); tpl != nil {
			podLabels = append(podLabels, tpl)
			if !selects(get(o.doc, "spec", "selector", "matchLabels"), tpl) {
				t.Errorf("%s: %s %s: its selector does not match its pod template", o.file, o.kind(), o.name())
			}
		}
	}
	// Every Service, PodDisruptionBudget and NetworkPolicy selects some pods.
	for _, o := range objs {
		var sel any
		switch o.kind() {
		case "Service":
			sel = get(o.doc, "spec", "selector")
		case "PodDisruptionBudget":
			sel = get(o.doc, "spec", "selector", "matchLabels")
		case "NetworkPolicy":
			sel = get(o.doc, "spec", "podSelector", "matchLabels")
		default:
			continue
		}
		if !slices.ContainsFunc(podLabels, func(l any) bool { return selects(sel, l) }) {
			t.Errorf("%s: %s %s selects no pod of these manifests", o.file, o.kind(), o.name())
		}
	}

	t.Run("kustomization", func(t *testing.T) {
		docs := yamlFiles(t)["kubernetes/kustomization.yaml"]
		if len(docs) != 1 {
			t.Fatalf("kubernetes/kustomization.yaml: %d documents", len(docs))
		}
		var listed []string
		for _, r := range list(get(docs[0], "resources")) {
			listed = append(listed, "kubernetes/"+str(r))
			if _, err := os.Stat(filepath.Join("kubernetes", str(r))); err != nil {
				t.Errorf("kustomization.yaml lists %v: %v", r, err)
			}
		}
		for _, o := range objs {
			if !slices.Contains(listed, o.file) {
				t.Errorf("kustomization.yaml does not list %s", o.file)
			}
		}
	})

	t.Run("relay", func(t *testing.T) { checkRelay(t, objs) })
	t.Run("redis", func(t *testing.T) { checkRedis(t, objs) })
	t.Run("networkpolicy", func(t *testing.T) { checkNetworkPolicy(t, objs) })
	t.Run("secret", func(t *testing.T) {
		s := find(t, objs, "Secret", "tabrelay")
		if s["data"] != nil {
			t.Errorf("the example Secret has data:; keep placeholders in stringData only")
		}
		for k, v := range get(s, "stringData").(map[string]any) {
			if !strings.Contains(str(v), "REPLACE") {
				t.Errorf("the example Secret's %s is %q, not a REPLACE… placeholder: never commit a real secret", k, v)
			}
		}
	})
}

// containerPorts maps a container's port names to numbers.
func containerPorts(c any) map[string]int {
	out := map[string]int{}
	for _, p := range list(get(c, "ports")) {
		n, _ := get(p, "containerPort").(int)
		out[str(get(p, "name"))] = n
	}
	return out
}

// portNumber resolves a port given by number or by name.
func portNumber(p any, ports map[string]int) int {
	if n, ok := p.(int); ok {
		return n
	}
	return ports[str(p)]
}

func checkRelay(t *testing.T, objs []k8sObject) {
	relayReads := relayStrings(t)
	d := find(t, objs, "Deployment", "tabrelay")
	if r := get(d, "spec", "replicas"); r != 3 {
		t.Errorf("Deployment tabrelay: replicas %v, want 3", r)
	}
	pod := get(d, "spec", "template", "spec")
	c := get(pod, "containers", 0)
	ports := containerPorts(c)
	for name, want := range map[string]int{"http": 8080, "admin": 9090, "cluster": 7946} {
		if ports[name] != want {
			t.Errorf("container port %s is %d, want %d", name, ports[name], want)
		}
	}

	// The image exposes what the pod declares, and runs `tabrelay serve`.
	docker := readFile(t, "Dockerfile")
	for _, n := range ports {
		if !regexp.MustCompile(`(?m)^EXPOSE\b.*\b` + strconv.Itoa(n) + `\b`).MatchString(docker) {
			t.Errorf("Dockerfile does not EXPOSE %d", n)
		}
	}
	if !strings.Contains(docker, `ENTRYPOINT ["/tabrelay", "serve"]`) {
		t.Errorf(`Dockerfile: no ENTRYPOINT ["/tabrelay", "serve"]`)
	}
	if args := get(c, "args"); args != nil {
		t.Errorf("the container overrides the image's arguments (%v); configure it through the environment", args)
	}

	// Environment: every variable is one the relay reads (a string literal
	// of its source), each defined once, values are strings, and the
	// downward-API variables come before the ones that expand them.
	env := map[string]any{}
	var order []string
	for _, e := range list(get(c, "env")) {
		name := str(get(e, "name"))
		if _, dup := env[name]; dup {
			t.Errorf("env %s twice", name)
		}
		order = append(order, name)
		if v, ok := get(e, "value").(string); ok {
			env[name] = v
		} else if get(e, "value") != nil {
			t.Errorf("env %s: value %v is %T; Kubernetes wants a string: quote it", name, get(e, "value"), get(e, "value"))
		} else {
			env[name] = get(e, "valueFrom")
		}
		if get(e, "valueFrom", "fieldRef") == nil && !relayReads[name] {
			t.Errorf("env %s: the relay reads no such variable (no string literal %q in its source)", name, name)
		}
		if v, ok := env[name].(string); ok {
			for _, ref := range regexp.MustCompile(`\$\(([A-Z0-9_]+)\)`).FindAllStringSubmatch(v, -1) {
				if !slices.Contains(order[:len(order)-1], ref[1]) {
					t.Errorf("env %s uses $(%s), which is not defined before it", name, ref[1])
				}
			}
		}
	}
	want := map[string]string{
		"RELAY_LISTEN":            ":8080",
		"RELAY_ADMIN_LISTEN":      "0.0.0.0:9090",
		"RELAY_CLUSTER_LISTEN":    "0.0.0.0:7946",
		"RELAY_CLUSTER_ADVERTISE": "$(POD_IP):7946",
		"REDIS_URL":               "redis://tabrelay-redis:6379/0",
		"RELAY_DATA_DIR":          "/data",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s = %v, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"RELAY_PUBLIC_URL", "ALLOWED_ORIGINS", "APP_URL"} {
		if s, _ := env[k].(string); s == "" {
			t.Errorf("env %s is not set", k)
		}
	}
	if get(env["POD_IP"], "fieldRef", "fieldPath") != "status.podIP" {
		t.Errorf("env POD_IP does not come from the downward API (status.podIP)")
	}
	secret := find(t, objs, "Secret", "tabrelay")
	for _, k := range []string{"RELAY_SIGNING_KEY", "RELAY_ADMIN_TOKEN"} {
		ref := get(env[k], "secretKeyRef")
		if str(get(ref, "name")) != "tabrelay" {
			t.Errorf("env %s does not come from the Secret tabrelay", k)
			continue
		}
		if get(secret, "stringData", str(get(ref, "key"))) == nil {
			t.Errorf("env %s: the example Secret has no key %v", k, get(ref, "key"))
		}
	}

	// Probes, drain timing.
	for probe, path := range map[string]string{"readinessProbe": "/ready", "livenessProbe": "/health"} {
		h := get(c, probe, "httpGet")
		if str(get(h, "path")) != path || portNumber(get(h, "port"), ports) != 8080 {
			t.Errorf("%s: GET %v on port %v, want GET %s on 8080", probe, get(h, "path"), get(h, "port"), path)
		}
	}
	preStop, _ := get(c, "lifecycle", "preStop", "sleep", "seconds").(int)
	if preStop <= 0 {
		t.Errorf("no preStop sleep handler")
	}
	grace, err := time.ParseDuration(str(env["RELAY_GRACE"]))
	if err != nil {
		t.Errorf("env RELAY_GRACE: %v", err)
	}
	if window, err := time.ParseDuration(str(env["RELAY_DRAIN_WINDOW"])); err != nil || window >= grace {
		t.Errorf("env RELAY_DRAIN_WINDOW %v must be a duration below RELAY_GRACE %v", env["RELAY_DRAIN_WINDOW"], grace)
	}
	term, _ := get(pod, "terminationGracePeriodSeconds").(int)
	if time.Duration(term)*time.Second <= grace+time.Duration(preStop)*time.Second {
		t.Errorf("terminationGracePeriodSeconds %d is not above RELAY_GRACE %v + preStop %ds", term, grace, preStop)
	}

	// Non-root, read-only root, the data directory on a volume.
	if get(pod, "securityContext", "runAsNonRoot") != true && get(c, "securityContext", "runAsNonRoot") != true {
		t.Errorf("the pod may run as root (runAsNonRoot)")
	}
	if get(c, "securityContext", "readOnlyRootFilesystem") != true {
		t.Errorf("the root filesystem is writable (readOnlyRootFilesystem)")
	}
	if get(c, "securityContext", "allowPrivilegeEscalation") != false {
		t.Errorf("allowPrivilegeEscalation is not false")
	}
	mounted := false
	for _, m := range list(get(c, "volumeMounts")) {
		if get(m, "mountPath") == env["RELAY_DATA_DIR"] {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("RELAY_DATA_DIR %v is not a mounted volume", env["RELAY_DATA_DIR"])
	}
	for _, k := range []string{"requests", "limits"} {
		if get(c, "resources", k, "cpu") == nil || get(c, "resources", k, "memory") == nil {
			t.Errorf("resources.%s: cpu and memory are needed", k)
		}
	}
	if len(list(get(pod, "topologySpreadConstraints"))) == 0 {
		t.Errorf("no topologySpreadConstraints")
	}

	// The public Service reaches 8080 only; nothing exposes 9090 or 7946.
	svc := find(t, objs, "Service", "tabrelay")
	sp := list(get(svc, "spec", "ports"))
	if len(sp) != 1 || get(sp[0], "port") != 80 || portNumber(get(sp[0], "targetPort"), ports) != 8080 {
		t.Errorf("Service tabrelay: ports %v, want 80 → 8080 only", sp)
	}
	podLabels := get(d, "spec", "template", "metadata", "labels")
	for _, o := range objs {
		if o.kind() != "Service" || !selects(get(o.doc, "spec", "selector"), podLabels) {
			continue
		}
		for _, p := range list(get(o.doc, "spec", "ports")) {
			if n := portNumber(get(p, "targetPort"), ports); n == 9090 || n == 7946 {
				t.Errorf("%s: Service %s exposes the relay's port %d", o.file, o.name(), n)
			}
		}
	}

	pdb := find(t, objs, "PodDisruptionBudget", "tabrelay")
	if get(pdb, "spec", "maxUnavailable") != 1 || !selects(get(pdb, "spec", "selector", "matchLabels"), podLabels) {
		t.Errorf("PodDisruptionBudget tabrelay: want maxUnavailable 1 over the relay's pods")
	}
}

func checkRedis(t *testing.T, objs []k8sObject) {
	ss := find(t, objs, "StatefulSet", "tabrelay-redis")
	c := get(ss, "spec", "template", "spec", "containers", 0)
	var args []string
	for _, a := range append(list(get(c, "command")), list(get(c, "args"))...) {
		s, ok := a.(string)
		if !ok {
			t.Errorf("redis: argument %v is %T, not a string: quote it", a, a)
		}
		args = append(args, s)
	}
	joined := " " + strings.Join(args, " ") + " "
	for _, want := range []string{" --appendonly yes ", " --appendfsync everysec ", " --maxmemory-policy noeviction "} {
		if !strings.Contains(joined, want) {
			t.Errorf("redis: arguments %q lack%s", args, want)
		}
	}
	if len(list(get(ss, "spec", "volumeClaimTemplates"))) == 0 {
		t.Errorf("redis: no volumeClaimTemplates: its append-only file must outlive the pod")
	}
	svc := find(t, objs, "Service", "tabrelay-redis")
	if get(svc, "spec", "ports", 0, "port") != 6379 {
		t.Errorf("Service tabrelay-redis does not serve 6379")
	}
	if !selects(get(svc, "spec", "selector"), get(ss, "spec", "template", "metadata", "labels")) {
		t.Errorf("Service tabrelay-redis does not select the Redis pod")
	}
}

// checkNetworkPolicy: the relay's cluster port is reachable from relay pods
// only, its admin port from the monitoring namespace only, and Redis from
// relay pods only.
func checkNetworkPolicy(t *testing.T, objs []k8sObject) {
	relay := get(find(t, objs, "Deployment", "tabrelay"), "spec", "template", "metadata", "labels")
	redis := get(find(t, objs, "StatefulSet", "tabrelay-redis"), "spec", "template", "metadata", "labels")
	// ingress rules of the policies that select pods with these labels
	rules := func(labels any) []any {
		var out []any
		for _, o := range objs {
			if o.kind() == "NetworkPolicy" && selects(get(o.doc, "spec", "podSelector", "matchLabels"), labels) {
				if !slices.Contains(list(get(o.doc, "spec", "policyTypes")), any("Ingress")) {
					t.Errorf("%s: NetworkPolicy %s does not restrict Ingress", o.file, o.name())
				}
				out = append(out, list(get(o.doc, "spec", "ingress"))...)
			}
		}
		if len(out) == 0 {
			t.Errorf("no NetworkPolicy selects pods labelled %v", labels)
		}
		return out
	}
	// covers reports whether an ingress rule admits port (no ports: every port).
	covers := func(rule any, port int) bool {
		ps := list(get(rule, "ports"))
		if len(ps) == 0 {
			return true
		}
		for _, p := range ps {
			if get(p, "port") == port || get(p, "port") == nil {
				return true
			}
		}
		return false
	}
	check := func(what string, labels any, port int, allowed func(from any) bool) {
		found := false
		for _, r := range rules(labels) {
			if !covers(r, port) {
				continue
			}
			from := list(get(r, "from"))
			if len(from) == 0 {
				t.Errorf("%s: a rule admits port %d from anywhere", what, port)
			}
			for _, f := range from {
				if !allowed(f) {
					t.Errorf("%s: port %d admits %v", what, port, f)
				}
			}
			found = true
		}
		if !found {
			t.Errorf("%s: no rule admits port %d at all", what, port)
		}
	}
	fromRelayPods := func(f any) bool {
		m, _ := f.(map[string]any)
		return len(m) == 1 && selects(get(f, "podSelector", "matchLabels"), relay)
	}
	check("relay cluster remote", relay, 7946, fromRelayPods)
	check("relay admin", relay, 9090, func(f any) bool {
		m, _ := f.(map[string]any)
		return len(m) == 1 && get(f, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name") == "monitoring"
	})
	check("redis", redis, 6379, fromRelayPods)
}

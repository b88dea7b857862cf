package deploy

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/internal/syncbuf"
	"github.com/tabrelay/tabrelay/internal/testwait"
)

// servedMetric is a metric family a relay serves at /metrics.
type servedMetric struct {
	kind   dto.MetricType
	labels map[string]bool // the labels of its series (a histogram's le not among them)
}

// servedMetrics starts a real relay, `tabrelay serve` built from
// ../cmd/tabrelay, as a node of a cluster on a real Redis (so that
// placement's and Redis's metrics are there too), sends one request to
// its public listener (the HTTP counter has series once it counted one),
// and reads its admin listener's /metrics as Prometheus scrapes it. Every
// labelled metric of the relay makes its series up front (the label
// values it can take), so each family it registers is there.
func servedMetrics(t *testing.T) map[string]servedMetric {
	t.Helper()
	if servedCache != nil {
		return servedCache
	}
	admin := startRelay(t)
	req, _ := http.NewRequest(http.MethodGet, "http://"+admin+"/metrics", nil)
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]servedMetric{}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading /metrics: %v", err)
		}
		m := servedMetric{kind: mf.GetType(), labels: map[string]bool{}}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				m.labels[l.GetName()] = true
			}
		}
		out[mf.GetName()] = m
	}
	if _, ok := out["tabrelay_http_requests_total"]; !ok {
		t.Fatalf("/metrics has no tabrelay_http_requests_total after a request; families: %d", len(out))
	}
	servedCache = out
	return out
}

// servedCache is what servedMetrics read, kept for the package's other tests
// (they do not run in parallel).
var servedCache map[string]servedMetric

// startRelay builds tabrelay and runs `tabrelay serve` as a node of a
// cluster on a real Redis until t ends; it returns the admin listener's
// address once the node is ready (its /ready on the public listener,
// which counts that request, answered 200).
func startRelay(t *testing.T) (admin string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "tabrelay")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/tabrelay").CombinedOutput(); err != nil {
		t.Fatalf("building tabrelay: %v\n%s", err, out)
	}
	redis := redistest.Start(t)
	key := make([]byte, 32)
	rand.Read(key)
	listen := "127.0.0.1:" + redistest.FreePort(t)
	admin = "127.0.0.1:" + redistest.FreePort(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "RELAY_LISTEN=" + listen, "RELAY_ADMIN_LISTEN=" + admin,
		"RELAY_DATA_DIR=" + dir, "RELAY_PUBLIC_URL=http://" + listen, "ALLOWED_ORIGINS=http://app.test",
		"REDIS_URL=" + redis.URL(), "RELAY_SIGNING_KEY=" + base64.StdEncoding.EncodeToString(key),
		"RELAY_CLUSTER_LISTEN=127.0.0.1:" + redistest.FreePort(t)}
	logs := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("the relay's log:\n%s", logs.String())
		}
	})
	testwait.Eventually(t, func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the relay exited before it was ready: %v", err)
		default:
		}
		resp, err := http.Get("http://" + listen + "/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "the relay's /ready to answer 200")

	return admin
}

var (
	// The relay's own metrics, and its Go and process collectors'.
	usedMetric  = regexp.MustCompile(`\b(?:tabrelay|process|go)_[a-z0-9_]+`)
	selector    = regexp.MustCompile(`\b((?:tabrelay|process|go)_[a-z0-9_]+)\s*\{((?:[^}"]|"(?:[^"\\]|\\.)*")*)\}`)
	matcher     = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	quotedValue = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// targetLabels are added by the scrape, not by the relay.
var targetLabels = []string{"namespace", "pod", "job", "instance", "container", "service", "endpoint", "node"}

// family returns the served family a series name belongs to: the name
// itself, or a histogram's _bucket, _sum or _count (a summary's _sum or
// _count).
func family(served map[string]servedMetric, name string) (string, bool) {
	if _, ok := served[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		m, served := served[base]
		if ok && served && (m.kind == dto.MetricType_HISTOGRAM || m.kind == dto.MetricType_SUMMARY && suffix != "_bucket") {
			return base, true
		}
	}
	return "", false
}

// TestMetricNamesAreRegistered: every metric of the relay (tabrelay_…,
// process_…, go_…) named in the dashboard, the alert rules, their unit
// tests and the runbook is one a running relay serves at /metrics, and
// every label a selector matches on is one of that metric's labels (or a
// label the scrape adds; le of a histogram's _bucket).
func TestMetricNamesAreRegistered(t *testing.T) {
	served := servedMetrics(t)
	missing := map[string][]string{} // name → files using it
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".json", ".yaml", ".yml", ".md":
		default:
			return nil
		}
		text := readFile(t, path)
		if filepath.Ext(path) == ".json" {
			text = strings.ReplaceAll(text, `\"`, `"`)
		}
		for _, name := range usedMetric.FindAllString(text, -1) {
			if _, ok := family(served, name); !ok && !slices.Contains(missing[name], path) {
				missing[name] = append(missing[name], path)
			}
		}
		for _, m := range selector.FindAllStringSubmatch(text, -1) {
			base, ok := family(served, m[1])
			if !ok {
				continue // reported above
			}
			labels := served[base].labels
			for _, lm := range matcher.FindAllStringSubmatch(quotedValue.ReplaceAllString(m[2], `""`), -1) {
				l := lm[1]
				if labels[l] || slices.Contains(targetLabels, l) || (l == "le" && strings.HasSuffix(m[1], "_bucket")) {
					continue
				}
				t.Errorf("%s: %s{%s}: %s has no label %q (its labels: %v)", path, m[1], m[2], base, l, slices.Sorted(maps.Keys(labels)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range slices.Sorted(maps.Keys(missing)) {
		t.Errorf("%s is used in %s but the relay serves no such metric", n, strings.Join(missing[n], ", "))
	}
}

// TestEveryRelayMetricIsOnTheDashboard: the converse of the test above —
// every tabrelay_… metric a running relay serves is queried by a panel of
// the dashboard, so on call sees what the code counts (a new counter
// without a panel fails here).
func TestEveryRelayMetricIsOnTheDashboard(t *testing.T) {
	served := servedMetrics(t)
	text := strings.ReplaceAll(readFile(t, "grafana/tabrelay-dashboard.json"), `\"`, `"`)
	shown := map[string]bool{}
	for _, name := range usedMetric.FindAllString(text, -1) {
		if base, ok := family(served, name); ok {
			shown[base] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(served)) {
		if strings.HasPrefix(name, "tabrelay_") && !shown[name] {
			t.Errorf("%s is served at /metrics but no panel of grafana/tabrelay-dashboard.json shows it", name)
		}
	}
}

package deploy

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
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
	dir := t.TempDir()
	bin := filepath.Join(dir, "tabrelay")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/tabrelay").CombinedOutput(); err != nil {
		t.Fatalf("building tabrelay: %v\n%s", err, out)
	}
	redis := redistest.Start(t)
	key := make([]byte, 32)
	rand.Read(key)
	listen, admin := "127.0.0.1:"+redistest.FreePort(t), "127.0.0.1:"+redistest.FreePort(t)
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

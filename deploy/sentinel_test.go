package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/internal/redisurl"
)

// TestSentinelVariant checks kubernetes/sentinel/, the Redis manifests'
// Sentinel variant (issue 16): its kustomization names every file of it
// and the base; the single server it deletes is the base's; the data pods
// run with append-only persistence and noeviction, two of them; three
// sentinels watch the master with quorum 2; the relay's REDIS_URL is a
// redis+sentinel:// URL naming those three sentinels and that master; the
// sentinels are reachable from the relay pods only among the relay's.
func TestSentinelVariant(t *testing.T) {
	docs := yamlFiles(t)
	kust := docs["kubernetes/sentinel/kustomization.yaml"]
	if len(kust) != 1 {
		t.Fatalf("kubernetes/sentinel/kustomization.yaml: %d documents", len(kust))
	}
	named := []string{"kustomization.yaml"}
	for _, r := range list(get(kust[0], "resources")) {
		named = append(named, str(r))
	}
	if !slices.Contains(named, "..") {
		t.Error("the Sentinel variant does not build on the base (resources: ..)")
	}
	for _, p := range list(get(kust[0], "patches")) {
		named = append(named, str(get(p, "path")))
	}
	entries, err := os.ReadDir("kubernetes/sentinel")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(named, e.Name()) {
			t.Errorf("kubernetes/sentinel/kustomization.yaml does not name %s", e.Name())
		}
	}
	for _, n := range named[1:] {
		if _, err := os.Stat(filepath.Join("kubernetes/sentinel", n)); err != nil {
			t.Errorf("kubernetes/sentinel/kustomization.yaml names %s: %v", n, err)
		}
	}
	base := k8sObjects(t)
	for _, d := range docs["kubernetes/sentinel/delete-single-redis.yaml"] {
		if get(d, "$patch") != "delete" {
			t.Errorf("delete-single-redis.yaml: a document that deletes nothing")
		}
		find(t, base, str(get(d, "kind")), str(get(d, "metadata", "name")))
	}

	var objs []k8sObject
	for _, f := range []string{"kubernetes/sentinel/redis-data.yaml", "kubernetes/sentinel/redis-sentinel.yaml"} {
		for _, d := range docs[f] {
			objs = append(objs, k8sObject{f, d.(map[string]any)})
		}
	}
	data := find(t, objs, "StatefulSet", "tabrelay-redis-data")
	if get(data, "spec", "replicas") != 2 || len(list(get(data, "spec", "volumeClaimTemplates"))) == 0 {
		t.Error("the data StatefulSet is not two pods, each with its volume")
	}
	start := str(get(find(t, objs, "ConfigMap", "tabrelay-redis-data"), "data", "start.sh"))
	for _, want := range []string{"--appendonly yes", "--appendfsync everysec", "--maxmemory-policy noeviction", "--replicaof"} {
		if !strings.Contains(start, want) {
			t.Errorf("the data pods' start.sh lacks %s", want)
		}
	}
	sentinels := find(t, objs, "StatefulSet", "tabrelay-redis-sentinel")
	if get(sentinels, "spec", "replicas") != 3 {
		t.Error("not three sentinels")
	}
	conf := str(get(find(t, objs, "ConfigMap", "tabrelay-redis-sentinel"), "data", "sentinel.conf"))
	monitor := regexp.MustCompile(`(?m)^sentinel monitor (\S+) tabrelay-redis-data-0\.tabrelay-redis-data 6379 2$`).FindStringSubmatch(conf)
	if monitor == nil {
		t.Fatalf("sentinel.conf does not monitor data pod 0 with quorum 2:\n%s", conf)
	}

	patch := docs["kubernetes/sentinel/relay-redis-url.yaml"]
	var raw string
	for _, e := range list(get(patch[0], "spec", "template", "spec", "containers", 0, "env")) {
		if get(e, "name") == "REDIS_URL" {
			raw = str(get(e, "value"))
		}
	}
	u, err := redisurl.Parse(raw)
	if err != nil || u.Shape != redisurl.Sentinel {
		t.Fatalf("the variant's REDIS_URL %q: %v, %v", raw, u.Shape, err)
	}
	if u.Options.MasterName != monitor[1] {
		t.Errorf("REDIS_URL names master %q, the sentinels monitor %q", u.Options.MasterName, monitor[1])
	}
	want := []string{"tabrelay-redis-sentinel-0.tabrelay-redis-sentinel:26379", "tabrelay-redis-sentinel-1.tabrelay-redis-sentinel:26379",
		"tabrelay-redis-sentinel-2.tabrelay-redis-sentinel:26379"}
	if !slices.Equal(u.Options.Addrs, want) {
		t.Errorf("REDIS_URL names the sentinels %v, want %v", u.Options.Addrs, want)
	}

	relay := get(find(t, base, "Deployment", "tabrelay"), "spec", "template", "metadata", "labels")
	redisPods := get(data, "spec", "template", "metadata", "labels")
	np := append(docs["kubernetes/sentinel/networkpolicy-redis.yaml"], any(find(t, objs, "NetworkPolicy", "tabrelay-redis-sentinel")))
	for _, pol := range np {
		for _, r := range list(get(pol, "spec", "ingress")) {
			from := list(get(r, "from"))
			if len(from) == 0 || !slices.ContainsFunc(from, func(f any) bool { return selects(get(f, "podSelector", "matchLabels"), relay) }) {
				t.Errorf("NetworkPolicy %s: a rule that does not admit the relay pods, or admits anyone", get(pol, "metadata", "name"))
			}
			for _, f := range from {
				if get(f, "podSelector") == nil {
					t.Errorf("NetworkPolicy %s admits %v", get(pol, "metadata", "name"), f)
				}
			}
		}
	}
	if !selects(get(find(t, base, "NetworkPolicy", "tabrelay-redis"), "spec", "podSelector", "matchLabels"), redisPods) {
		t.Error("the base's Redis NetworkPolicy (patched here) does not select the data pods")
	}
}

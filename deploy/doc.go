// Package deploy holds what runs tabrelay as a cluster (SPEC §9): the
// container image's Dockerfile, the Kubernetes manifests, the Grafana
// dashboard, the Prometheus alert rules with their unit tests, and their
// runbook. It has no code; its tests check that those files parse and
// agree with each other, run promtool on the rules, and check every
// metric they name against what a running relay serves at /metrics.
package deploy

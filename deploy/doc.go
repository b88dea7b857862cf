// Package deploy holds what runs tabrelay as a cluster (SPEC §9): the
// container image's Dockerfile, the Kubernetes manifests, the Grafana
// dashboard, the Prometheus alert rules and their runbook. It has no code;
// its tests check that those files parse, agree with each other and name
// only metrics the relay registers.
package deploy

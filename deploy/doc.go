// Package deploy holds what an operator deploys beside Corkboard: the
// Prometheus rules in deploy/prometheus and the Grafana dashboard in
// deploy/grafana (docs/monitoring.md). Its tests check them with promtool
// and against a real board's /metrics.
package deploy

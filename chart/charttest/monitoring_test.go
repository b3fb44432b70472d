package charttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestMonitoringFiles: the dashboard ConfigMap and the PrometheusRule come
// from files/ (written with the metrics), only when a file is there and not
// empty, and the Prometheus Operator kinds only where its API exists.
func TestMonitoringFiles(t *testing.T) {
	h := newHelm(t)
	dir := filepath.Join(t.TempDir(), "dynamo-platform")
	if out, err := exec.Command("cp", "-r", chartDir(t), dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the chart: %v: %s", err, out)
	}
	files := filepath.Join(dir, "charts", "dynamo-operator", "files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(files, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	render := func(extra ...string) []*unstructured.Unstructured {
		return decodeObjects(t, h.mustRun(h.templateArgs(dir, "dynamo-platform", "dynamo-system", extra...)...))
	}

	write("grafana-dashboard.json", "")
	write("prometheus-rules.yaml", "\n")
	objs := render("--api-versions=monitoring.coreos.com/v1")
	wantKinds(t, objs, map[string]int{"ConfigMap": 0, "PrometheusRule": 0, "ServiceMonitor": 1})

	write("grafana-dashboard.json", `{"title": "Dynamo operator", "panels": []}`)
	write("prometheus-rules.yaml", "groups:\n  - name: dynamo-operator\n    rules:\n      - alert: DynamoOperatorDown\n        expr: absent(up{job=\"x\"})\n")
	objs = render("--api-versions=monitoring.coreos.com/v1")
	wantKinds(t, objs, map[string]int{"ConfigMap": 1, "PrometheusRule": 1, "ServiceMonitor": 1})
	cm := find(objs, "ConfigMap", "")
	if data, _, _ := unstructured.NestedString(cm.Object, "data", "dynamo-operator.json"); !strings.Contains(data, "Dynamo operator") {
		t.Errorf("dashboard ConfigMap data %q", data)
	}
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard labels %v", cm.GetLabels())
	}
	groups, _, _ := unstructured.NestedSlice(find(objs, "PrometheusRule", "").Object, "spec", "groups")
	if len(groups) != 1 {
		t.Errorf("PrometheusRule groups %v", groups)
	}
	dryRun(t, []*unstructured.Unstructured{cm})

	// Without the Prometheus Operator's API: the dashboard only.
	objs = render()
	wantKinds(t, objs, map[string]int{"ConfigMap": 1, "PrometheusRule": 0, "ServiceMonitor": 0})
	// Metrics off: none of it.
	objs = render("--api-versions=monitoring.coreos.com/v1", "--set", "dynamo-operator.metricsService.enabled=false")
	wantKinds(t, objs, map[string]int{"ConfigMap": 0, "PrometheusRule": 0, "ServiceMonitor": 0})
}

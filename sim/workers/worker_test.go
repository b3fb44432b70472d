package workers

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

func TestMain(m *testing.M) { os.Exit(cluster.TestMainInNamespace(m)) }

func do(t *testing.T, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rr.Code, rr.Body.String()
}

func TestWorkerLoRALifecycle(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := NewRecorder(clk)
	w := NewWorker("ns/pod-a", "10.244.0.9:9090", rec)

	if code, _ := do(t, w, "GET", "/health", ""); code != 200 {
		t.Errorf("/health: %d", code)
	}
	if code, body := do(t, w, "POST", "/v1/loras", `{"lora_name":"sql","source":{"uri":"hf://org/sql"}}`); code != 200 || !strings.Contains(body, "loaded") {
		t.Errorf("load: %d %s", code, body)
	}
	if code, body := do(t, w, "POST", "/v1/loras", `{"lora_name":"x"}`); code != 400 || !strings.Contains(body, "source.uri") {
		t.Errorf("load without a source: %d %s", code, body)
	}
	if _, body := do(t, w, "GET", "/v1/loras", ""); !strings.Contains(body, `"lora_name":"sql"`) {
		t.Errorf("list after load: %s", body)
	}
	if code, _ := do(t, w, "DELETE", "/v1/loras/sql", ""); code != 200 {
		t.Errorf("unload: %d", code)
	}
	if code, _ := do(t, w, "DELETE", "/v1/loras/sql", ""); code != 404 {
		t.Errorf("second unload: %d, want 404", code)
	}
	if _, body := do(t, w, "GET", "/v1/loras", ""); strings.Contains(body, "sql") {
		t.Errorf("list after unload: %s", body)
	}
	calls := rec.Calls()
	if len(calls) != 7 {
		t.Fatalf("recorded %d calls, want 7", len(calls))
	}
	if c := calls[1]; c.Method != "POST" || c.Path != "/v1/loras" || c.Pod != "ns/pod-a" || !strings.Contains(c.Body, "hf://org/sql") || !c.Time.Equal(clk.Now()) {
		t.Errorf("second call recorded as %+v", c)
	}
}

// TestWorkerServesOnPodAddress needs the simulator's namespace, where the
// pod CIDR is local: a worker binds a pod address and answers there, and
// stops answering when its pod is marked down.
func TestWorkerServesOnPodAddress(t *testing.T) {
	m := NewManager(NewRecorder(clocktesting.NewFakeClock(time.Now())))
	defer m.stopAll()
	if err := m.start("ns/p", "10.244.7.9"); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	var resp *http.Response
	var err error
	for range 50 {
		if resp, err = hc.Get("http://10.244.7.9:9090/live"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/live: %d", resp.StatusCode)
	}
	m.SetDown("ns/p", true)
	if _, err := hc.Get("http://10.244.7.9:9090/live"); err == nil {
		t.Error("a worker marked down still answers")
	}
}

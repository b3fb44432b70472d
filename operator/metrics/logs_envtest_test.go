package metrics_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/gomega"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// logLine is one JSON log line of the operator.
type logLine struct {
	Level       string `json:"level"`
	Msg         string `json:"msg"`
	ReconcileID string `json:"reconcileID"`
	Controller  string `json:"controller"`
	Namespace   string `json:"namespace"`
	// size is the line's length in bytes with its newline.
	size int
}

func parseLogs(t *testing.T, b []byte) []logLine {
	t.Helper()
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a log line that is not JSON: %s", sc.Text())
		}
		l.size = len(sc.Bytes()) + 1
		out = append(out, l)
	}
	return out
}

// atInfo reports whether a line shows at LOG_LEVEL=info: zap writes V(n)
// for n > 0 as the level "debug" (V(1)) or "Level(-n)".
func atInfo(l logLine) bool {
	return l.Level == "info" || l.Level == "warn" || l.Level == "error"
}

// A reconcile with nothing to do says so at V(2) and nothing at info. The
// window is a restart, after which the operator reconciles every object
// again: the V(2) lines prove it did, in this very namespace.
func TestQuietReconcileLogsNothingAtInfo(t *testing.T) {
	r := operator(t)
	ctx := context.Background()
	ns := env.Namespace(t, "quiet")
	g := builders.MakeGraph("llm", ns).
		Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
		Service("Worker", builders.MakeService().GPUs(1)).Obj()
	mark := r.logs.Len()
	if err := env.Client.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	waitForState(t, ns, "llm", v1alpha1.GraphStateSuccessful)

	// The creation told users what they must see, and V(1) each child. The
	// state change is logged once its status write returned, so a client
	// may see the state a moment before the line is written: read again
	// until it is there.
	await.New(t).Eventually(func() error {
		created, _ := r.logs.since(mark)
		var stateChanges, children int
		for _, l := range parseLogs(t, created) {
			if l.Namespace != ns {
				continue
			}
			switch {
			case l.Msg == "graph state changed" && l.Level == "info":
				stateChanges++
			case strings.HasSuffix(l.Msg, " child") && l.Level == "debug":
				children++
			}
		}
		if stateChanges == 0 || children < 2 {
			return errorf("%d state changes at info and %d children at V(1):\n%s", stateChanges, children, created)
		}
		return nil
	}).Should(gomega.Succeed(), "creating a graph logs its state change at info and each child at V(1)")

	r.op.Stop()
	mark = r.logs.Len()
	if err := r.op.Start(r.ctx); err != nil {
		t.Fatal(err)
	}
	var quiet []logLine
	await.New(t).Eventually(func() error {
		b, _ := r.logs.since(mark)
		quiet = parseLogs(t, b)
		seen := map[string]bool{}
		for _, l := range quiet {
			if l.Namespace == ns && l.Msg == "nothing to do" && l.ReconcileID != "" {
				seen[l.Controller] = true
			}
		}
		if len(seen) < 2 {
			return errorf("nothing-to-do reconciles seen by controller: %v", seen)
		}
		return nil
	}).Should(gomega.Succeed(), "the restarted operator reconciles the graph and its components with nothing to do")
	for _, l := range quiet {
		if l.ReconcileID != "" && atInfo(l) {
			t.Errorf("a reconcile after the restart logged at info: %+v", l)
		}
	}
}

// TestLogVolumeAtInfo measures what LOG_LEVEL=info writes while 50 graphs
// of two services are created and become Ready, for the operator's
// documentation. It prints the figures; only the shape is checked: every
// line is JSON, and each graph's state changes are told.
func TestLogVolumeAtInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	r := operator(t)
	ctx := context.Background()
	ns := env.Namespace(t, "volume")
	const graphs = 50
	mark := r.logs.Len()
	for i := range graphs {
		g := builders.MakeGraph(fmt.Sprintf("g%02d", i), ns).
			Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
			Service("Worker", builders.MakeService().GPUs(1)).Obj()
		if err := env.Client.Create(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	for i := range graphs {
		waitForState(t, ns, fmt.Sprintf("g%02d", i), v1alpha1.GraphStateSuccessful)
	}
	// Each state change is logged once its status write returned (see
	// TestReconcileLogs), so the last graph may read Ready a moment before
	// its line is written: read the log again until every graph's line is
	// there, or fail naming how many are missing.
	var infoBytes, infoLines, allBytes, allLines, stateChanges int
	await.New(t).Eventually(func() error {
		b, _ := r.logs.since(mark)
		infoBytes, infoLines, allBytes, allLines, stateChanges = 0, 0, 0, 0, 0
		for _, l := range parseLogs(t, b) {
			allBytes, allLines = allBytes+l.size, allLines+1
			if atInfo(l) {
				infoBytes, infoLines = infoBytes+l.size, infoLines+1
				if l.Msg == "graph state changed" && l.Namespace == ns {
					stateChanges++
				}
			}
		}
		if stateChanges < graphs {
			return errorf("%d state changes logged at info for %d graphs", stateChanges, graphs)
		}
		return nil
	}).Should(gomega.Succeed(), fmt.Sprintf("each of %d graphs logs its state change at info", graphs))
	t.Logf("%d graphs created until Ready: %d lines, %d bytes at info (%d state changes); %d lines, %d bytes at V(2)",
		graphs, infoLines, infoBytes, stateChanges, allLines, allBytes)
}

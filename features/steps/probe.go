package steps

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// LogLevel is the operator log level the scenarios install releases with:
// at V(2) each reconcile with nothing to do is logged, so an operator that
// reconciled a graph without writing anything can be seen to have done so.
// Proving that the operator acted must not itself make it act: a label put
// on each graph would reach every Deployment's metadata and bump its
// generation.
const LogLevel = "dynamo-operator.logLevel=2"

func registerProbeSteps(sc *godog.ScenarioContext, w *simWorld) {
	sc.Step(`^the running operator has reconciled every graph$`, func(ctx context.Context) error {
		return w.ReconciledEveryGraph(ctx, ClusterRelease, nil, time.Time{})
	})
	sc.Step(`^the release "([^"]+)" has reconciled every graph in the namespace "([^"]+)"$`, func(ctx context.Context, release, ns string) error {
		return w.ReconciledEveryGraph(ctx, release, []string{ns}, time.Time{})
	})
	sc.Step(`^the cluster-wide operator has reconciled every graph in the namespace "([^"]+)" since it was handed back$`, func(ctx context.Context, ns string) error {
		since, ok := w.handover.released[ns]
		if !ok {
			return fmt.Errorf("no release of %s was uninstalled in this scenario", ns)
		}
		return w.ReconciledEveryGraph(ctx, ClusterRelease, []string{ns}, since)
	})
}

// logLine is the part of an operator log line (zap JSON) the probe reads:
// controller-runtime names the reconciled object under its kind.
type logLine struct {
	TS         float64 `json:"ts"`
	Controller string  `json:"controller"`
	Graph      *struct {
		Name, Namespace string
	} `json:"DynamoGraphDeployment"`
	Component *struct {
		Name, Namespace string
	} `json:"DynamoComponentDeployment"`
}

// ReconciledEveryGraph waits until the logs of release's current operator
// pods show a reconcile, since since, of every graph of namespaces (all the
// scenario's graph namespaces when nil) and of every component there.
func (w *simWorld) ReconciledEveryGraph(ctx context.Context, release string, namespaces []string, since time.Time) error {
	if len(w.graphs.list) == 0 {
		return fmt.Errorf("the scenario applied no graphs")
	}
	_, relNS, ok := w.InstalledRelease(release)
	if !ok {
		return fmt.Errorf("the scenario has no release %q installed", release)
	}
	if namespaces == nil {
		namespaces = w.graphs.namespaces
	}
	in := map[string]bool{}
	for _, ns := range namespaces {
		in[ns] = true
	}
	start := time.Now()
	n := 0
	err := w.eventually(ctx, "the release "+release+" to reconcile every graph", func() error {
		want := map[string]bool{}
		for _, g := range w.graphs.list {
			if in[g.Namespace] {
				want["graph "+g.String()] = true
			}
		}
		for _, ns := range namespaces {
			var dcds v1alpha1.DynamoComponentDeploymentList
			if err := w.Client.List(ctx, &dcds, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, d := range dcds.Items {
				want["component "+ns+"/"+d.Name] = true
			}
		}
		n = len(want)
		pods, err := OperatorPods(ctx, w.Client, release, relNS)
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			return fmt.Errorf("release %s has no operator pods", release)
		}
		for i := range pods {
			if err := w.reconciledIn(&pods[i], since, want); err != nil {
				return err
			}
		}
		if len(want) > 0 {
			var missing []string
			for k := range want {
				missing = append(missing, k)
			}
			sort.Strings(missing)
			return fmt.Errorf("release %s's operator has not logged a reconcile of %d objects:\n  %s", release, len(missing), strings.Join(head(missing, 20), "\n  "))
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.Figure(fmt.Sprintf("%s reconciled %d graphs and components in (s)", release, n), fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	return nil
}

// reconciledIn strikes from want every graph and component the pod's log
// shows reconciled at or after since.
func (w *simWorld) reconciledIn(pod *corev1.Pod, since time.Time, want map[string]bool) error {
	path := filepath.Join(w.Sim.PodLogs(), pod.Namespace+"_"+pod.Name+".log")
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Controller == "" {
			continue
		}
		sec := int64(l.TS)
		if time.Unix(sec, int64((l.TS-float64(sec))*1e9)).Before(since) {
			continue
		}
		if l.Graph != nil && l.Controller == "dynamographdeployment" {
			delete(want, "graph "+l.Graph.Namespace+"/"+l.Graph.Name)
		}
		if l.Component != nil && l.Controller == "dynamocomponentdeployment" {
			delete(want, "component "+l.Component.Namespace+"/"+l.Component.Name)
		}
	}
	return sc.Err()
}

// WritesIn lists user's writes in namespaces (all when nil) completed in
// [from, to), from the audit log.
func (w *simWorld) WritesIn(user string, namespaces []string, from, to time.Time) ([]string, error) {
	ws, err := w.Sim.WritesBy(user)
	if err != nil {
		return nil, err
	}
	in := map[string]bool{}
	for _, ns := range namespaces {
		in[ns] = true
	}
	var out []string
	for _, x := range ws {
		if (namespaces == nil || in[x.Namespace]) && !x.At.Before(from) && x.At.Before(to) {
			out = append(out, x.At.Format("15:04:05.000")+" "+x.Line)
		}
	}
	return out, nil
}

// figureOperatorWrites records, for each release the scenario installed,
// its operator's writes in the graphs' namespaces since the pods were
// noted (the audit log).
func (w *simWorld) figureOperatorWrites() {
	for _, name := range w.releases.names {
		writes, err := w.WritesIn(w.OperatorUser(name), w.graphs.namespaces, w.graphs.notedAt, time.Now())
		if err != nil {
			w.Figure("writes by "+name+" in the graphs' namespaces after the note", "error: "+err.Error())
			continue
		}
		w.Figure("writes by "+name+" in the graphs' namespaces after the note", len(writes))
	}
}

package steps

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// ProbeLabel is put on every graph to see which operator answers: the
// operator propagates a graph's labels to its components and their
// workloads' metadata (never to the pod template, which would restart
// the pods), so the label reaching every Deployment proves the running
// operator reconciled every graph and component, after whatever the
// scenario did, without restarting a workload.
const ProbeLabel = "scenarios.dynamo.dev/probe"

// probe is the state of the reconcile probes of a scenario.
type probe struct {
	n     int
	since time.Time
}

func init() { Register(registerProbeSteps) }

func registerProbeSteps(w *World, sc *godog.ScenarioContext) {
	sc.Step(`^the running operator has reconciled every graph$`, func(ctx context.Context) error {
		return w.ReconciledEveryGraph(ctx, nil)
	})
	sc.Step(`^the running operator has reconciled every graph in the namespace "([^"]+)"$`, func(ctx context.Context, ns string) error {
		return w.ReconciledEveryGraph(ctx, []string{ns})
	})
}

// ReconciledEveryGraph labels every graph of namespaces (all the
// scenario's graph namespaces when nil) with a new probe value and waits
// until every component and Deployment there carries it.
func (w *World) ReconciledEveryGraph(ctx context.Context, namespaces []string) error {
	if len(w.graphs.list) == 0 {
		return fmt.Errorf("the scenario applied no graphs")
	}
	if namespaces == nil {
		namespaces = w.graphs.namespaces
	}
	in := map[string]bool{}
	for _, ns := range namespaces {
		in[ns] = true
	}
	w.probes.n++
	value := strconv.Itoa(w.probes.n)
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, ProbeLabel, value)))
	start := time.Now()
	graphs := 0
	for _, g := range w.graphs.list {
		if !in[g.Namespace] {
			continue
		}
		dgd := &v1alpha1.DynamoGraphDeployment{}
		dgd.Namespace, dgd.Name = g.Namespace, g.Name
		if err := w.Client.Patch(ctx, dgd, patch, client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("labelling graph %s: %w", g, err)
		}
		graphs++
	}
	if graphs == 0 {
		return fmt.Errorf("no graph of the scenario in %v", namespaces)
	}
	err := w.Eventually(ctx, func() error {
		var missing []string
		for _, ns := range namespaces {
			var dcds v1alpha1.DynamoComponentDeploymentList
			if err := w.Client.List(ctx, &dcds, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, d := range dcds.Items {
				if d.Labels[ProbeLabel] != value {
					missing = append(missing, "DynamoComponentDeployment "+ns+"/"+d.Name)
				}
			}
			var deps appsv1.DeploymentList
			if err := w.Client.List(ctx, &deps, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, d := range deps.Items {
				if d.Labels[ProbeLabel] != value {
					missing = append(missing, "Deployment "+ns+"/"+d.Name)
				}
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return fmt.Errorf("the probe label %s=%s has not reached %d objects:\n  %s", ProbeLabel, value, len(missing), strings.Join(head(missing, 20), "\n  "))
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.Figure(fmt.Sprintf("probe %d: %d graphs reconciled in (s)", w.probes.n, graphs), fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	return nil
}

// WritesIn lists user's writes in namespaces (all when nil) completed in
// [from, to), from the audit log.
func (w *World) WritesIn(user string, namespaces []string, from, to time.Time) ([]string, error) {
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
func (w *World) figureOperatorWrites() {
	for _, name := range w.releases.names {
		writes, err := w.WritesIn(w.OperatorUser(name), w.graphs.namespaces, w.graphs.notedAt, time.Now())
		if err != nil {
			w.Figure("writes by "+name+" in the graphs' namespaces after the note", "error: "+err.Error())
			continue
		}
		w.Figure("writes by "+name+" in the graphs' namespaces after the note", len(writes))
	}
}

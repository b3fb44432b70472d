package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cucumber/godog"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// Our cluster-wide operator beside Dynamo's namespace-scoped one: the same
// graph in a namespace for each, Dynamo's marker Lease keeping ours out of
// its namespace until it is deleted.

func registerMigrationHybridSteps(sc *godog.ScenarioContext, world *simWorld) {
	w := world.migrationState()
	sc.Step(`^the graph "([^"]*)" of "([^"]*)" runs Ready in a namespace for Dynamo's operator and one for ours$`, w.graphInTwoNamespaces)
	sc.Step(`^our operator is quiet in Dynamo's namespace$`, w.quietInDynamoNS)
	sc.Step(`^Dynamo's namespace-scoped operator starts in its namespace: its Lease, holder "([^"]*)", no renewTime$`, w.dynamoLeaseAppears)
	sc.Step(`^Dynamo's namespace-scoped operator renews its Lease$`, w.dynamoLeaseRenewed)
	sc.Step(`^I scale the service "([^"]*)" of the graph to (\d+) in both namespaces$`, w.scaleBoth)
	sc.Step(`^our operator scales "([^"]*)" to (\d+) in its own namespace$`, w.scaledInOurs)
	sc.Step(`^"([^"]*)" still runs (\d+) replicas? in Dynamo's namespace$`, w.stillInDynamoNS)
	sc.Step(`^our operator has written nothing in Dynamo's namespace since the Lease was created$`, w.noWritesUnderLease)
	sc.Step(`^Dynamo's namespace-scoped operator stops and deletes its Lease$`, w.dynamoLeaseDeleted)
	sc.Step(`^our operator scales "([^"]*)" to (\d+) in Dynamo's namespace$`, w.scaledInDynamoNS)
}

func (w *migrationWorld) graphInTwoNamespaces(ctx context.Context, graph, file string) error {
	if _, err := w.client(); err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(w.Suite.Root, file))
	if err != nil {
		return err
	}
	w.graphName = graph
	for _, target := range []*string{&w.dynamoNS, &w.oursNS} {
		prefix := "dynamo-scoped"
		if target == &w.oursNS {
			prefix = "ours"
		}
		ns, err := w.newNamespace(ctx, prefix)
		if err != nil {
			return err
		}
		*target = ns
		objs, err := ParseManifests(data)
		if err != nil {
			return err
		}
		if err := createPrereqs(ctx, w.c, objs, ns); err != nil {
			return err
		}
		for _, o := range objs {
			o.SetNamespace(ns)
			if err := w.c.Create(ctx, o); err != nil {
				return fmt.Errorf("creating %s %s in %s: %w", o.GetKind(), o.GetName(), ns, err)
			}
		}
	}
	for _, ns := range []string{w.dynamoNS, w.oursNS} {
		err := w.eventually(ctx, "the graph "+graph+" Ready in "+ns, func() error {
			g := &v1alpha1.DynamoGraphDeployment{}
			if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: graph}, g); err != nil {
				return err
			}
			r := meta.FindStatusCondition(g.Status.Conditions, "Ready")
			if r == nil || r.Status != metav1.ConditionTrue || g.Status.ObservedGeneration != g.Generation {
				return fmt.Errorf("%+v", r)
			}
			return nil
		}, await.Within(3*time.Minute))
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *migrationWorld) quietInDynamoNS(ctx context.Context) error {
	return w.waitQuiet(ctx, w.dynamoNS, 5*time.Second)
}

// dynamoLeaseAppears creates the marker Lease as Dynamo's namespace-scoped
// operator does (deploy/operator/internal/namespace_scope at df888f68): its
// holderIdentity, a duration, acquireTime, no renewTime until its first
// renewal.
func (w *migrationWorld) dynamoLeaseAppears(ctx context.Context, holder string) error {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: scope.LeaseName, Namespace: w.dynamoNS},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			LeaseDurationSeconds: ptr.To[int32](30),
			AcquireTime:          &now,
		},
	}
	w.leaseCreated = time.Now()
	return w.c.Create(ctx, lease)
}

func (w *migrationWorld) dynamoLeaseRenewed(ctx context.Context) error {
	lease := &coordinationv1.Lease{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.dynamoNS, Name: scope.LeaseName}, lease); err != nil {
		return err
	}
	lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
	return w.c.Update(ctx, lease)
}

func (w *migrationWorld) scaleBoth(ctx context.Context, service string, replicas int) error {
	for _, ns := range []string{w.dynamoNS, w.oursNS} {
		g := &v1alpha1.DynamoGraphDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.graphName}}
		body := fmt.Sprintf(`{"spec":{"services":{%q:{"replicas":%d}}}}`, service, replicas)
		if err := w.c.Patch(ctx, g, client.RawPatch("application/merge-patch+json", []byte(body))); err != nil {
			return fmt.Errorf("scaling %s in %s: %w", service, ns, err)
		}
	}
	return nil
}

// deploymentReplicas is the replicas of the Deployment of the graph's
// service in ns.
func (w *migrationWorld) deploymentReplicas(ctx context.Context, ns, service string) (int32, error) {
	d := &appsv1.Deployment{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.ComponentName(w.graphName, service)}, d); err != nil {
		return 0, err
	}
	return ptr.Deref(d.Spec.Replicas, 1), nil
}

func (w *migrationWorld) scaledIn(ctx context.Context, ns, service string, replicas int) error {
	return w.eventually(ctx, fmt.Sprintf("%s scaled to %d in %s", service, replicas, ns), func() error {
		r, err := w.deploymentReplicas(ctx, ns, service)
		if err != nil {
			return err
		}
		if r != int32(replicas) {
			return fmt.Errorf("%d replicas", r)
		}
		return nil
	}, await.Within(90*time.Second))
}

func (w *migrationWorld) scaledInOurs(ctx context.Context, service string, replicas int) error {
	return w.scaledIn(ctx, w.oursNS, service, replicas)
}

func (w *migrationWorld) scaledInDynamoNS(ctx context.Context, service string, replicas int) error {
	if err := w.scaledIn(ctx, w.dynamoNS, service, replicas); err != nil {
		return err
	}
	writes, err := w.operatorWrites(w.dynamoNS, w.leaseGone, time.Now().Add(time.Hour))
	if err != nil || len(writes) == 0 {
		return fmt.Errorf("no write of ours in %s after the Lease went in the audit log (%v)", w.dynamoNS, err)
	}
	w.figure("Dynamo's Lease deleted to our first write there (s)", "%.2f", writes[0].At.Sub(w.leaseGone).Seconds())
	return nil
}

func (w *migrationWorld) stillInDynamoNS(ctx context.Context, service string, replicas int) error {
	r, err := w.deploymentReplicas(ctx, w.dynamoNS, service)
	if err != nil {
		return err
	}
	if r != int32(replicas) {
		return fmt.Errorf("%s runs %d replicas in Dynamo's namespace %s, want %d: ours acted there", service, r, w.dynamoNS, replicas)
	}
	return nil
}

func (w *migrationWorld) noWritesUnderLease(ctx context.Context) error {
	writes, err := w.operatorWrites(w.dynamoNS, w.leaseCreated, time.Now())
	if err != nil {
		return err
	}
	if len(writes) > 0 {
		lines := make([]string, len(writes))
		for i, wr := range writes {
			lines[i] = wr.Line + " at " + wr.At.Format(time.RFC3339Nano)
		}
		return fmt.Errorf("our operator wrote %d times in %s while Dynamo's Lease lived:\n%s", len(writes), w.dynamoNS, strings.Join(lines, "\n"))
	}
	elsewhere, err := w.operatorWrites(w.oursNS, w.leaseCreated, time.Now())
	if err != nil {
		return err
	}
	if len(elsewhere) == 0 {
		return fmt.Errorf("the premise fails: our operator wrote nothing in %s either while the Lease lived", w.oursNS)
	}
	w.figure("our writes under Dynamo's Lease: its namespace / ours", "0 / %d", len(elsewhere))
	return nil
}

func (w *migrationWorld) dynamoLeaseDeleted(ctx context.Context) error {
	w.leaseGone = time.Now()
	return w.c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: w.dynamoNS, Name: scope.LeaseName}})
}

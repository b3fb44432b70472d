package steps

// The take-over of a cluster whose graphs and components Dynamo's current
// operator stored in nvidia.com/v1beta1 (internal/migration: LoadV1beta1):
// its CRDs store v1beta1 and convert through its webhook, whose Service
// went with its release. Ours serve both versions converted by our own
// webhook, and our operator rewrites the objects in v1alpha1 and trims
// storedVersions (operator/storagemigration). The steps of the v1alpha1
// take-over (migration.go) do the rest.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cucumber/godog"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/migration"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/storagemigration"
)

func registerMigrationV1beta1Steps(sc *godog.ScenarioContext, world *simWorld) {
	w := world.migrationState()
	sc.Step(`^the cluster Dynamo's current operator left, graphs and components stored in v1beta1: its CRDs, graphs, components and children in a namespace "([^"]*)"$`, w.dynamoV1beta1Leftovers)
	sc.Step(`^the graphs and components are stored in v1alpha1 alone: storedVersions is \[v1alpha1\]$`, w.storageMigrated)
	sc.Step(`^every graph and component reads in v1alpha1 and in v1beta1$`, w.readsInBothVersions)
}

// convertedCRDs are the CRDs Dynamo's current operator stores in v1beta1,
// with their kinds.
var convertedCRDs = map[string]string{
	"dynamographdeployments.nvidia.com":     "DynamoGraphDeployment",
	"dynamocomponentdeployments.nvidia.com": "DynamoComponentDeployment",
}

// dynamoV1beta1Leftovers is dynamoLeftovers with Dynamo's current CRDs and
// its graphs and components stored in v1beta1; the inventory lists them
// in v1beta1, which Dynamo's CRDs serve without their webhook.
func (w *migrationWorld) dynamoV1beta1Leftovers(ctx context.Context, prefix string) error {
	files, err := filepath.Glob(filepath.Join(w.Suite.Root, "crds", "*.yaml"))
	if err != nil {
		return err
	}
	var ours []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crds, err := migration.ReadCRDs(f)
		if err != nil {
			return err
		}
		ours = append(ours, crds...)
	}
	f, err := migration.LoadV1beta1(w.Suite.Root, ours)
	if err != nil {
		return err
	}
	w.nvidiaVersion = "v1beta1"
	return w.leftovers(ctx, prefix, f)
}

// storageMigrated waits until our operator trimmed the storedVersions of
// the converted CRDs: every object was rewritten in v1alpha1 first. The
// figures are our operator's writes of the objects themselves (not their
// status) and of the CRDs' status by the storage migration (its field
// manager), from the audit log.
func (w *migrationWorld) storageMigrated(ctx context.Context) error {
	err := w.eventually(ctx, "storedVersions [v1alpha1]", func() error {
		var waiting []string
		for name := range convertedCRDs {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := w.c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			if !slices.Equal(crd.Status.StoredVersions, []string{"v1alpha1"}) {
				waiting = append(waiting, fmt.Sprintf("%s %v", name, crd.Status.StoredVersions))
			}
		}
		if len(waiting) > 0 {
			return errors.New(strings.Join(waiting, ", "))
		}
		return nil
	}, await.Within(3*time.Minute))
	if err != nil {
		return err
	}
	w.figure("helm install to storedVersions trimmed (s)", "%.1f", time.Since(w.installStarted).Seconds())
	all, err := w.Sim.WritesBy(w.OperatorUser(ClusterRelease))
	if err != nil {
		return err
	}
	objects, crds := 0, 0
	refused := map[int]int{}
	for _, wr := range all {
		path, query, _ := strings.Cut(wr.Line, "?")
		switch {
		case wr.At.Before(w.installStarted) || !strings.Contains(query, "fieldManager="+storagemigration.FieldManager):
		case strings.HasPrefix(path, "PATCH /apis/apiextensions.k8s.io/v1/customresourcedefinitions/") && strings.HasSuffix(path, "/status"):
			crds++
		case strings.HasPrefix(path, "PUT /apis/nvidia.com/") && wr.Namespace == w.ns && wr.Code >= 300:
			// Retried: e.g. our admission webhooks before the pod is Ready.
			refused[wr.Code]++
		case strings.HasPrefix(path, "PUT /apis/nvidia.com/") && wr.Namespace == w.ns:
			objects++
		}
	}
	// The rest were stored in v1alpha1 by our controllers' first writes
	// (a status write stores the whole object) before the migration ran.
	w.figure("storage migration: graphs and components written back, refused by status code; storedVersions patches", "%d, %v; %d", objects, refused, crds)
	return nil
}

// readsInBothVersions lists the graphs and components in v1alpha1 and in
// v1beta1 (converted by our webhook): each version holds every one.
func (w *migrationWorld) readsInBothVersions(ctx context.Context) error {
	var problems []string
	for _, kind := range convertedCRDs {
		counts := map[string]int{}
		for _, version := range []string{"v1alpha1", "v1beta1"} {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind + "List"))
			list.SetAPIVersion("nvidia.com/" + version)
			if err := w.c.List(ctx, list, client.InNamespace(w.ns)); err != nil {
				problems = append(problems, fmt.Sprintf("listing %ss in %s: %v", kind, version, err))
				continue
			}
			counts[version] = len(list.Items)
		}
		if counts["v1alpha1"] == 0 || counts["v1alpha1"] != counts["v1beta1"] {
			problems = append(problems, fmt.Sprintf("%ss read: %v", kind, counts))
		}
		w.figure(kind+"s read in v1alpha1 / v1beta1", "%d / %d", counts["v1alpha1"], counts["v1beta1"])
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

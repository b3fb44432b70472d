package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cucumber/godog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/migration"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The statuses after the take-over: each graph's and component's status
// reads in the shape Dynamo's operator wrote and in ours.

func registerMigrationStatusSteps(sc *godog.ScenarioContext, world *simWorld) {
	w := world.migrationState()
	sc.Step(`^every component's and graph's status reads in Dynamo's shape and in ours$`, w.statusBothShapes)
}

// statusBothShapes reads every graph and component through our typed
// client and as Dynamo's types, and checks the fields Dynamo's readers use.
func (w *migrationWorld) statusBothShapes(ctx context.Context) error {
	var problems []string
	var components v1alpha1.DynamoComponentDeploymentList
	if err := w.c.List(ctx, &components, client.InNamespace(w.ns)); err != nil {
		return fmt.Errorf("our client cannot read the components: %w", err)
	}
	var graphs v1alpha1.DynamoGraphDeploymentList
	if err := w.c.List(ctx, &graphs, client.InNamespace(w.ns)); err != nil {
		return fmt.Errorf("our client cannot read the graphs: %w", err)
	}
	for _, c := range components.Items {
		s := c.Status.Service
		if s == nil || s.ComponentName != c.Name || ptr.Deref(s.ReadyReplicas, 0) != ptr.Deref(c.Spec.Replicas, 1) {
			problems = append(problems, fmt.Sprintf("component %s: our status.service %+v", c.Name, s))
		}
	}
	for _, kind := range []string{"DynamoGraphDeployment", "DynamoComponentDeployment"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind + "List"))
		if err := w.c.List(ctx, list, client.InNamespace(w.ns)); err != nil {
			return err
		}
		for _, o := range list.Items {
			raw, err := json.Marshal(o.Object["status"])
			if err != nil {
				return err
			}
			if kind == "DynamoGraphDeployment" {
				var st migration.DynamoGraphStatus
				if err := json.Unmarshal(raw, &st); err != nil {
					problems = append(problems, fmt.Sprintf("graph %s does not decode as Dynamo's: %v", o.GetName(), err))
					continue
				}
				if st.State != "successful" || len(st.Services) == 0 {
					problems = append(problems, fmt.Sprintf("graph %s as Dynamo's: state %q, %d services", o.GetName(), st.State, len(st.Services)))
				}
				for name, s := range st.Services {
					if s.ComponentKind != "Deployment" || len(s.ComponentNames) != 1 || s.ComponentNames[0] != s.ComponentName {
						problems = append(problems, fmt.Sprintf("graph %s as Dynamo's: services[%s] = %+v", o.GetName(), name, s))
					}
				}
				continue
			}
			var st migration.DynamoComponentStatus
			if err := json.Unmarshal(raw, &st); err != nil {
				problems = append(problems, fmt.Sprintf("component %s does not decode as Dynamo's: %v", o.GetName(), err))
				continue
			}
			if st.Service == nil || st.Service.ComponentKind != "Deployment" || st.Service.ComponentName != o.GetName() ||
				!slices.Equal(st.Service.ComponentNames, []string{o.GetName()}) {
				problems = append(problems, fmt.Sprintf("component %s as Dynamo's: service %+v", o.GetName(), st.Service))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d status problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	return nil
}

package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

// A component's status.service decodes whichever version wrote it:
// Dynamo's object, or the bare name versions of this operator before 0.2
// wrote.
func TestServiceReplicaStatusDecodesEveryShape(t *testing.T) {
	cases := map[string]struct {
		json string
		want DynamoComponentDeploymentStatus
	}{
		"Dynamo's object": {
			`{"service":{"componentKind":"Deployment","componentName":"g-w-1a2b3c4d","componentNames":["g-w-1a2b3c4d"],"replicas":2,"updatedReplicas":1,"readyReplicas":1}}`,
			DynamoComponentDeploymentStatus{Service: &ServiceReplicaStatus{ComponentKind: ComponentKindDeployment,
				ComponentName: "g-w-1a2b3c4d", ComponentNames: []string{"g-w-1a2b3c4d"}, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: ptr.To[int32](1)}},
		},
		"an older version's string": {`{"service":"g-worker","replicas":1}`,
			DynamoComponentDeploymentStatus{Service: &ServiceReplicaStatus{ComponentName: "g-worker"}, Replicas: 1}},
		"a kind a later version adds, and unknown fields": {
			`{"service":{"componentKind":"PodClique","componentName":"x","replicas":1,"updatedReplicas":1,"future":{"a":1}},"future":[1]}`,
			DynamoComponentDeploymentStatus{Service: &ServiceReplicaStatus{ComponentKind: "PodClique", ComponentName: "x", Replicas: 1, UpdatedReplicas: 1}},
		},
		"null": {`{"service":null}`, DynamoComponentDeploymentStatus{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got DynamoComponentDeploymentStatus
			if err := json.Unmarshal([]byte(tc.json), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	var got ServiceReplicaStatus
	if err := json.Unmarshal([]byte(`{"replicas":"many"}`), &got); err == nil {
		t.Error("a replica count that is not a number must still be an error")
	}
}

// What this operator writes carries every field Dynamo's schema requires,
// zero counts included.
func TestServiceReplicaStatusWritesDynamoRequiredFields(t *testing.T) {
	b, err := json.Marshal(ServiceReplicaStatus{ComponentKind: ComponentKindDeployment, ComponentName: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"componentKind":"Deployment","componentName":"c","replicas":0,"updatedReplicas":0}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

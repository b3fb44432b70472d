package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// A restart reaches a component as an annotation of its pod template
// (extraPodMetadata), which every pod of its workload carries: a Deployment's,
// and both templates of a LeaderWorkerSet's groups, so that either rolls.
func TestPodAnnotationReachesEveryTemplate(t *testing.T) {
	const key, value = "nvidia.com/restartAt", "first"
	single := builders.MakeGraphComponent("g", "Frontend", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend).
		Image(testImage).PodAnnotation(key, value)).Obj()
	multi := multinodeDCD(2, "8", pyVLLM, "--tensor-parallel-size", "16")
	multi.Spec.ExtraPodMetadata = &v1alpha1.ExtraPodMetadata{Annotations: map[string]string{key: value}}

	deploy, err := Deployment(single, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lws, _, _ := mustLWS(t, multi)
	got := map[string]string{
		"Deployment":             deploy.Spec.Template.Annotations[key],
		"LeaderWorkerSet leader": lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Annotations[key],
		"LeaderWorkerSet worker": lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Annotations[key],
	}
	want := map[string]string{"Deployment": value, "LeaderWorkerSet leader": value, "LeaderWorkerSet worker": value}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", key, diff)
	}
}

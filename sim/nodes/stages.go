package nodes

import (
	"embed"
	"fmt"
	"strings"
	"time"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	kwokconfig "sigs.k8s.io/kwok/pkg/config"
)

// The simulator's own KWOK stages, one file each in stages/, as KWOK ships
// its own (kustomize/stage in the kwok module); testdata/<stage>/ holds an
// object each is tested on (stages_test.go). They are:
//
//   - pod-ready: KWOK's default pod-ready stage with readiness left to the
//     simulator's prober (sim/probes): a container with a readiness or
//     startup probe starts not ready (and not started while its startup
//     probe has not passed), and so does the pod. KWOK probes nothing, so
//     without this every pod would be Ready the moment it is scheduled. Pods
//     without probes become Ready as before. It takes pods that are not a
//     Dynamo component's.
//   - pod-ready-admitted: pod-ready for a Dynamo component's pod (label
//     nvidia.com/dynamo-component), once admitted (AdmittedAnnotation). The
//     two differ in their name and selector only (a test keeps their next
//     states equal): KWOK selectors cannot say "either".
//   - pod-complete: KWOK's fast pod-complete stage (pods of Jobs succeed
//     once Running) for pods whose AnnotationJobOutcome asks neither to fail
//     nor to hang.
//   - job-pod-fail: fails a Job's pod whose AnnotationJobOutcome says
//     "fail", as a build that exits 1 would.
//   - pod-ready-again: in the spirit of a kubelet's status sync: the node
//     lifecycle controller sets Ready=False on the pods of a node whose
//     heartbeats are late, and a kubelet sets it back once it reports again.
//     KWOK's default stages never do, so after a node's brief NotReady (a
//     restored node, or lease renewals late under load) its pods would stay
//     unready for good. Pods whose containers are not ready (the crash-loop
//     fault) are left alone.
//
//go:embed stages/*.yaml
var stageFiles embed.FS

// AdmittedAnnotation is written on a Dynamo component's pod (label
// nvidia.com/dynamo-component) by the simulator's kubelet checks
// (sim/kubelet Admitter) once its image "pulls" and its volumes and env
// sources exist; until then the pod-ready stages leave the pod Pending,
// and the Admitter reports why as the kubelet would (ErrImagePull,
// CreateContainerConfigError, ContainerCreating). Other pods (the
// operator's, benchmarks') start as before. stages/pod-ready*.yaml name it.
const AdmittedAnnotation = "sim.dynamo.dev/admitted"

// dynamoComponentLabel is sim/workers.ComponentLabel (nodes does not import
// workers); stages/pod-ready*.yaml name it.
const dynamoComponentLabel = "nvidia.com/dynamo-component"

// AnnotationJobOutcome on a Job's pod says how the simulator ends it:
// absent or "succeed" completes it (exit 0), "fail" fails it (exit 1),
// "hang" keeps it running, until the Job's activeDeadlineSeconds has the
// Job controller stop it, or the annotation changes. Feature steps set it
// on image-build pods (through a DynamoComponent's
// imageBuilderExtraPodMetadata, or on the pod itself). stages/pod-complete.yaml
// and stages/job-pod-fail.yaml name it.
const AnnotationJobOutcome = "dynamo-sim/job-outcome"

// ownStage is the simulator's stage name, stages/<name>.yaml. The files
// are embedded: one missing is a mistake in this package that every test of
// Stages finds.
func ownStage(name string) string {
	b, err := stageFiles.ReadFile("stages/" + name + ".yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Stages returns KWOK's default node and pod stages (shipped in the kwok
// module), its pod-ready stage replaced by ones that leave probed pods'
// readiness to the prober and are delayed by podReadyDelay (in two: a
// Dynamo component's pod starts only once admitted, see
// AdmittedAnnotation), its pod-complete stage by ones that end Jobs' pods as
// their AnnotationJobOutcome says, plus the simulator's pod-ready-again
// stage.
func Stages(podReadyDelay time.Duration) (map[internalversion.StageResourceRef][]*internalversion.Stage, error) {
	docs := []string{
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeatWithLease,
		ownStage("pod-ready"),
		ownStage("pod-ready-admitted"),
		ownStage("pod-complete"),
		ownStage("job-pod-fail"),
		podfast.DefaultPodDelete,
		ownStage("pod-ready-again"),
	}
	out := map[internalversion.StageResourceRef][]*internalversion.Stage{}
	for _, doc := range docs {
		st, err := kwokconfig.UnmarshalWithType[*internalversion.Stage](doc)
		if err != nil {
			return nil, fmt.Errorf("parsing a KWOK stage: %w", err)
		}
		if strings.HasPrefix(st.Name, "pod-ready") && st.Name != "pod-ready-again" && podReadyDelay > 0 {
			ms := podReadyDelay.Milliseconds()
			st.Spec.Delay = &internalversion.StageDelay{DurationMilliseconds: &ms}
		}
		out[st.Spec.ResourceRef] = append(out[st.Spec.ResourceRef], st)
	}
	return out, nil
}

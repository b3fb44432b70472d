package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

var topologyOptions = Options{TopologyLevels: []TopologyLevel{
	{Domain: "block", Label: "example.com/block"}, {Domain: "rack", Label: "example.com/rack"},
	{Domain: "host", Label: "kubernetes.io/hostname"}}}

func graphTerm(key string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelGraphName: "g"}}, TopologyKey: key}
}

func componentTerm(key string, keys ...string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{LabelComponent: "g-worker"}},
		MatchLabelKeys: keys, TopologyKey: key}
}

func labelsExist(terms []corev1.NodeSelectorTerm, keys ...string) *corev1.NodeSelector {
	var exprs []corev1.NodeSelectorRequirement
	for _, k := range keys {
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpExists})
	}
	if len(terms) == 0 {
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: exprs}}}
	}
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, exprs...)
	}
	return &corev1.NodeSelector{NodeSelectorTerms: terms}
}

func TestDeploymentPlacedInDomains(t *testing.T) {
	worker := func() *builders.ServiceWrapper {
		return builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)
	}
	userTerm := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: []string{"H100"}}}}
	tests := map[string]struct {
		dcd  *v1alpha1.DynamoComponentDeployment
		want *corev1.Affinity
	}{
		"no constraint: nothing added": {
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", worker()).Obj(),
		},
		"the graph's level: every pod of the graph in one rack": {
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", worker()).Annotation(AnnotationGraphPackDomain, "rack").Obj(),
			want: &corev1.Affinity{
				PodAffinity:  &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{graphTerm("example.com/rack")}},
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: labelsExist(nil, "example.com/rack")},
			},
		},
		"the component's own level: its pods in one host": {
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", worker().PackDomain("host")).Obj(),
			want: &corev1.Affinity{
				PodAffinity:  &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{componentTerm("kubernetes.io/hostname")}},
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: labelsExist(nil, "kubernetes.io/hostname")},
			},
		},
		"both: the graph's block, the component's rack, the graph's block preferred": {
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", worker().PackDomain("rack")).Annotation(AnnotationGraphPackDomain, "block").Obj(),
			want: &corev1.Affinity{
				PodAffinity: &corev1.PodAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
						graphTerm("example.com/block"), componentTerm("example.com/rack")},
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
						{Weight: 100, PodAffinityTerm: graphTerm("example.com/block")}},
				},
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: labelsExist(nil, "example.com/block", "example.com/rack")},
			},
		},
		"the user's node affinity keeps its terms, each needing the label too": {
			dcd: builders.MakeGraphComponent("g", "Worker", "ns", worker().PackDomain("rack").ExtraPodSpec(&v1alpha1.ExtraPodSpec{
				PodSpec: &corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{*userTerm.DeepCopy()}}}}}}).
				Image(testImage)).Obj(),
			want: &corev1.Affinity{
				PodAffinity:  &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{componentTerm("example.com/rack")}},
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: labelsExist([]corev1.NodeSelectorTerm{*userTerm.DeepCopy()}, "example.com/rack")},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod, _ := mustDeploy(t, tc.dcd, nil, topologyOptions)
			if diff := cmp.Diff(tc.want, pod.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
		})
	}
}

// A multinode component's own level holds each group within one domain:
// the leader's and the workers' templates alike, the group told apart by
// LeaderWorkerSet's group-key label; its pods still spread one per node.
func TestLeaderWorkerSetPlacedInDomains(t *testing.T) {
	dcd := multinodeDCD(2, "8", pyVLLM, "--tensor-parallel-size", "16")
	dcd.Spec.TopologyConstraint = &v1alpha1.TopologyConstraint{PackDomain: "rack"}
	dcd.Annotations = map[string]string{AnnotationGraphPackDomain: "block"}
	lws, err := LeaderWorkerSet(dcd, nil, topologyOptions)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Affinity{
		PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				graphTerm("example.com/block"), componentTerm("example.com/rack", lwsv1.GroupUniqueHashLabelKey)},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
				{Weight: 100, PodAffinityTerm: graphTerm("example.com/block")}},
		},
		PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			componentTerm(corev1.LabelHostname, lwsv1.GroupUniqueHashLabelKey)}},
		NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: labelsExist(nil, "example.com/block", "example.com/rack")},
	}
	tpl := lws.Spec.LeaderWorkerTemplate
	for role, pod := range map[string]*corev1.PodSpec{"leader": &tpl.LeaderTemplate.Spec, "worker": &tpl.WorkerTemplate.Spec} {
		if diff := cmp.Diff(want, pod.Affinity); diff != "" {
			t.Errorf("%s affinity (-want +got):\n%s", role, diff)
		}
	}
}

func TestUnknownPackDomain(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		PackDomain("nvlink")).Annotation(AnnotationGraphPackDomain, "zone").Obj()
	_, err := Deployment(dcd, nil, topologyOptions)
	wantFieldError(t, err, "spec.topologyConstraint.packDomain",
		`packDomain names no topology level of the operator; its levels (--topology-domain-labels): block, rack, host`)
	wantFieldError(t, err, "metadata.annotations[nvidia.com/graph-pack-domain]", `the graph's spec.topologyConstraint.packDomain names no topology level`)
}

// A service's level is the graph's or narrower, as Dynamo requires.
func TestPackDomainBroaderThanTheGraphs(t *testing.T) {
	dcd := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		PackDomain("block")).Annotation(AnnotationGraphPackDomain, "rack").Obj()
	_, err := Deployment(dcd, nil, topologyOptions)
	wantFieldError(t, err, "spec.topologyConstraint.packDomain", `is broader than the graph's packDomain rack`)
	dcd.Spec.TopologyConstraint.PackDomain = "rack"
	if _, err := Deployment(dcd, nil, topologyOptions); err != nil {
		t.Errorf("the graph's own level: %v", err)
	}
}

// The graph's level reaches each component as an annotation the workload
// does not carry; a user's annotation of that name reaches nothing.
func TestGraphPackDomainAnnotation(t *testing.T) {
	dgd := builders.MakeGraph("g", "ns").Topology("cluster", "rack").Annotation(AnnotationGraphPackDomain, "host").
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj()
	dcds, err := Components(dgd)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{AnnotationGraphPackDomain: "rack"}, dcds[0].Annotations); diff != "" {
		t.Errorf("component annotations (-want +got):\n%s", diff)
	}
	d, err := Deployment(dcds[0], nil, topologyOptions)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Annotations[AnnotationGraphPackDomain]; ok {
		t.Errorf("the workload carries %s: %v", AnnotationGraphPackDomain, d.Annotations)
	}
	noLevel := builders.MakeGraph("g", "ns").Topology("cluster", "").
		Service("Worker", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage)).Obj()
	if dcds, err = Components(noLevel); err != nil || dcds[0].Annotations != nil {
		t.Errorf("a graph without a packDomain: annotations %v, error %v; want none", dcds[0].Annotations, err)
	}
}

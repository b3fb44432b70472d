package render

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// AnnotationGraphPackDomain records on a graph's component the graph's
// spec.topologyConstraint.packDomain: the level every pod of the graph is
// placed within, which the component's pods must share with the others'.
// The graph controller writes it; it is not copied to the workload.
const AnnotationGraphPackDomain = "nvidia.com/graph-pack-domain"

// TopologyLevel is a topology level and the node label that tells its
// domains apart.
type TopologyLevel struct {
	Domain, Label string
}

// TopologyRequirement is a topology level a component's pods are placed
// within, and the node label that tells the level's domains apart.
type TopologyRequirement struct {
	// Domain is the packDomain, such as rack.
	Domain string
	// Label is the node label of the level (Options.TopologyLevels).
	Label string
	// Graph: the level is the graph's (every pod of the graph in one
	// domain); otherwise the component's own (its pods, or each group's of
	// a multinode component, in one domain).
	Graph bool
}

// TopologyRequirements are the levels a component's pods are placed within:
// its graph's, then its own. The error, the user's to fix, names a
// packDomain that is not one of the operator's levels (Options.TopologyLevels),
// or a component's level broader than its graph's, which Dynamo refuses too:
// a component's pods within one zone cannot all be within the graph's rack.
func TopologyRequirements(dcd *v1alpha1.DynamoComponentDeployment, o Options) ([]TopologyRequirement, error) {
	reqs, errs := topologyRequirements(dcd, o)
	return reqs, errs.ToAggregate()
}

func topologyRequirements(dcd *v1alpha1.DynamoComponentDeployment, o Options) ([]TopologyRequirement, field.ErrorList) {
	var out []TopologyRequirement
	var errs field.ErrorList
	graphRank := -1
	if d := dcd.Annotations[AnnotationGraphPackDomain]; d != "" {
		if rank := levelOf(d, o); rank >= 0 {
			graphRank = rank
			out = append(out, TopologyRequirement{Domain: d, Label: o.TopologyLevels[rank].Label, Graph: true})
		} else {
			errs = append(errs, unknownDomain(field.NewPath("metadata", "annotations").Key(AnnotationGraphPackDomain),
				d, "the graph's spec.topologyConstraint.packDomain", o))
		}
	}
	if t := dcd.Spec.TopologyConstraint; t != nil {
		d, path := string(t.PackDomain), field.NewPath("spec", "topologyConstraint", "packDomain")
		switch rank := levelOf(d, o); {
		case rank < 0:
			errs = append(errs, unknownDomain(path, d, "packDomain", o))
		case rank < graphRank:
			errs = append(errs, field.Invalid(path, d, fmt.Sprintf("is broader than the graph's packDomain %s; "+
				"a service's level must be the graph's or narrower (--topology-domain-labels, broadest first)",
				o.TopologyLevels[graphRank].Domain)))
		default:
			out = append(out, TopologyRequirement{Domain: d, Label: o.TopologyLevels[rank].Label})
		}
	}
	return out, errs
}

// levelOf is the rank of domain among the operator's levels, broadest
// first; -1 when it is none of them.
func levelOf(domain string, o Options) int {
	return slices.IndexFunc(o.TopologyLevels, func(l TopologyLevel) bool { return l.Domain == domain })
}

func unknownDomain(path *field.Path, domain, what string, o Options) *field.Error {
	known := make([]string, 0, len(o.TopologyLevels))
	for _, l := range o.TopologyLevels {
		known = append(known, l.Domain)
	}
	return field.Invalid(path, domain, fmt.Sprintf("%s names no topology level of the operator; its levels (--topology-domain-labels): %s",
		what, strings.Join(known, ", ")))
}

// placeInDomains makes the scheduler place the pods within the domains of
// reqs, with what Kubernetes itself offers:
//
//   - a required pod affinity per level, whose topology key is the level's
//     label: the graph's level selects the graph's pods, the component's
//     level its own pods (a multinode component's: its group's, by the
//     group-key label LeaderWorkerSet puts on each group's pods, which the
//     API server adds to the selector at each pod's creation). The first
//     pod a term selects runs wherever it fits: the scheduler lets a pod
//     that matches its own terms through when no other pod matches them;
//   - a required node affinity on each label existing, so that a pod waits,
//     and the scheduler says it does not match, where no node has one;
//   - with both levels, a preferred pod affinity to the graph's pods in the
//     graph's domain: the scheduler counts only pods that match every
//     required term, so the first pod of a component with its own level
//     is not held to the graph's domain by the required terms alone
//     (docs/tasks/topology.md).
func placeInDomains(pod *corev1.PodSpec, dcd *v1alpha1.DynamoComponentDeployment, reqs []TopologyRequirement) {
	if len(reqs) == 0 {
		return
	}
	if pod.Affinity == nil {
		pod.Affinity = &corev1.Affinity{}
	}
	a := pod.Affinity
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	var labels []string
	var graphTerm *corev1.PodAffinityTerm
	for _, r := range reqs {
		term := corev1.PodAffinityTerm{TopologyKey: r.Label}
		switch {
		case r.Graph:
			term.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{LabelGraphName: graphName(dcd)}}
			graphTerm = &term
		case IsMultinode(dcd):
			term.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{LabelComponent: dcd.Name}}
			term.MatchLabelKeys = []string{lwsv1.GroupUniqueHashLabelKey}
		default:
			term.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{LabelComponent: dcd.Name}}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
			a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term)
		if !slices.Contains(labels, r.Label) {
			labels = append(labels, r.Label)
		}
	}
	if graphTerm != nil && len(reqs) > 1 {
		a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(
			a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: 100, PodAffinityTerm: *graphTerm.DeepCopy()})
	}
	requireNodeLabels(a, labels)
}

// requireNodeLabels adds, to each of the pod's required node selector
// terms (any of which a node must match), that the node has every label.
func requireNodeLabels(a *corev1.Affinity, labels []string) {
	var exprs []corev1.NodeSelectorRequirement
	for _, l := range labels {
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: l, Operator: corev1.NodeSelectorOpExists})
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: exprs}}}
		return
	}
	for i := range req.NodeSelectorTerms {
		t := &req.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, exprs...)
	}
}

// TopologyLabelNames joins the labels of reqs for a message.
func TopologyLabelNames(reqs []TopologyRequirement) string {
	var out []string
	for _, r := range reqs {
		out = append(out, fmt.Sprintf("%s (packDomain %s)", r.Label, r.Domain))
	}
	return strings.Join(out, ", ")
}

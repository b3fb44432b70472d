package controllers

import (
	"strconv"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// betaOnlyIgnoredFields lists the fields of a graph written in v1beta1 that
// its stored v1alpha1 form keeps only in the conversion's annotation
// (v1beta1.AnnotationBetaSpec): the operator reads v1alpha1 and so does not
// act on them. They are named at their v1beta1 paths, as the user wrote them.
// A graph without the annotation has none, and costs no conversion.
func betaOnlyIgnoredFields(dgd *v1alpha1.DynamoGraphDeployment) []string {
	beta := savedBeta(dgd)
	if beta == nil {
		return nil
	}
	const notYet = " (not acted on yet)"
	var out []string
	s := beta.Spec
	for path, set := range map[string]bool{
		"spec.providerOverride":  s.ProviderOverride != nil,
		"spec.priorityClassName": s.PriorityClassName != "",
		"spec.experimental":      s.Experimental != nil,
	} {
		if set {
			out = append(out, path+notYet)
		}
	}
	for i := range s.Components {
		out = append(out, betaOnlyComponentFields("spec.components["+strconv.Itoa(i)+"]", &s.Components[i], notYet)...)
	}
	return out
}

// savedBeta is dgd as v1beta1 when it keeps v1beta1-only parts in the
// conversion's annotation (v1beta1.AnnotationBetaSpec), else nil: a graph
// without the annotation costs no conversion.
func savedBeta(dgd *v1alpha1.DynamoGraphDeployment) *v1beta1.DynamoGraphDeployment {
	if _, ok := dgd.Annotations[v1beta1.AnnotationBetaSpec]; !ok {
		return nil
	}
	beta := &v1beta1.DynamoGraphDeployment{}
	if err := beta.ConvertFrom(dgd.DeepCopy()); err != nil {
		return nil
	}
	return beta
}

func betaOnlyComponentFields(path string, c *v1beta1.DynamoComponentDeploymentSharedSpec, why string) []string {
	e := c.Experimental
	if e == nil {
		e = &v1beta1.ExperimentalSpec{}
	}
	g := e.GPUMemoryService
	if g == nil {
		g = &v1beta1.GPUMemoryServiceSpec{}
	}
	f := e.Failover
	if f == nil {
		f = &v1beta1.FailoverSpec{}
	}
	var out []string
	for field, set := range map[string]bool{
		"providerOverride":        c.ProviderOverride != nil,
		"runtimeVersionOverride":  c.RuntimeVersionOverride != "",
		"globalDynamoNamespace":   c.GlobalDynamoNamespace,
		"minAvailable":            c.MinAvailable != nil,
		"roles":                   len(c.Roles) > 0,
		"dynamoSidecar":           c.DynamoSidecar != nil,
		"experimental.grove":      e.Grove != nil,
		"experimental.checkpoint": e.Checkpoint != nil,
		// The GPU memory service and failover are rendered intra-pod on
		// the default DeviceClass (or resources' gpuType): what else they
		// say is not.
		"experimental.gpuMemoryService.mode":                  g.Mode == v1beta1.GMSModeInterPod,
		"experimental.gpuMemoryService.deviceClassName":       g.DeviceClassName != "" && g.DeviceClassName != render.GMSDefaultDeviceClass,
		"experimental.gpuMemoryService.extraClientContainers": len(g.ExtraClientContainers) > 0,
		"experimental.failover.mode":                          f.Mode == v1beta1.GMSModeInterPod,
	} {
		if set {
			out = append(out, path+"."+field+why)
		}
	}
	return out
}

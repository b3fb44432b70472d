package controllers

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamoctl/dynamo-operator/operator/children"
)

// TestCacheOptionsFromChildren: the cache holds the built-in child kinds by
// the operator's label, pods by their component's, and leaves out the
// kinds whose API a cluster may lack and the Secrets.
func TestCacheOptionsFromChildren(t *testing.T) {
	got := map[string]string{}
	for obj, by := range CacheOptions().ByObject {
		got[fmtType(obj)] = by.Label.String()
	}
	managed := "app.kubernetes.io/managed-by=dynamo-operator"
	want := map[string]string{
		"*v1.Deployment":            managed,
		"*v1.Service":               managed,
		"*v1.Ingress":               managed,
		"*v1.ResourceClaimTemplate": managed,
		"*v1.ConfigMap":             managed,
		"*v1.PersistentVolumeClaim": managed,
		"*v1.Job":                   managed,
		"*v1.ServiceAccount":        managed,
		"*v1.Role":                  managed,
		"*v1.RoleBinding":           managed,
		"*v1.Pod":                   "nvidia.com/dynamo-component",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("cache ByObject label selectors by type (-want +got):\n%s", d)
	}
}

// TestWatchesFromChildren: each controller watches, through Owns, the
// children it owns that the cache holds, and the others once served.
func TestWatchesFromChildren(t *testing.T) {
	got := map[string][]string{}
	for name, owner := range map[string]children.Owner{"graph": children.OwnedByGraph, "component": children.OwnedByComponent} {
		for _, k := range children.Kinds() {
			switch {
			case k.Watched(owner):
				got[name+" owns"] = append(got[name+" owns"], k.GVK.Kind)
			case k.WatchedOnceServed(owner):
				got[name+" once served"] = append(got[name+" once served"], k.GVK.Kind)
			}
		}
	}
	want := map[string][]string{
		"graph owns":            {"DynamoComponentDeployment", "DynamoGraphDeploymentScalingAdapter", "ServiceAccount", "Role", "RoleBinding"},
		"component owns":        {"Deployment", "Service", "Ingress", "ResourceClaimTemplate", "ConfigMap", "ServiceAccount", "Role", "RoleBinding"},
		"component once served": {"LeaderWorkerSet", "PodGroup", "VirtualService"},
		"graph once served":     {"InferencePool"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("watched kinds (-want +got):\n%s", d)
	}
}

func fmtType(obj any) string { return fmt.Sprintf("%T", obj) }

package charttest

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynamoctl/dynamo-operator/operator/children"
)

// checkChildRights: the roles bound to the operator's ServiceAccount grant
// every verb the children table (operator/children) says the operator needs
// on each child kind, on the whole resource (not by name): a kind added to
// the table without its rule in the chart fails here, before any install.
func checkChildRights(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	rules := boundRules(objs, operatorServiceAccount(t, objs))
	for _, k := range children.Kinds() {
		for _, verb := range k.Verbs {
			if !granted(rules, k.GVK.Group, k.Resource, verb) {
				t.Errorf("the operator's roles do not grant %s on %s (group %q), which it needs on its %ss (operator/children)",
					verb, k.Resource, k.GVK.Group, k.GVK.Kind)
			}
		}
	}
}

// operatorServiceAccount is the name of the ServiceAccount the manager's pod
// runs as.
func operatorServiceAccount(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	sa, _, _ := unstructured.NestedString(find(objs, "Deployment", "").Object, "spec", "template", "spec", "serviceAccountName")
	if sa == "" {
		t.Fatal("the manager's pod names no ServiceAccount")
	}
	return sa
}

// boundRules are the rules of the Roles and ClusterRoles that objs bind to
// the ServiceAccount sa.
func boundRules(objs []*unstructured.Unstructured, sa string) []map[string]any {
	bound := map[string]bool{} // "<role kind>/<name>"
	for _, o := range objs {
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if m := s.(map[string]any); m["kind"] == "ServiceAccount" && m["name"] == sa {
				kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
				name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
				bound[kind+"/"+name] = true
			}
		}
	}
	var rules []map[string]any
	for _, o := range objs {
		if (o.GetKind() == "Role" || o.GetKind() == "ClusterRole") && bound[o.GetKind()+"/"+o.GetName()] {
			rs, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rs {
				rules = append(rules, r.(map[string]any))
			}
		}
	}
	return rules
}

// granted says whether one of rules grants verb on every object of
// resource in group.
func granted(rules []map[string]any, group, resource, verb string) bool {
	for _, r := range rules {
		groups, _, _ := unstructured.NestedStringSlice(r, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(r, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(r, "verbs")
		names, _, _ := unstructured.NestedStringSlice(r, "resourceNames")
		if len(names) == 0 && slices.Contains(groups, group) && slices.Contains(resources, resource) && slices.Contains(verbs, verb) {
			return true
		}
	}
	return false
}

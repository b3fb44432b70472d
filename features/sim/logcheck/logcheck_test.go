package logcheck

import "testing"

func TestRBACRefusal(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		refused    bool
	}{
		{"a lease refused (zap JSON, quotes escaped)", `{"level":"error","logger":"leaderelection","msg":"Error retrieving lease lock","error":"leases.coordination.k8s.io \"dynamo-operator-leader\" is forbidden: User \"system:serviceaccount:dynamo-system:dynamo-platform-dynamo-operator\" cannot get resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"dynamo-system\""}`, true},
		{"a Role granting what the operator lacks", `{"level":"error","msg":"Reconciler error","error":"applying Role g-k8s-service-discovery-role: roles.rbac.authorization.k8s.io \"g-k8s-service-discovery-role\" is forbidden: user \"system:serviceaccount:dynamo-system:op\" (groups=[\"system:serviceaccounts\"]) is attempting to grant RBAC permissions not currently held"}`, true},
		{"plain text", `E1123 leaderelection.go:448] error retrieving resource lock x/y: leases.coordination.k8s.io "y" is forbidden: User "system:serviceaccount:x:op" cannot get resource "leases"`, true},
		{"a write into a terminating namespace", `{"level":"error","error":"deployments.apps \"a\" is forbidden: unable to create new content in namespace n because it is being terminated"}`, false},
		{"a pod refusal reported in a graph's status", `{"level":"info","msg":"graph state changed","message":"cannot create pods: pods \"g-decode-5f6\" is forbidden: error looking up service account n/g-k8s-service-discovery: serviceaccount \"g-k8s-service-discovery\" not found"}`, false},
		{"the ReplicaSet controller refused, as reported", `{"level":"info","msg":"graph state changed","message":"cannot create pods: pods \"x\" is forbidden: User \"system:serviceaccount:kube-system:replicaset-controller\" cannot create resource \"pods\""}`, false},
		{"the word alone", `{"level":"info","msg":"a service named forbidden-fruit"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := RBACRefusal(tc.line)
			if got := at >= 0; got != tc.refused {
				t.Errorf("RBACRefusal = %d, want refused %v", at, tc.refused)
			}
			if at >= 0 && Excerpt(tc.line, at, 20) == "" {
				t.Error("empty excerpt")
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	if got := Excerpt("0123456789", 5, 2); got != "...3456..." {
		t.Errorf("Excerpt = %q", got)
	}
	if got := Excerpt("0123456789", 1, 20); got != "0123456789" {
		t.Errorf("Excerpt = %q", got)
	}
}

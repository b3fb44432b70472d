package charttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

// securityRenderings are the value sets whose operator pod the security
// tests check: each changes the pod (volumes, init container, images).
var securityRenderings = map[string][]string{
	"cluster-wide defaults": nil,
	"namespace-scoped":      {"--set", "dynamo-operator.namespaceRestriction.enabled=true"},
	"cert-manager":          {"--set", "dynamo-operator.webhook.certManager.enabled=true"},
	"every optional value":  {"--values", everythingOn},
}

// TestPodSecurityRestrictedAdmitsOperatorPod: the API server's PodSecurity
// admission, enforcing the restricted standard in the namespace, admits
// the operator pod the chart renders (its Deployment's pod template,
// created as a Pod with dry run: what the ReplicaSet controller would
// create). A pod with the containers' securityContext taken away is
// refused, so the namespace does enforce.
func TestPodSecurityRestrictedAdmitsOperatorPod(t *testing.T) {
	h := newHelm(t)
	for name, flags := range securityRenderings {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ns := restrictedNamespace(t)
			tmpl := deployment(t, h.template("dynamo-platform", ns, flags...)).Spec.Template
			pod := builders.MakePod("dynamo-operator", ns).Template(tmpl).Obj()
			if err := env.Client.Create(ctx, pod, client.DryRunAll); err != nil {
				t.Errorf("the restricted namespace refuses the operator pod: %v", err)
			}

			unrestricted := builders.MakePod("unrestricted", ns).Template(tmpl).Obj()
			for i := range unrestricted.Spec.Containers {
				unrestricted.Spec.Containers[i].SecurityContext = nil
			}
			err := env.Client.Create(ctx, unrestricted, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
				t.Errorf("a pod without the containers' securityContext: got %v, want refused by PodSecurity", err)
			}
		})
	}
}

// restrictedNamespace is a new namespace that enforces the restricted Pod
// Security Standard.
func restrictedNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t, "restricted")
	obj := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, obj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	obj.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	if err := env.Client.Patch(ctx, obj, patch); err != nil {
		t.Fatal(err)
	}
	return ns
}

// TestOpenShiftRestrictedV2 checks the rendered operator pod against the
// rules of OpenShift's restricted-v2 SecurityContextConstraints, the SCC
// every authenticated user's pods get: no way to test on OpenShift here,
// so the rules are written out (restrictedV2Violations) and each is shown
// to catch what it forbids.
func TestOpenShiftRestrictedV2(t *testing.T) {
	h := newHelm(t)
	var rendered corev1.PodSpec
	for name, flags := range securityRenderings {
		spec := deployment(t, h.template("dynamo-platform", "dynamo-system", flags...)).Spec.Template.Spec
		if v := restrictedV2Violations(spec); len(v) > 0 {
			t.Errorf("%s: restricted-v2 refuses the operator pod: %v", name, v)
		}
		if name == "cluster-wide defaults" {
			rendered = spec
		}
	}

	// Each rule, broken on its own in the rendered pod.
	for name, tc := range map[string]struct {
		breaks func(*corev1.PodSpec)
		want   string
	}{
		"a fixed runAsUser": {func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.RunAsUser = ptr.To[int64](65532) },
			"container manager: runAsUser 65532"},
		"a pod runAsUser": {func(s *corev1.PodSpec) { s.SecurityContext.RunAsUser = ptr.To[int64](0) }, "pod: runAsUser 0"},
		"an fsGroup":      {func(s *corev1.PodSpec) { s.SecurityContext.FSGroup = ptr.To[int64](2000) }, "pod: fsGroup 2000"},
		"privilege escalation": {func(s *corev1.PodSpec) { s.InitContainers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true) },
			"container apply-crds: allowPrivilegeEscalation"},
		"privileged": {func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Privileged = ptr.To(true) }, "container manager: privileged"},
		"capabilities not dropped": {func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Capabilities = nil },
			"container manager: capabilities.drop lacks ALL"},
		"a capability added": {func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		}, "container manager: capability NET_ADMIN"},
		"no seccomp profile": {func(s *corev1.PodSpec) {
			s.SecurityContext.SeccompProfile = nil
			s.Containers[0].SecurityContext.SeccompProfile = nil
		}, "container manager: seccompProfile"},
		"an SELinux level": {func(s *corev1.PodSpec) { s.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c1,c2"} },
			"pod: seLinuxOptions"},
		"a hostPath volume": {func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, "volume host: hostPath"},
		"the host network": {func(s *corev1.PodSpec) { s.HostNetwork = true }, "pod: host namespaces"},
		"a host port": {func(s *corev1.PodSpec) { s.Containers[0].Ports[0].HostPort = 8081 },
			"container manager: hostPort 8081"},
	} {
		spec := rendered.DeepCopy()
		tc.breaks(spec)
		if v := restrictedV2Violations(*spec); !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, tc.want) }) {
			t.Errorf("%s: violations %v, want one saying %q", name, v, tc.want)
		}
	}
}

// restrictedV2Volumes are the volume types restricted-v2 allows.
var restrictedV2Volumes = []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}

// restrictedV2Violations lists what OpenShift's restricted-v2 SCC refuses
// in spec, or would change: runAsUser MustRunAsRange and fsGroup MustRunAs
// with the namespace's range, unknown to the chart (so none may be fixed),
// seLinuxContext MustRunAs (the namespace's level), privileged and host
// namespaces, ports and paths off, allowPrivilegeEscalation false,
// capabilities dropped ALL with at most NET_BIND_SERVICE added, seccomp
// runtime/default, and the volume types above.
func restrictedV2Violations(spec corev1.PodSpec) []string {
	var v []string
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		v = append(v, "pod: host namespaces")
	}
	podSeccomp := false
	if psc := spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			v = append(v, fmt.Sprintf("pod: runAsUser %d outside the namespace's range (leave it unset)", *psc.RunAsUser))
		}
		if psc.FSGroup != nil {
			v = append(v, fmt.Sprintf("pod: fsGroup %d outside the namespace's range (leave it unset)", *psc.FSGroup))
		}
		if psc.SELinuxOptions != nil {
			v = append(v, "pod: seLinuxOptions (the namespace's level is assigned)")
		}
		podSeccomp = psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
	}
	for _, vol := range spec.Volumes {
		src := vol.VolumeSource
		set := map[string]bool{"configMap": src.ConfigMap != nil, "csi": src.CSI != nil, "downwardAPI": src.DownwardAPI != nil,
			"emptyDir": src.EmptyDir != nil, "ephemeral": src.Ephemeral != nil, "persistentVolumeClaim": src.PersistentVolumeClaim != nil,
			"projected": src.Projected != nil, "secret": src.Secret != nil}
		if !slices.ContainsFunc(restrictedV2Volumes, func(t string) bool { return set[t] }) {
			kind := "another type"
			if src.HostPath != nil {
				kind = "hostPath"
			}
			v = append(v, fmt.Sprintf("volume %s: %s, not one of %v", vol.Name, kind, restrictedV2Volumes))
		}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		at := "container " + c.Name + ": "
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				v = append(v, fmt.Sprintf("%shostPort %d", at, p.HostPort))
			}
		}
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if sc.Privileged != nil && *sc.Privileged {
			v = append(v, at+"privileged")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			v = append(v, at+"allowPrivilegeEscalation not false")
		}
		if sc.RunAsUser != nil {
			v = append(v, fmt.Sprintf("%srunAsUser %d outside the namespace's range (leave it unset)", at, *sc.RunAsUser))
		}
		if sc.SELinuxOptions != nil {
			v = append(v, at+"seLinuxOptions (the namespace's level is assigned)")
		}
		if caps := sc.Capabilities; caps == nil || !slices.Contains(caps.Drop, "ALL") {
			v = append(v, at+"capabilities.drop lacks ALL")
		} else {
			for _, a := range caps.Add {
				if a != "NET_BIND_SERVICE" {
					v = append(v, fmt.Sprintf("%scapability %s added (only NET_BIND_SERVICE may be)", at, a))
				}
			}
		}
		seccomp := podSeccomp
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
		}
		if !seccomp {
			v = append(v, at+"seccompProfile not RuntimeDefault")
		}
	}
	return v
}

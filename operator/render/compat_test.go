package render

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/compat"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// compatDir holds the manifests Dynamo's users run, relative to this
// package's directory (the working directory of its tests).
const compatDir = "../../../shared/compat"

// compatGraph is one DynamoGraphDeployment document of a compat manifest.
type compatGraph struct {
	file string
	doc  []byte
}

func compatGraphs(t *testing.T) []compatGraph {
	t.Helper()
	docs, err := compat.Documents(compatDir)
	if err != nil {
		t.Fatal(err)
	}
	var graphs []compatGraph
	for _, d := range docs {
		if d.Kind == "DynamoGraphDeployment" {
			graphs = append(graphs, compatGraph{file: d.File, doc: d.Raw})
		}
	}
	if len(graphs) == 0 {
		t.Fatalf("no DynamoGraphDeployment documents under %s", compatDir)
	}
	return graphs
}

// TestCompatManifests renders every user manifest and checks that the main
// container of each service runs what the manifest wrote. The expectations
// are read from the YAML as plain data, not through the API types, so a
// field the types drop would show up here too.
func TestCompatManifests(t *testing.T) {
	graphs := compatGraphs(t)
	files := map[string]bool{}
	for _, g := range graphs {
		files[g.file] = true
		var dgd v1alpha1.DynamoGraphDeployment
		if err := yaml.UnmarshalStrict(g.doc, &dgd); err != nil {
			t.Errorf("%s: decoding: %v", g.file, err)
			continue
		}
		t.Run(g.file+"/"+dgd.Name, func(t *testing.T) {
			if dgd.Namespace == "" {
				dgd.Namespace = "compat"
			}
			var raw struct {
				Spec struct {
					Envs     []any          `json:"envs"`
					Services map[string]any `json:"services"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(g.doc, &raw); err != nil {
				t.Fatal(err)
			}
			checkCompatGraph(t, &dgd, raw.Spec.Envs, raw.Spec.Services)
		})
	}
	t.Logf("rendered %d DynamoGraphDeployments from %d manifests", len(graphs), len(files))
}

func checkCompatGraph(t *testing.T, dgd *v1alpha1.DynamoGraphDeployment, globalEnv []any, services map[string]any) {
	dcds, err := Components(dgd)
	if err != nil {
		t.Fatalf("Components: %v", err)
	}
	if len(dcds) != len(services) {
		t.Fatalf("%d components for %d services", len(dcds), len(services))
	}
	PVCs(dgd)
	o := Options{NATSAddr: "nats://nats:4222", EtcdAddr: "http://etcd:2379"}
	for _, dcd := range dcds {
		name := dcd.Spec.ServiceName
		svc, _ := services[name].(map[string]any)
		if svc == nil {
			t.Errorf("component %s: no service %q in the manifest", dcd.Name, name)
			continue
		}
		if IsMultinode(dcd) {
			lws, err := LeaderWorkerSet(dcd, dgd.Spec.PVCs, o)
			if err != nil {
				t.Errorf("service %s: LeaderWorkerSet: %v", name, err)
			} else if again, _ := LeaderWorkerSet(dcd, dgd.Spec.PVCs, o); mustJSON(t, again) != mustJSON(t, lws) {
				t.Errorf("service %s: two renders differ", name)
			}
			continue
		}
		d, err := Deployment(dcd, dgd.Spec.PVCs, o)
		if err != nil {
			t.Errorf("service %s: Deployment: %v", name, err)
			continue
		}
		if again, _ := Deployment(dcd, dgd.Spec.PVCs, o); mustJSON(t, again) != mustJSON(t, d) {
			t.Errorf("service %s: two renders differ", name)
		}
		for k, v := range d.Spec.Selector.MatchLabels {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("service %s: pod labels %v do not match the selector", name, d.Spec.Template.Labels)
			}
		}
		main := findContainer(d.Spec.Template.Spec.Containers, MainContainerName)
		if _, failover, _ := EngineFeatures(&dcd.Spec.DynamoComponentDeploymentSharedSpec, dcd.Spec.BackendFramework); failover {
			// The active engine is the main container, cloned.
			main = findContainer(d.Spec.Template.Spec.Containers, "engine-0")
		}
		if main == nil {
			t.Errorf("service %s: no main container", name)
			continue
		}
		mc := lookup(svc, "extraPodSpec", "mainContainer")

		if want, _ := lookup(mc, "image").(string); main.Image != want {
			t.Errorf("service %s: image %q, manifest %q", name, main.Image, want)
		}
		wantCommand, wantArgs := stringList(lookup(mc, "command")), stringList(lookup(mc, "args"))
		if c := contractOf(dcd.Spec.ComponentType); len(wantCommand) == 0 && len(wantArgs) == 0 && c.command != nil {
			// The component type's default process, as upstream renders it.
			wantCommand, wantArgs = c.command, c.args
		}
		if len(wantCommand) == 0 && len(wantArgs) == 0 && usesEPPConfig(&dcd.Spec.DynamoComponentDeploymentSharedSpec) {
			// The configured endpoint picker's flags, as upstream.
			wantArgs = eppArgs(dcd)
		}
		if diff := cmp.Diff(wantCommand, main.Command); diff != "" {
			t.Errorf("service %s: command (-manifest +rendered):\n%s", name, diff)
		}
		if diff := cmp.Diff(wantArgs, main.Args); diff != "" {
			t.Errorf("service %s: args (-manifest +rendered):\n%s", name, diff)
		}

		gpu := main.Resources.Limits[corev1.ResourceName(v1alpha1.DefaultGPUType)]
		gpuRequest := main.Resources.Requests[corev1.ResourceName(v1alpha1.DefaultGPUType)]
		if tmpl := GMSResourceClaimTemplate(dcd); tmpl != nil {
			// The GPUs are claimed through DRA, shared by the pod's
			// containers, instead of asked for as a resource.
			gpu = *resource.NewQuantity(tmpl.Spec.Spec.Devices.Requests[0].Exactly.Count, resource.DecimalSI)
			if n := len(main.Resources.Claims); n != 1 || !gpuRequest.IsZero() {
				t.Errorf("service %s: %d claims and GPU request %s, want the shared claim alone", name, n, gpuRequest.String())
			}
			gpuRequest = gpu
		}
		if want, ok := lookup(svc, "resources", "limits", "gpu").(string); ok {
			if gpu.String() != want {
				t.Errorf("service %s: limits[%s] %s, manifest %s", name, v1alpha1.DefaultGPUType, gpu.String(), want)
			}
			if gpuRequest.Cmp(gpu) != 0 {
				t.Errorf("service %s: GPU request %s differs from the limit %s", name, gpuRequest.String(), gpu.String())
			}
		} else if lookup(svc, "resources", "requests", "gpu") == nil && !gpu.IsZero() {
			t.Errorf("service %s: limits[%s] %s, manifest asks for no GPU", name, v1alpha1.DefaultGPUType, gpu.String())
		}

		// Precedence, lowest first: global, service, mainContainer.
		want := map[string]corev1.EnvVar{}
		for _, list := range [][]any{globalEnv, anys(svc["envs"]), anys(lookup(mc, "env"))} {
			for _, e := range envVars(t, list) {
				want[e.Name] = e
			}
		}
		for _, envName := range slices.Sorted(maps.Keys(want)) {
			var have *corev1.EnvVar
			for i := range main.Env {
				if main.Env[i].Name == envName {
					have = &main.Env[i]
				}
			}
			if diff := cmp.Diff(ptr.To(want[envName]), have); diff != "" {
				t.Errorf("service %s: env %s (-manifest +rendered):\n%s", name, envName, diff)
			}
		}

		if svc := Service(dcd); svc == nil || len(svc.Spec.Ports) == 0 {
			t.Errorf("service %s: Service %+v", name, svc)
		}
		if ms := ModelService(dcd); (ms != nil) != (dcd.Spec.ModelRef != nil) {
			t.Errorf("service %s: model Service %+v for modelRef %+v", name, ms, dcd.Spec.ModelRef)
		}
		Ingress(dcd)
	}
}

// lookup walks nested maps of decoded YAML; nil when a key is missing.
func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func anys(v any) []any {
	list, _ := v.([]any)
	return list
}

// stringList converts a decoded YAML list of strings; nil for none.
func stringList(v any) []string {
	var out []string
	for _, e := range anys(v) {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func envVars(t *testing.T, list []any) []corev1.EnvVar {
	t.Helper()
	if len(list) == 0 {
		return nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var env []corev1.EnvVar
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// TestCompatManifestsCoverMainFeatures guards the table test against a
// shrinking corpus: the features it exists to check must stay covered.
func TestCompatManifestsCoverMainFeatures(t *testing.T) {
	var all bytes.Buffer
	for _, g := range compatGraphs(t) {
		all.Write(g.doc)
	}
	for _, feature := range []string{"mainContainer", "gpu:", "envs:", "valueFrom", "volumeMounts", "multinode", "frontendSidecar", "resourceClaims", "modelRef"} {
		if !bytes.Contains(all.Bytes(), []byte(feature)) {
			t.Errorf("no compat manifest uses %s", feature)
		}
	}
}

package gitops

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/crds"
)

var update = flag.Bool("update", false, "rewrite argocd/argocd-cm.yaml from argocd/health.lua")

const snippetPath = "argocd/argocd-cm.yaml"

// health is what an Argo CD health script returns.
type health struct {
	Status  string
	Message string
}

// want is how both tools read a captured object.
type want struct {
	ArgoCD  health
	KStatus status.Status
}

// captured lists every object in testdata/ (captured from the simulator by
// testdata/capture.sh) with how Argo CD, through the script, and kstatus
// (Flux) read it. Both tools agree on Healthy/Current and on
// Progressing/InProgress. Where something fails now (a component's pod, a
// worker refusing an adapter) Argo CD reads Degraded, as it reads a failing
// Pod, and kstatus a rollout still in progress, until the operator says
// Stalled (for a pod, once the progress deadline passed), which both read
// as failed.
var captured = map[string]want{
	// Graphs.
	"dgd-healthy-v1alpha1": {
		ArgoCD:  health{"Healthy", "all 3 components are available"},
		KStatus: status.CurrentStatus,
	},
	"dgd-healthy-v1beta1": {
		ArgoCD:  health{"Healthy", "all 3 components are available"},
		KStatus: status.CurrentStatus,
	},
	"dgd-created-v1beta1": {
		ArgoCD:  health{"Progressing", "Waiting for the operator to observe generation 1"},
		KStatus: status.InProgressStatus,
	},
	"dgd-pending-v1alpha1": {
		ArgoCD:  health{"Progressing", "waiting for VllmDecodeWorker (0 of 1 replicas available)"},
		KStatus: status.InProgressStatus,
	},
	"dgd-unobserved-v1alpha1": {
		ArgoCD:  health{"Progressing", "Waiting for the operator to observe generation 2"},
		KStatus: status.InProgressStatus,
	},
	"dgd-component-failing-v1alpha1": {
		ArgoCD:  health{"Progressing", `waiting for Frontend (1 old replicas still running; pod vllm-disagg-frontend-54c56748d8-7l5k8 cannot start container main: secret "hf-token" not found)`},
		KStatus: status.InProgressStatus,
	},
	"dgd-stalled-v1beta1": {
		ArgoCD:  health{"Degraded", `Frontend: 1 old replicas still running; pod vllm-disagg-frontend-54c56748d8-7l5k8 cannot start container main: secret "hf-token" not found; the rollout made no progress within its progressDeadlineSeconds`},
		KStatus: status.FailedStatus,
	},
	// A graph whose own image cannot be built has no component to stall,
	// and the operator sets no Stalled condition on it: kstatus reads it as
	// in progress, while state failed tells Argo CD.
	"dgd-failed-v1beta1": {
		ArgoCD:  health{"Degraded", "the image of DynamoComponent slow--v1 cannot be built: the image build did not finish within imageBuildTimeout 30s (Job default/slow--v1-build-6fb4a21046); raise spec.imageBuildTimeout or delete the Job to retry"},
		KStatus: status.InProgressStatus,
	},
	// Components.
	"dcd-healthy-v1alpha1": {
		ArgoCD:  health{"Healthy", "1 of 1 replicas available"},
		KStatus: status.CurrentStatus,
	},
	"dcd-healthy-v1beta1": {
		ArgoCD:  health{"Healthy", "1 of 1 replicas available"},
		KStatus: status.CurrentStatus,
	},
	"dcd-created-v1beta1": {
		ArgoCD:  health{"Progressing", "Waiting for the operator to observe generation 1"},
		KStatus: status.InProgressStatus,
	},
	"dcd-unobserved-v1alpha1": {
		ArgoCD:  health{"Progressing", "Waiting for the operator to observe generation 2"},
		KStatus: status.InProgressStatus,
	},
	"dcd-unschedulable-v1beta1": {
		ArgoCD: health{"Progressing", "1 of 48 replicas available; pod vllm-disagg-vllmprefillworker-6d8c68f4f8-2dws6 cannot be scheduled: " +
			"0/7 nodes are available: 7 Insufficient nvidia.com/gpu. no new claims to deallocate, preemption: 0/7 nodes are available: " +
			"1 Preemption is not helpful for scheduling, 6 No preemption victims found for incoming pod."},
		KStatus: status.InProgressStatus,
	},
	"dcd-secret-missing-v1beta1": {
		ArgoCD:  health{"Degraded", `1 old replicas still running; pod vllm-disagg-frontend-54c56748d8-7l5k8 cannot start container main: secret "hf-token" not found`},
		KStatus: status.InProgressStatus,
	},
	"dcd-crashloop-v1beta1": {
		ArgoCD:  health{"Degraded", "0 of 1 replicas available; pod vllm-agg-vllmdecodeworker-5648df57f9-8jhjl container main is crash-looping (restarted 5 times; last exit code 1, Error)"},
		KStatus: status.InProgressStatus,
	},
	"dcd-stalled-v1alpha1": {
		ArgoCD:  health{"Degraded", `1 old replicas still running; pod vllm-disagg-frontend-54c56748d8-7l5k8 cannot start container main: secret "hf-token" not found; the rollout made no progress within its progressDeadlineSeconds`},
		KStatus: status.FailedStatus,
	},
	// Image builds.
	"dc-image-given": {
		ArgoCD:  health{"Healthy", "spec.image is set; nothing is built"},
		KStatus: status.CurrentStatus,
	},
	"dc-building": {
		ArgoCD:  health{"Progressing", "building dynamo-components:slow-v1 in Job default/slow--v1-build-6fb4a21046"},
		KStatus: status.InProgressStatus,
	},
	"dc-timed-out": {
		ArgoCD:  health{"Degraded", "the image build did not finish within imageBuildTimeout 30s (Job default/slow--v1-build-6fb4a21046); raise spec.imageBuildTimeout or delete the Job to retry"},
		KStatus: status.FailedStatus,
	},
	// Models.
	"dm-loaded": {
		ArgoCD:  health{"Healthy", "adapter codelion/Qwen3-0.6B-accuracy-recovery-lora loaded on all 1 endpoints"},
		KStatus: status.CurrentStatus,
	},
	"dm-no-endpoints": {
		ArgoCD:  health{"Progressing", `no Ready pod serves the base model Qwen/Qwen3-32B: a service with modelRef.name "Qwen/Qwen3-32B" in namespace default has none`},
		KStatus: status.InProgressStatus,
	},
	"dm-load-failed": {
		ArgoCD: health{"Degraded", "adapter team/refused-lora loaded on 0 of 1 endpoints; failing, retried with backoff: " +
			"vllm-agg-lora-vllmdecodeworker-59896c66f9-w7cdc (http://10.244.0.8:9090): POST /v1/loras answered 500: " +
			"failed to load LoRA adapter 'team/refused-lora' from s3://my-loras/team/refused-lora: simulated failure"},
		KStatus: status.InProgressStatus,
	},
}

// TestCapturedObjects evaluates the script as argocd-cm.yaml carries it,
// picked by the object's kind under the key Argo CD looks up, and
// kstatus on every captured object.
func TestCapturedObjects(t *testing.T) {
	scripts := snippetScripts(t)
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			w, ok := captured[name]
			if !ok {
				t.Fatalf("%s is not in the table: say how each tool must read it", file)
			}
			obj := readObject(t, file)
			script, ok := scripts[ConfigMapKey(obj.GetKind())]
			if !ok {
				t.Fatalf("argocd-cm.yaml has no %s", ConfigMapKey(obj.GetKind()))
			}
			argo, err := argoCDHealth(script, obj)
			if err != nil {
				t.Fatal(err)
			}
			ks, err := status.Compute(obj)
			if err != nil {
				t.Fatal(err)
			}
			got := want{ArgoCD: argo, KStatus: ks.Status}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("health (-want +got):\n%s", diff)
			}
		})
	}
	for name := range captured {
		if !seen[name] {
			t.Errorf("testdata/%s.yaml is missing", name)
		}
	}
}

// TestEveryKindHealthyProgressingDegraded: the captures cover each kind
// in each state Argo CD can show for it, in every API version its CRD
// serves.
func TestEveryKindHealthyProgressingDegraded(t *testing.T) {
	states := map[string]map[string]bool{}
	versions := map[string]map[string]bool{}
	for name, w := range captured {
		obj := readObject(t, filepath.Join("testdata", name+".yaml"))
		kind := obj.GetKind()
		if states[kind] == nil {
			states[kind], versions[kind] = map[string]bool{}, map[string]bool{}
		}
		states[kind][w.ArgoCD.Status] = true
		versions[kind][strings.TrimPrefix(obj.GetAPIVersion(), Group+"/")] = true
	}
	served := servedCRDs(t)
	for _, kind := range Kinds {
		for _, s := range []string{"Healthy", "Progressing", "Degraded"} {
			if !states[kind][s] {
				t.Errorf("no captured %s reads %s", kind, s)
			}
		}
		if diff := cmp.Diff(served[kind].versions, versions[kind]); diff != "" {
			t.Errorf("%s: API versions served (-) and captured (+):\n%s", kind, diff)
		}
	}
}

// TestKindsAreTheCRDsWithStatus: the health script is installed for every
// kind of crds/ that has a status, unless WithoutHealth says why not, so a
// new kind cannot ship without either.
func TestKindsAreTheCRDsWithStatus(t *testing.T) {
	var withStatus []string
	for kind, crd := range servedCRDs(t) {
		if _, exempt := WithoutHealth[kind]; crd.status && !exempt {
			withStatus = append(withStatus, kind)
		}
	}
	for kind := range WithoutHealth {
		if slices.Contains(Kinds, kind) {
			t.Errorf("%s has a health check and is listed without one", kind)
		}
	}
	if diff := cmp.Diff(Kinds, withStatus, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("Kinds (-) and the CRDs with a status subresource (+):\n%s", diff)
	}
}

// crd is what the tests need of a CRD in crds/.
type crd struct {
	versions map[string]bool // served
	status   bool            // a version has the status subresource
}

// servedCRDs reads crds/, by kind.
func servedCRDs(t *testing.T) map[string]crd {
	t.Helper()
	files, err := fs.Glob(crds.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]crd{}
	for _, file := range files {
		b, err := crds.FS.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var def apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &def); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		c := crd{versions: map[string]bool{}}
		for _, v := range def.Spec.Versions {
			if v.Served {
				c.versions[v.Name] = true
				c.status = c.status || (v.Subresources != nil && v.Subresources.Status != nil)
			}
		}
		out[def.Spec.Names.Kind] = c
	}
	return out
}

// TestArgoCDConfigMap fails when argocd-cm.yaml is not what the script
// generates (`make argocd-health` rewrites it), and checks that the file,
// read as YAML, carries the script byte for byte under each kind's key.
func TestArgoCDConfigMap(t *testing.T) {
	generated, err := ArgoCDConfigMap()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(snippetPath, generated, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	onDisk, err := os.ReadFile(snippetPath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(generated), string(onDisk)); diff != "" {
		t.Errorf("%s differs from the script; run 'make argocd-health' (-generated +file):\n%s", snippetPath, diff)
	}
	wantData := map[string]string{}
	for _, kind := range Kinds {
		wantData[ConfigMapKey(kind)] = Script()
	}
	if diff := cmp.Diff(wantData, snippetScripts(t)); diff != "" {
		t.Errorf("%s as YAML (-script +data):\n%s", snippetPath, diff)
	}
}

// snippetScripts reads argocd-cm.yaml as Argo CD's ConfigMap.
func snippetScripts(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(snippetPath)
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(b, &cm); err != nil {
		t.Fatalf("%s: %v", snippetPath, err)
	}
	if cm.Kind != "ConfigMap" || cm.Name != "argocd-cm" {
		t.Fatalf("%s is %s %s, not the ConfigMap argocd-cm", snippetPath, cm.Kind, cm.Name)
	}
	return cm.Data
}

// readObject reads a captured object as Argo CD and kstatus get it from
// the API server: unstructured, numbers as int64.
func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return obj
}

// argoCDHealth runs a health script as Argo CD runs one from argocd-cm:
// gopher-lua with only the package, base and table libraries open (no
// string, math or os unless the user opts in), the object as the global
// obj, a one-second deadline, and a returned table whose status must be
// one Argo CD knows.
func argoCDHealth(script string, obj *unstructured.Unstructured) (health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage,
		lua.BaseLibName: lua.OpenBase,
		lua.TabLibName:  lua.OpenTable,
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			return health{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj.Object))
	if err := l.DoString(script); err != nil {
		return health{}, err
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return health{}, fmt.Errorf("the script returned %s, not a table", l.Get(-1).Type())
	}
	var h health
	for field, into := range map[string]*string{"status": &h.Status, "message": &h.Message} {
		switch v := ret.RawGetString(field).(type) {
		case lua.LString:
			*into = string(v)
		case *lua.LNilType:
		default:
			return health{}, fmt.Errorf("hs.%s is a %s, not a string", field, v.Type())
		}
	}
	switch h.Status {
	case "Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown":
		return h, nil
	}
	return health{}, fmt.Errorf("hs.status %q is no status Argo CD knows", h.Status)
}

// toLua converts an object as Argo CD hands it to a script: maps and
// slices as tables, every number (int64 from the API server's JSON) as a
// Lua number.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetString(k, toLua(l, item))
		}
		return t
	}
	return lua.LNil
}

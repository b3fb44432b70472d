// Package charttest tests the dynamo-platform chart against a real
// kube-apiserver (internal/testenv): every documented value combination
// renders and passes a server-side dry run, helm install and uninstall leave
// nothing behind, a second cluster-wide release is refused, and a
// namespace admin can install a namespace-scoped operator whose graphs
// reconcile with only the chart's RBAC. Helm is the pinned CLI
// (tools/helm), run against the test API server: the tests exercise what
// users run, and the operator's module does not take on helm's
// dependencies.
package charttest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary is $HELM, else the pinned helm in .cache/bin (make helm),
// built by tools/helm/build.sh on first use.
func helmBinary(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if p := os.Getenv("HELM"); p != "" {
			helmPath = p
			return
		}
		root, err := testenv.RepoRoot()
		if err != nil {
			helmErr = err
			return
		}
		helmPath = filepath.Join(root, ".cache", "bin", "helm")
		if _, err := os.Stat(helmPath); err == nil {
			return
		}
		cmd := exec.Command(filepath.Join(root, "tools", "helm", "build.sh"), helmPath)
		if out, err := cmd.CombinedOutput(); err != nil {
			helmErr = fmt.Errorf("building the pinned helm: %v\n%s", err, out)
		}
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

func chartDir(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "chart", "dynamo-platform")
}

// helmCLI runs helm against the test API server with a kubeconfig of a
// cluster administrator; extra flags such as --kube-as-user act as another
// user through impersonation.
type helmCLI struct {
	t          *testing.T
	bin        string
	kubeconfig string
	home       string
	// kubeVersion is the test API server's, which helm template (asking
	// no cluster) checks the chart's kubeVersion against.
	kubeVersion string
}

func newHelm(t *testing.T) *helmCLI {
	t.Helper()
	dir := t.TempDir()
	kc, err := env.AdminKubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return &helmCLI{t: t, bin: helmBinary(t), kubeconfig: path, home: dir, kubeVersion: v.GitVersion}
}

// run returns helm's stdout, or an error carrying its stderr.
func (h *helmCLI) run(args ...string) (string, error) {
	h.t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+h.kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"HELM_DATA_HOME="+filepath.Join(h.home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (h *helmCLI) mustRun(args ...string) string {
	h.t.Helper()
	out, err := h.run(args...)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// template renders the chart as release in namespace with the --set values.
func (h *helmCLI) template(release, namespace string, extra ...string) []*unstructured.Unstructured {
	h.t.Helper()
	return decodeObjects(h.t, h.mustRun(h.templateArgs(chartDir(h.t), release, namespace, extra...)...))
}

// templateArgs are the arguments of helm template of the chart in dir as
// release in namespace, for the test API server's Kubernetes version.
func (h *helmCLI) templateArgs(dir, release, namespace string, extra ...string) []string {
	return append([]string{"template", release, dir, "--namespace", namespace, "--kube-version", h.kubeVersion}, extra...)
}

func decodeObjects(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decoding rendered manifest: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			return o
		}
	}
	return nil
}

func kinds(objs []*unstructured.Unstructured) map[string]int {
	m := map[string]int{}
	for _, o := range objs {
		m[o.GetKind()]++
	}
	return m
}

// managerContainer is the manager container of the rendered Deployment.
func managerContainer(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	if c := podContainer(t, objs, "containers", "manager"); c != nil {
		return c
	}
	t.Fatal("no manager container")
	return nil
}

// podContainer is the container name in field (containers,
// initContainers) of the rendered Deployment's pod, or nil.
func podContainer(t *testing.T, objs []*unstructured.Unstructured, field, name string) map[string]any {
	t.Helper()
	d := find(objs, "Deployment", "")
	if d == nil {
		t.Fatal("no Deployment rendered")
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", field)
	for _, c := range cs {
		if m := c.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

func containerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	return argsOf(managerContainer(t, objs))
}

func argsOf(c map[string]any) []string {
	raw, _ := c["args"].([]any)
	args := make([]string, len(raw))
	for i, a := range raw {
		args[i] = a.(string)
	}
	return args
}

// deployment is the rendered operator Deployment, typed.
func deployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	return rendered[appsv1.Deployment](t, objs, "Deployment")
}

// rendered is the first rendered object of kind, typed as T (unknown
// fields refused: the chart must render what the API defines).
func rendered[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) *T {
	t.Helper()
	u := find(objs, kind, "")
	if u == nil {
		t.Fatalf("no %s rendered", kind)
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("the rendered %s: %v", kind, err)
	}
	return out
}

// Package testenv runs a real kube-apiserver and etcd (built by
// tools/build-k8s.sh) with the project's CRDs installed, and hands tests a
// client and a fresh namespace each. One API server serves a whole test
// binary; namespaces keep parallel tests apart.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
)

// Env is a running API server with the project's CRDs installed.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client uses Scheme and strict field validation, as kubectl does, so
	// unknown fields are rejected rather than silently pruned.
	Client client.Client
	// Scheme knows the built-in kinds, CustomResourceDefinitions and the
	// nvidia.com/v1alpha1 and v1beta1 kinds.
	Scheme *runtime.Scheme

	env        *envtest.Environment
	kcm        *controllerManager
	converter  *conversionServer     // nil when Options.Conversion names another
	conversion crdinstall.Conversion // where the CRDs send conversion reviews
	auditLog   string
	tmpDir     string
}

// Options change how an Env starts.
type Options struct {
	// Audit makes the API server log every write, for AuditEvents.
	Audit bool
	// NoGangScheduling starts the API server without the PodGroup API
	// (scheduling.k8s.io/v1alpha2), as Kubernetes serves by default.
	NoGangScheduling bool
	// Conversion, when set, is where the CRDs' conversion webhook points
	// (e.g. the operator `make run` starts); nil: the Env serves
	// conversion itself (see conversion.go).
	Conversion *crdinstall.Conversion
}

// NewScheme returns the operator's own scheme (app.NewScheme): the
// built-in kinds, this project's kinds in both versions, CRDs and
// LeaderWorkerSets. One list of kinds for the operator and its tests.
func NewScheme() *runtime.Scheme {
	s, err := app.NewScheme()
	if err != nil {
		panic(err)
	}
	return s
}

// Start launches etcd and kube-apiserver and installs the project's CRDs
// as the operator does (operator/crdinstall). The binaries
// come from KUBEBUILDER_ASSETS when set, else from tools/build-k8s.sh, which
// builds them on first use.
func Start() (*Env, error) { return StartWith(Options{}) }

// StartWith is Start with options.
func StartWith(o Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := BinaryAssets(root)
	if err != nil {
		return nil, err
	}
	scheme := NewScheme()
	te := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		Scheme:                   scheme,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	tmpDir, err := os.MkdirTemp("", "testenv-")
	if err != nil {
		return nil, err
	}
	// envtest's default Service range is a /24: 254 Services in all.
	te.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/16")
	// Gang scheduling's API, as the simulator serves it (sim/cluster): the
	// operator's PodGroups and its pod webhook are exercised here too.
	if !o.NoGangScheduling {
		te.ControlPlane.GetAPIServer().Configure().
			Set("runtime-config", "scheduling.k8s.io/v1alpha2=true").
			Set("feature-gates", gangFeatureGates)
	}
	var auditLog string
	if o.Audit {
		policy, log, err := auditFiles(tmpDir)
		if err != nil {
			return nil, err
		}
		args := te.ControlPlane.GetAPIServer().Configure()
		args.Set("audit-policy-file", policy)
		args.Set("audit-log-path", log)
		args.Set("audit-log-format", "json")
		args.Set("audit-log-mode", "blocking")
		auditLog = log
	}
	cfg, err := te.Start()
	if err != nil {
		// A start that failed after launching etcd and the API server (the
		// CRDs not served in time) leaves them running otherwise.
		_ = te.Stop()
		_ = os.RemoveAll(tmpDir)
		return nil, fmt.Errorf("starting envtest control plane from %s: %w", assets, err)
	}
	// Tests create many objects at once; the client-go default (5 QPS)
	// would measure the client, not the server.
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = te.Stop()
		return nil, err
	}
	e := &Env{
		Config:   cfg,
		Client:   client.WithFieldValidation(c, metav1.FieldValidationStrict),
		Scheme:   scheme,
		env:      te,
		auditLog: auditLog,
		tmpDir:   tmpDir,
	}
	if err := e.installCRDs(o.Conversion); err != nil {
		_ = e.Stop()
		return nil, err
	}
	if e.kcm, err = startControllerManager(e, assets, !o.NoGangScheduling); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// installCRDs applies the CRDs with their conversion webhook pointing at
// conv, or at a conversion server the Env starts when conv is nil.
func (e *Env) installCRDs(conv *crdinstall.Conversion) error {
	if conv == nil {
		s, err := startConversionServer(e.Scheme, filepath.Join(e.tmpDir, "conversion-certs"))
		if err != nil {
			return err
		}
		e.converter, conv = s, &s.conv
	}
	e.conversion = *conv
	// crdWait: envtest's 10 s for CRDs to be served is too short on a
	// loaded 2-core machine.
	if err := e.ApplyCRDs(context.Background(), e.conversion); err != nil {
		return fmt.Errorf("installing the CRDs: %w", err)
	}
	return nil
}

// ReadCRDs reads the CRDs of dir (every *.yaml, one CRD each), as the
// project generates them into crds/.
func ReadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("testenv: no CRDs in %s", dir)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("testenv: %s: %w", f, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// WithoutConversionWebhook returns crds as a test API server installs them:
// converted by None rather than by the operator's webhook.
// DynamoGraphDeployment and DynamoComponentDeployment are served in
// v1alpha1 (stored) and v1beta1, and converted by the webhook, whose Service
// a test cluster does not have. Discovery prefers v1beta1, so the garbage
// collector lists and watches those kinds in v1beta1; once the API server's
// resources change (a CRD installed or updated), it stops collecting in
// every namespace until all its watches sync, which they never do while
// each conversion fails, and foreground deletions and cascades hang.
// Conversion None only relabels the stored object, which is all the garbage
// collector and the namespace controller need (they read metadata); a test
// of v1beta1 itself points the CRDs at a webhook that converts.
func WithoutConversionWebhook(crds []*apiextensionsv1.CustomResourceDefinition) []*apiextensionsv1.CustomResourceDefinition {
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
	for i, crd := range crds {
		out[i] = crd.DeepCopy()
		if c := crd.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.WebhookConverter {
			out[i].Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		}
	}
	return out
}

// Stop ends the control plane and removes its data directories.
func (e *Env) Stop() error {
	var errs []error
	if e.kcm != nil {
		errs = append(errs, e.kcm.stop())
	}
	errs = append(errs, e.env.Stop())
	// Last: the API server may convert until it stops.
	if e.converter != nil {
		e.converter.stop()
	}
	errs = append(errs, os.RemoveAll(e.tmpDir))
	return errors.Join(errs...)
}

// Namespace creates a namespace for one test and deletes it when the test
// ends. Its name starts with the given prefix.
func (e *Env) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ns, err := e.CreateNamespace(context.Background(), prefix)
	if err != nil {
		t.Fatalf("creating test namespace: %v", err)
	}
	t.Cleanup(func() { e.DeleteNamespace(context.Background(), ns) })
	return ns
}

// CreateNamespace creates a namespace with a unique name starting with prefix.
func (e *Env) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: NamespacePrefix(prefix) + "-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

// DeleteNamespace deletes a namespace; the namespace controller of the
// Env's controller manager then deletes everything in it.
func (e *Env) DeleteNamespace(ctx context.Context, ns string) {
	err := e.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "testenv: deleting namespace %s: %v\n", ns, err)
	}
}

// NamespacePrefix turns a test or scenario name into a DNS-1123 label
// prefix for a generated namespace name.
func NamespacePrefix(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 40 {
		out = strings.TrimRight(out[:40], "-")
	}
	if out == "" {
		out = "test"
	}
	return out
}

// RepoRoot finds the repository root: the nearest parent holding go.mod with
// this project's module path.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/dynamoctl/dynamo-operator\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testenv: no go.mod of github.com/dynamoctl/dynamo-operator above the working directory")
		}
		dir = parent
	}
}

var (
	buildOnce   sync.Once
	buildDir    string
	buildErr    error
	buildOutput strings.Builder
)

// BinaryAssets returns the directory holding etcd and kube-apiserver:
// KUBEBUILDER_ASSETS when set, else the output of tools/build-k8s.sh.
func BinaryAssets(root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	buildOnce.Do(func() {
		cmd := exec.Command(filepath.Join(root, "tools", "build-k8s.sh"))
		cmd.Stderr = &buildOutput
		out, err := cmd.Output()
		if err != nil {
			buildErr = fmt.Errorf("tools/build-k8s.sh: %w\n%s", err, buildOutput.String())
			return
		}
		buildDir = strings.TrimSpace(string(out))
	})
	return buildDir, buildErr
}

// Run is a TestMain body: it starts one Env for the test binary, hands it to
// use, runs the tests and stops the Env whatever they did. It returns the
// exit code for os.Exit.
func Run(m *testing.M, use func(*Env)) int { return RunWith(m, Options{}, use) }

// RunWith is Run with an Env started with o.
func RunWith(m *testing.M, o Options, use func(*Env)) int {
	env, err := StartWith(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	use(env)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping control plane: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// AdminKubeConfig returns a kubeconfig of a cluster administrator, for
// programs run against the Env (the operator, kubectl).
func (e *Env) AdminKubeConfig() ([]byte, error) {
	return e.KubeConfigFor(envtest.User{Name: "dynamo-admin", Groups: []string{"system:masters"}})
}

// KubeConfigFor returns a kubeconfig authenticating as user, so that a
// program's requests can be told apart in the audit log.
func (e *Env) KubeConfigFor(user envtest.User) ([]byte, error) {
	u, err := e.env.AddUser(user, nil)
	if err != nil {
		return nil, err
	}
	return u.KubeConfig()
}

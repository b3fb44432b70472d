package render

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The pod contract of Dynamo's runtime: what a process of each component type
// reads from its pod (env), where it listens (ports), and how the kubelet
// learns that it is alive and can serve (probes). The values are those
// Dynamo's own operator renders (deploy/operator/internal/dynamo/component_*.go
// at the version of ../shared/migration/children.yaml); the differences we
// keep on purpose are listed in the package documentation (doc.go).

// Ports of the runtime besides HTTP and system.
const (
	NixlPortName           = "nixl"
	NixlPort               = 19090
	PlannerMetricsPortName = "metrics"
	PlannerMetricsPort     = 9085
)

// Pod-wide settings every component gets.
const (
	// terminationGracePeriodSeconds lets a worker finish its in-flight
	// requests and deregister before it is killed.
	terminationGracePeriodSeconds = 60
	// podFSGroup makes mounted volumes (model caches) writable by the
	// runtime images' non-root user.
	podFSGroup = 1000
)

// Discovery: which backend the runtime finds its peers with. Kubernetes
// discovery (the default, as upstream) needs the per-graph ServiceAccount and
// Role of DiscoveryRBAC; etcd discovery needs ETCD_ENDPOINTS instead.
const (
	// AnnotationDiscoveryBackend on a graph or component selects "etcd"
	// instead of the default "kubernetes", as in Dynamo's operator.
	AnnotationDiscoveryBackend = "nvidia.com/dynamo-discovery-backend"
	DiscoveryKubernetes        = "kubernetes"
	DiscoveryEtcd              = "etcd"

	LabelDiscoveryBackend = "nvidia.com/dynamo-discovery-backend"
	LabelDiscoveryEnabled = "nvidia.com/dynamo-discovery-enabled"
	// LabelMetricsEnabled is what Dynamo's PodMonitors select.
	LabelMetricsEnabled = "nvidia.com/metrics-enabled"
	// LabelDynamoNamespace carries the runtime namespace (DYN_NAMESPACE).
	LabelDynamoNamespace = "nvidia.com/dynamo-namespace"
	// LabelWorkerHash carries the graph's worker hash (see WorkerHash).
	LabelWorkerHash = "nvidia.com/dynamo-worker-hash"
)

// contract is the runtime's pod contract for one component type.
type contract struct {
	// worker marks the GPU engines (worker, prefill, decode): they get the
	// graph's worker hash as DYN_NAMESPACE_WORKER_SUFFIX.
	worker bool
	// httpPort: the OpenAI HTTP port is the component's first port and its
	// probes' port.
	httpPort bool
	// ports besides system (and http), in order.
	ports []corev1.ContainerPort
	// env besides the common runtime env (runtimeEnv).
	env func(c contractContext) []corev1.EnvVar
	// command and args when the user gives neither.
	command, args []string
	// Default probes; nil for none. A user's probe with a handler replaces
	// one, a user's probe without a handler is laid over it.
	startup, liveness, readiness *corev1.Probe
}

// contractContext is what a contract's env depends on.
type contractContext struct {
	dynamoNamespace string
	workerHash      string
}

// contracts is the one table of component types with behaviour. Any other
// componentType (including none, "default" and values such as "main") gets
// genericContract. A new type is one entry here.
var contracts = map[v1alpha1.ComponentType]contract{
	v1alpha1.ComponentTypeFrontend: {
		httpPort: true,
		command:  []string{"python3"},
		args:     []string{"-m", "dynamo.frontend"},
		env: func(c contractContext) []corev1.EnvVar {
			port := strconv.Itoa(HTTPPort)
			return []corev1.EnvVar{
				{Name: "DYNAMO_PORT", Value: port},
				{Name: "DYN_HTTP_PORT", Value: port},
				// The frontend finds workers in every runtime namespace
				// with this prefix, so it sees workers of both hashes
				// during a rollout.
				{Name: "DYN_NAMESPACE_PREFIX", Value: c.dynamoNamespace},
			}
		},
		// The frontend serves within seconds of starting; it has no startup
		// probe, as upstream at the compared version.
		liveness:  httpProbe("/live", HTTPPortName, 15, 10, 1, 3),
		readiness: httpProbe("/health", HTTPPortName, 10, 10, 3, 3),
	},
	v1alpha1.ComponentTypeWorker:  workerContract,
	v1alpha1.ComponentTypePrefill: workerContract,
	v1alpha1.ComponentTypeDecode:  workerContract,
	v1alpha1.ComponentTypePlanner: {
		ports: []corev1.ContainerPort{{Name: PlannerMetricsPortName, ContainerPort: PlannerMetricsPort, Protocol: corev1.ProtocolTCP}},
		env: func(contractContext) []corev1.EnvVar {
			return []corev1.EnvVar{{Name: "PLANNER_PROMETHEUS_PORT", Value: strconv.Itoa(PlannerMetricsPort)}}
		},
		// The planner waits for the workers before it initialises.
		startup:   modelLoadStartupProbe(),
		liveness:  httpProbe("/live", SystemPortName, 0, 5, 4, 1),
		readiness: httpProbe("/health", SystemPortName, 0, 10, 4, 3),
	},
}

// workerContract is the contract of the engines that load a model.
var workerContract = contract{
	worker: true,
	ports:  []corev1.ContainerPort{{Name: NixlPortName, ContainerPort: NixlPort, Protocol: corev1.ProtocolTCP}},
	env: func(c contractContext) []corev1.EnvVar {
		env := []corev1.EnvVar{
			// /health reports the generate endpoint's health: a worker is
			// ready once its model is loaded and serving.
			{Name: "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS", Value: `["generate"]`},
			{Name: "DYN_HEALTH_CHECK_ENABLED", Value: "false"},
			{Name: "NIXL_TELEMETRY_ENABLE", Value: "n"},
			{Name: "NIXL_TELEMETRY_EXPORTER", Value: "prometheus"},
			{Name: "NIXL_TELEMETRY_PROMETHEUS_PORT", Value: strconv.Itoa(NixlPort)},
		}
		if c.workerHash != "" {
			env = append(env, corev1.EnvVar{Name: "DYN_NAMESPACE_WORKER_SUFFIX", Value: c.workerHash})
		}
		return env
	},
	// /live answers as soon as the runtime runs; the startup probe holds
	// liveness back for up to two hours of model download and load, and the
	// liveness probe then restarts a hung worker after one failure.
	startup:   modelLoadStartupProbe(),
	liveness:  httpProbe("/live", SystemPortName, 0, 5, 4, 1),
	readiness: httpProbe("/health", SystemPortName, 0, 10, 4, 3),
}

// genericContract is the contract of any other component type: the common
// runtime env and the system port, and no default probes, since nothing says
// what the process serves.
var genericContract = contract{}

func contractOf(t v1alpha1.ComponentType) contract {
	if c, ok := contracts[t]; ok {
		return c
	}
	return genericContract
}

// specContract is the contract of a service: its type's, or the configured
// endpoint picker's (epp.go).
func specContract(spec *v1alpha1.DynamoComponentDeploymentSharedSpec) contract {
	if usesEPPConfig(spec) {
		return eppContract
	}
	return contractOf(spec.ComponentType)
}

// isWorker reports whether the component type loads a model.
func isWorker(t v1alpha1.ComponentType) bool { return contractOf(t).worker }

// modelLoadStartupProbe allows 10 s × 720 = 2 h for the model to download
// and load before liveness counts.
func modelLoadStartupProbe() *corev1.Probe {
	return httpProbe("/live", SystemPortName, 0, 10, 5, 720)
}

func httpProbe(path, port string, initialDelay, period, timeout, failure int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString(port), Scheme: corev1.URISchemeHTTP,
		}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
		TimeoutSeconds:      timeout,
		SuccessThreshold:    1,
		FailureThreshold:    failure,
	}
}

// discoveryBackend is the component's discovery backend: its own
// annotation, which the graph's annotations propagate to, or kubernetes.
func discoveryBackend(dcd *v1alpha1.DynamoComponentDeployment) string {
	if b := dcd.Annotations[AnnotationDiscoveryBackend]; b == DiscoveryEtcd {
		return DiscoveryEtcd
	}
	if b := dcd.Spec.Annotations[AnnotationDiscoveryBackend]; b == DiscoveryEtcd {
		return DiscoveryEtcd
	}
	return DiscoveryKubernetes
}

// dynamoNamespace is the runtime namespace the component registers in.
func dynamoNamespace(dcd *v1alpha1.DynamoComponentDeployment) string {
	if ns := dcd.Spec.DynamoNamespace; ns != nil && *ns != "" {
		return *ns
	}
	return dcd.Namespace + "-" + graphName(dcd)
}

// contractLabels are the pod labels Dynamo's PodMonitors and discovery
// select on. The runtime namespace is a label only when it is a valid label
// value (a namespace and graph name together can exceed 63 characters).
func contractLabels(dcd *v1alpha1.DynamoComponentDeployment) map[string]string {
	labels := map[string]string{LabelMetricsEnabled: "true"}
	if discoveryBackend(dcd) == DiscoveryKubernetes {
		labels[LabelDiscoveryBackend] = DiscoveryKubernetes
		labels[LabelDiscoveryEnabled] = "true"
	}
	if ns := dynamoNamespace(dcd); len(validation.IsValidLabelValue(ns)) == 0 {
		labels[LabelDynamoNamespace] = ns
	}
	if h := dcd.Labels[LabelWorkerHash]; h != "" && isWorker(dcd.Spec.ComponentType) {
		labels[LabelWorkerHash] = h
	}
	// The DynamoModel controller finds a base model's serving pods by this
	// label, as Dynamo's does (a Service Dynamo's operator left,
	// dynamo-model-<hash>, selects the pods by it too).
	if ref := dcd.Spec.ModelRef; ref != nil && ref.Name != "" {
		labels[LabelBaseModelHash] = BaseModelHash(ref.Name)
	}
	return labels
}

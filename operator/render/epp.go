package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The endpoint picker (EPP) of the Gateway API inference extension: a
// component of type epp with an eppConfig runs Dynamo's Go endpoint picker,
// rendered as Dynamo's operator renders it. Its configuration (eppConfig.config
// written to a ConfigMap <graph>-epp-config, or the ConfigMap key
// eppConfig.configMapRef names) is mounted at /etc/epp/epp-config-dynamo.yaml;
// the picker serves gRPC on 9002 (the InferencePool's endpoint picker port)
// and its health on 9003, which its probes call. It picks for the
// InferencePool <graph>-pool in the graph's namespace, which the graph owns
// (InferencePool, as Dynamo's operator writes it, where the cluster serves
// the inference extension's API); the Gateway and the routes to the pool
// are the user's. An epp component without eppConfig renders as a generic
// one.

const (
	// EPPGRPCPort is where the picker answers the gateway.
	EPPGRPCPort     = 9002
	EPPGRPCPortName = "grpc"
	// eppHealthPort serves the gRPC health service the probes call.
	eppHealthPort     = 9003
	eppHealthPortName = "grpc-health"
	eppHealthService  = "inference-extension"

	eppConfigVolume = "epp-config"
	eppConfigDir    = "/etc/epp"
	// EPPConfigKey is the key of the configuration in its ConfigMap, and
	// its file name under /etc/epp.
	EPPConfigKey = "epp-config-dynamo.yaml"
	// eppConfigAPIVersion and eppConfigKind head the configuration file.
	eppConfigAPIVersion = "inference.networking.x-k8s.io/v1alpha1"
	eppConfigKind       = "EndpointPickerConfig"
	// inferencePoolGroup is the API group of the InferencePool the picker
	// reads.
	inferencePoolGroup = "inference.networking.k8s.io"
	// AnnotationEPPConfigHash, on the pod template of a picker configured
	// inline, is a digest of the configuration the operator writes: the
	// picker reads its file once, at start, so a new configuration must
	// roll its pods.
	AnnotationEPPConfigHash = "nvidia.com/epp-config-hash"

	eppCacheVolume = "hf-cache"
	eppCacheDir    = "/home/nonroot/.cache"
	// eppGracePeriod lets the picker drain its streams.
	eppGracePeriod = 130
)

// usesEPPConfig says whether the component runs Dynamo's configured
// endpoint picker.
func usesEPPConfig(spec *v1alpha1.DynamoComponentDeploymentSharedSpec) bool {
	return spec.ComponentType == v1alpha1.ComponentTypeEPP && spec.EPPConfig != nil
}

// EPPConfigMapName is the name of the ConfigMap of a graph's endpoint
// picker configuration, as Dynamo names it.
func EPPConfigMapName(graph string) string { return graph + "-epp-config" }

// EPPPoolName is the InferencePool a graph's endpoint picker picks for.
func EPPPoolName(graph string) string { return graph + "-pool" }

// eppContract is the pod contract of the configured endpoint picker: gRPC
// ports and probes, and a CPU-only process.
var eppContract = contract{
	ports: []corev1.ContainerPort{
		{Name: EPPGRPCPortName, ContainerPort: EPPGRPCPort, Protocol: corev1.ProtocolTCP},
		{Name: eppHealthPortName, ContainerPort: eppHealthPort, Protocol: corev1.ProtocolTCP},
	},
	env: func(contractContext) []corev1.EnvVar {
		return []corev1.EnvVar{
			{Name: "USE_STREAMING", Value: "true"},
			{Name: "RUST_LOG", Value: "debug,dynamo_llm::kv_router=trace"},
			// No GPU: the container toolkit must not inject any, so the
			// picker runs on nodes without GPU drivers.
			{Name: "NVIDIA_VISIBLE_DEVICES", Value: "void"},
		}
	},
	// The picker waits for workers to register before it serves: up to
	// 30 minutes (10 s × 180).
	startup:   grpcProbe(0, 10, 180),
	liveness:  grpcProbe(5, 10, 3),
	readiness: grpcProbe(5, 10, 3),
}

func grpcProbe(initialDelay, period, failure int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: eppHealthPort, Service: ptr.To(eppHealthService)}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
		TimeoutSeconds:      1,
		SuccessThreshold:    1,
		FailureThreshold:    failure,
	}
}

// eppPod adds to the pod of a configured endpoint picker its configuration
// and cache volumes and its grace period (before extraPodSpec, which can
// change them).
func eppPod(dcd *v1alpha1.DynamoComponentDeployment, pod *corev1.PodSpec) {
	if !usesEPPConfig(&dcd.Spec.DynamoComponentDeploymentSharedSpec) {
		return
	}
	name, key := EPPConfigMapName(graphName(dcd)), EPPConfigKey
	if ref := dcd.Spec.EPPConfig.ConfigMapRef; ref != nil {
		name = ref.Name
		if ref.Key != "" {
			key = ref.Key
		}
	}
	pod.Volumes = append(pod.Volumes,
		corev1.Volume{Name: eppConfigVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Items:                []corev1.KeyToPath{{Key: key, Path: EPPConfigKey}},
		}}},
		corev1.Volume{Name: eppCacheVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	)
	main := &pod.Containers[0]
	main.VolumeMounts = append(main.VolumeMounts,
		corev1.VolumeMount{Name: eppConfigVolume, MountPath: eppConfigDir, ReadOnly: true},
		// The picker downloads the model's tokenizer configuration.
		corev1.VolumeMount{Name: eppCacheVolume, MountPath: eppCacheDir},
	)
	pod.TerminationGracePeriodSeconds = ptr.To[int64](eppGracePeriod)
}

// eppArgs are the picker's arguments when the user gives no command line.
func eppArgs(dcd *v1alpha1.DynamoComponentDeployment) []string {
	return []string{
		"-pool-name", EPPPoolName(graphName(dcd)),
		"-pool-namespace", dcd.Namespace,
		"-pool-group", inferencePoolGroup,
		"-v", "4",
		"--zap-encoder", "json",
		"-grpc-port", strconv.Itoa(EPPGRPCPort),
		"-grpc-health-port", strconv.Itoa(eppHealthPort),
		"-config-file", eppConfigDir + "/" + EPPConfigKey,
	}
}

// EPPConfigMap renders the ConfigMap of an endpoint picker's inline
// configuration (eppConfig.config), headed with its apiVersion and kind;
// nil when the component has none (no eppConfig, or a configMapRef: that
// ConfigMap is the user's). The error is a configuration that is no YAML
// object.
func EPPConfigMap(dcd *v1alpha1.DynamoComponentDeployment) (*corev1.ConfigMap, error) {
	data, ok, err := eppInlineConfig(dcd)
	if err != nil {
		return nil, fmt.Errorf("spec.eppConfig.config: %w", err)
	}
	if !ok {
		return nil, nil
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      EPPConfigMapName(graphName(dcd)),
			Namespace: dcd.Namespace,
			Labels:    workloadLabels(dcd),
		},
		Data: map[string]string{EPPConfigKey: data},
	}, nil
}

// eppInlineConfig is the configuration file the operator writes for a
// picker configured inline, and whether the component has one.
func eppInlineConfig(dcd *v1alpha1.DynamoComponentDeployment) (string, bool, error) {
	spec := &dcd.Spec.DynamoComponentDeploymentSharedSpec
	if !usesEPPConfig(spec) || spec.EPPConfig.ConfigMapRef != nil || spec.EPPConfig.Config == nil {
		return "", false, nil
	}
	config := map[string]any{}
	if err := yaml.Unmarshal(spec.EPPConfig.Config.Raw, &config); err != nil {
		return "", false, err
	}
	config["apiVersion"], config["kind"] = eppConfigAPIVersion, eppConfigKind
	data, err := yaml.Marshal(config)
	if err != nil {
		return "", false, err
	}
	return string(data), true, nil
}

// eppConfigHash is the value of AnnotationEPPConfigHash for the picker's
// pod template; empty when the operator writes no configuration for it. A
// configMapRef's ConfigMap is the user's, and its changes do not roll the
// picker: Dynamo's operator neither reads nor follows it, and neither does
// this one (restart the picker, spec.restart, to load a new one).
func eppConfigHash(dcd *v1alpha1.DynamoComponentDeployment) (string, error) {
	data, ok, err := eppInlineConfig(dcd)
	if !ok || err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(data))
	return hex.EncodeToString(sum[:])[:16], nil
}

// InferencePoolGVK is the Gateway API inference extension's InferencePool,
// in the version Dynamo's operator writes.
var InferencePoolGVK = schema.GroupVersionKind{Group: inferencePoolGroup, Version: "v1", Kind: "InferencePool"}

// EndpointPicker is the component of a graph's configured endpoint picker
// (an epp component with eppConfig), the first by service name when the
// graph has several; nil when it has none. components are the graph's
// rendered components (Components).
func EndpointPicker(components []*v1alpha1.DynamoComponentDeployment) *v1alpha1.DynamoComponentDeployment {
	var out *v1alpha1.DynamoComponentDeployment
	for _, dcd := range components {
		if usesEPPConfig(&dcd.Spec.DynamoComponentDeploymentSharedSpec) &&
			(out == nil || dcd.Spec.ServiceName < out.Spec.ServiceName) {
			out = dcd
		}
	}
	return out
}

// InferencePool renders the InferencePool <graph>-pool the endpoint picker
// picks for, as Dynamo's operator writes it: the graph's workers (by
// component type and runtime namespace, the picker's own: the workers it
// discovers) on their HTTP port, the frontend sidecar's, picked by the
// picker's Service on its gRPC port. nil when picker is nil.
func InferencePool(picker *v1alpha1.DynamoComponentDeployment) *unstructured.Unstructured {
	if picker == nil {
		return nil
	}
	graph := graphName(picker)
	selector := map[string]any{LabelComponentType: string(v1alpha1.ComponentTypeWorker)}
	if ns := dynamoNamespace(picker); len(validation.IsValidLabelValue(ns)) == 0 {
		selector[LabelDynamoNamespace] = ns
	} else {
		// A runtime namespace too long for a label labels no pod (see
		// contractLabels): the graph's workers are the ones it has.
		selector[LabelGraphName] = graph
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": InferencePoolGVK.GroupVersion().String(),
		"kind":       InferencePoolGVK.Kind,
		"metadata": map[string]any{
			"name":      EPPPoolName(graph),
			"namespace": picker.Namespace,
			"labels": map[string]any{
				LabelGraphName:     graph,
				LabelComponent:     picker.Name,
				LabelComponentType: string(v1alpha1.ComponentTypeEPP),
				LabelManagedBy:     ManagedByValue,
			},
		},
		"spec": map[string]any{
			"selector":    map[string]any{"matchLabels": selector},
			"targetPorts": []any{map[string]any{"number": int64(HTTPPort)}},
			"endpointPickerRef": map[string]any{
				"kind": "Service",
				"name": picker.Name,
				"port": map[string]any{"number": int64(EPPGRPCPort)},
			},
		},
	}}
}

package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Image builds of DynamoComponents (Dynamo's older build flow): the
// artifact name:version is downloaded from Dynamo's API store into the
// build context and built by kaniko or BuildKit, then pushed to the
// registry. The operator only renders the Job; its outcome, read from the
// Job's conditions, becomes the DynamoComponent's status.

// Build engines, as DYNAMO_IMAGE_BUILD_ENGINE names them.
const (
	BuildEngineBuildKit = "buildkit"
	BuildEngineKaniko   = "kaniko"
)

// Labels of build Jobs and their pods. The Job may live in another
// namespace than its DynamoComponent (DYNAMO_IMAGE_BUILDER_NAMESPACE), where
// no owner reference can point, so the labels say whose build it is.
const (
	LabelBuildComponent          = "nvidia.com/dynamo-component-build"
	LabelBuildComponentNamespace = "nvidia.com/dynamo-component-build-namespace"
)

// Default images of the build Job's containers; BUILDKIT_IMAGE replaces the
// BuildKit one.
const (
	DefaultBuildkitImage   = "moby/buildkit:v0.17.3-rootless"
	DefaultKanikoImage     = "gcr.io/kaniko-project/executor:v1.23.2"
	DefaultDownloaderImage = "curlimages/curl:8.11.1"
	// DefaultImageBuildTimeout bounds a build whose DynamoComponent sets no
	// imageBuildTimeout: a build that hangs must end, and say so.
	DefaultImageBuildTimeout = time.Hour
)

// Names inside the build pod.
const (
	BuilderContainerName    = "builder"
	DownloaderContainerName = "downloader"
	buildContextVolume      = "build-context"
	buildContextPath        = "/workspace"
	dockerConfigVolume      = "docker-config"
	dockerConfigPath        = "/docker-config"
)

// ImageBuildOptions are the operator-wide settings of image builds, from
// its environment (Dynamo's variable names, see operator/config).
type ImageBuildOptions struct {
	// Namespace runs the build Jobs; empty means the DynamoComponent's own
	// namespace, where the Job is owned by it.
	Namespace string
	// Engine is BuildEngineBuildKit (the default) or BuildEngineKaniko.
	Engine string
	// BuildkitURL, when set, is a BuildKit daemon the Job's buildctl talks
	// to; otherwise the Job runs BuildKit daemonless.
	BuildkitURL   string
	BuildkitImage string
	// DockerRegistryServer and RepositoryName make the built image's name:
	// <server>/<repository>:<component name>-<version>.
	DockerRegistryServer string
	RepositoryName       string
	// DockerRegistrySecure false pushes over plain HTTP.
	DockerRegistrySecure bool
	// EstargzEnabled builds lazily pullable eStargz layers (BuildKit only).
	EstargzEnabled bool
	// AddNamespacePrefixToImage puts the DynamoComponent's namespace before
	// the repository: <server>/<namespace>/<repository>:...
	AddNamespacePrefixToImage bool
	// APIStoreEndpoint serves the artifacts the build context comes from.
	APIStoreEndpoint string
}

// dnsSubdomainUnsafe are the characters of a dynamoComponent reference
// that a Kubernetes name cannot hold.
var dnsSubdomainUnsafe = regexp.MustCompile(`[^a-z0-9.-]`)

// DynamoComponentName is the name of the DynamoComponent of a reference
// name:version: "name--version" (as Dynamo's documentation shows it,
// frontend:jh2o6dqzpsgfued4 is frontend--jh2o6dqzpsgfued4). A reference
// with characters a name cannot hold (capitals, underscores) is
// lowercased, those characters become '-', and a digest of the reference is
// appended so that two references never share a name.
func DynamoComponentName(ref string) string {
	simple := strings.Replace(ref, ":", "--", 1)
	name := dnsSubdomainUnsafe.ReplaceAllString(strings.ToLower(simple), "-")
	if name == simple && len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	name = strings.Trim(name, "-.")
	if len(name) > 200 {
		name = name[:200]
	}
	return strings.Trim(name, "-.") + "-" + shortHash(ref)
}

// GraphDynamoComponent is the DynamoComponent a graph with dynamoComponent
// asks for, or nil when it sets none. It carries no owner reference: the
// controller sets it.
func GraphDynamoComponent(dgd *v1alpha1.DynamoGraphDeployment) *v1alpha1.DynamoComponent {
	if dgd.Spec.DynamoComponent == "" {
		return nil
	}
	return &v1alpha1.DynamoComponent{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DynamoComponent"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      DynamoComponentName(dgd.Spec.DynamoComponent),
			Namespace: dgd.Namespace,
			Labels:    map[string]string{LabelManagedBy: ManagedByValue},
		},
		Spec: v1alpha1.DynamoComponentSpec{DynamoComponent: dgd.Spec.DynamoComponent},
	}
}

// BuiltImage is the image a build of dc pushes.
func BuiltImage(dc *v1alpha1.DynamoComponent, o ImageBuildOptions) string {
	name, version, _ := strings.Cut(dc.Spec.DynamoComponent, ":")
	repo := o.RepositoryName
	if repo == "" {
		repo = "dynamo-components"
	}
	if o.AddNamespacePrefixToImage {
		repo = dc.Namespace + "/" + repo
	}
	if o.DockerRegistryServer != "" {
		repo = strings.TrimSuffix(o.DockerRegistryServer, "/") + "/" + repo
	}
	// A tag is at most 128 characters of [A-Za-z0-9_.-].
	tag := name + "-" + version
	if len(tag) > 128 {
		tag = tag[:119] + "-" + shortHash(tag)
	}
	return repo + ":" + tag
}

// ImageBuildTimeout is how long dc's build may run.
func ImageBuildTimeout(dc *v1alpha1.DynamoComponent) time.Duration {
	if t := dc.Spec.ImageBuildTimeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return DefaultImageBuildTimeout
}

// BuildJobName is the name of the Job building dc as its spec is now. The
// spec's digest is in the name: a Job's pod template cannot change, so a
// changed spec is a new Job, and the old one's result is never mistaken for
// the new one's.
func BuildJobName(dc *v1alpha1.DynamoComponent, o ImageBuildOptions) string {
	in, _ := json.Marshal(struct {
		Namespace string                       `json:"namespace"`
		Name      string                       `json:"name"`
		Spec      v1alpha1.DynamoComponentSpec `json:"spec"`
		Options   ImageBuildOptions            `json:"options"`
	}{dc.Namespace, dc.Name, dc.Spec, o})
	sum := sha256.Sum256(in)
	// Job names end up in the job-name label of its pods: 63 characters.
	prefix := strings.Trim(truncate(dc.Name, 46), "-.")
	prefix = strings.ReplaceAll(prefix, ".", "-")
	return prefix + "-build-" + hex.EncodeToString(sum[:])[:10]
}

// BuildJob renders the Job that builds and pushes dc's image. The error, an
// aggregate of field errors, names what the user must fix.
func BuildJob(dc *v1alpha1.DynamoComponent, o ImageBuildOptions) (*batchv1.Job, error) {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	name, version, ok := strings.Cut(dc.Spec.DynamoComponent, ":")
	if !ok || name == "" || version == "" {
		errs = append(errs, field.Invalid(specPath.Child("dynamoComponent"), dc.Spec.DynamoComponent,
			"must be name:version"))
	}
	errs = append(errs, validateBuildArgs(dc.Spec.BuildArgs, specPath.Child("buildArgs"))...)
	image := BuiltImage(dc, o)
	builder, err := builderContainer(dc, o, image)
	if err != nil {
		errs = append(errs, err)
	}
	volumes, builder := withDockerConfig(dc, builder)
	pod, err := buildPodSpec(dc, downloaderContainer(dc, o, name, version), builder, volumes, specPath)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return buildJobObject(dc, o, pod, image), nil
}

// downloaderContainer fetches the build context of the component name at
// version from the API store.
func downloaderContainer(dc *v1alpha1.DynamoComponent, o ImageBuildOptions, name, version string) corev1.Container {
	return corev1.Container{
		Name:    DownloaderContainerName,
		Image:   DefaultDownloaderImage,
		Command: []string{"/bin/sh", "-c"},
		// The artifact is a tarball of the build context, Dockerfile
		// included, as `dynamo build --push` stored it.
		Args: []string{`set -eu; curl -fsSL --retry 5 "$API_STORE_ENDPOINT/api/v1/dynamo_components/$COMPONENT_NAME/versions/$COMPONENT_VERSION/download" | tar -xzf - -C ` + buildContextPath},
		Env: []corev1.EnvVar{
			{Name: "API_STORE_ENDPOINT", Value: o.APIStoreEndpoint},
			{Name: "COMPONENT_NAME", Value: name},
			{Name: "COMPONENT_VERSION", Value: version},
		},
		EnvFrom:      dc.Spec.DownloaderContainerEnvFrom,
		VolumeMounts: []corev1.VolumeMount{{Name: buildContextVolume, MountPath: buildContextPath}},
	}
}

// builderContainer builds image with the engine o names; the error names an
// engine this operator does not know.
func builderContainer(dc *v1alpha1.DynamoComponent, o ImageBuildOptions, image string) (corev1.Container, *field.Error) {
	builder := corev1.Container{
		Name:         BuilderContainerName,
		VolumeMounts: []corev1.VolumeMount{{Name: buildContextVolume, MountPath: buildContextPath}},
	}
	switch o.Engine {
	case BuildEngineKaniko:
		builder.Image = DefaultKanikoImage
		builder.Args = kanikoArgs(dc, o, image)
	case BuildEngineBuildKit, "":
		builder.Image = o.BuildkitImage
		if builder.Image == "" {
			builder.Image = DefaultBuildkitImage
		}
		builder.Command, builder.Args = buildkitCommand(dc, o, image)
		if o.BuildkitURL == "" {
			// Daemonless rootless BuildKit needs no privilege but its
			// own user namespaces.
			builder.Env = append(builder.Env, corev1.EnvVar{Name: "BUILDKITD_FLAGS", Value: "--oci-worker-no-process-sandbox"})
			builder.SecurityContext = &corev1.SecurityContext{
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
				RunAsUser:       ptr.To[int64](1000),
				RunAsGroup:      ptr.To[int64](1000),
			}
		}
	default:
		return builder, field.NotSupported(field.NewPath("DYNAMO_IMAGE_BUILD_ENGINE"), o.Engine,
			[]string{BuildEngineBuildKit, BuildEngineKaniko})
	}
	return builder, nil
}

// withDockerConfig returns the build pod's volumes and the builder, given
// the push credentials dc names, with its extra environment and resources.
func withDockerConfig(dc *v1alpha1.DynamoComponent, builder corev1.Container) ([]corev1.Volume, corev1.Container) {
	volumes := []corev1.Volume{{Name: buildContextVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if s := dc.Spec.DockerConfigJSONSecretName; s != "" {
		// Both engines read DOCKER_CONFIG/config.json for push credentials.
		volumes = append(volumes, corev1.Volume{Name: dockerConfigVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: s,
				Items: []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: "config.json"}}},
		}})
		builder.VolumeMounts = append(builder.VolumeMounts, corev1.VolumeMount{Name: dockerConfigVolume, MountPath: dockerConfigPath, ReadOnly: true})
		builder.Env = append(builder.Env, corev1.EnvVar{Name: "DOCKER_CONFIG", Value: dockerConfigPath})
	}
	builder.Env = MergeEnv(builder.Env, dc.Spec.ImageBuilderExtraContainerEnv)
	if r := dc.Spec.ImageBuilderContainerResources; r != nil {
		builder.Resources = *r.DeepCopy()
	}
	return volumes, builder
}

// buildPodSpec is the build pod's spec, merged with the user's extra pod
// spec; the error names what of it cannot be merged.
func buildPodSpec(dc *v1alpha1.DynamoComponent, downloader, builder corev1.Container, volumes []corev1.Volume,
	specPath *field.Path) (corev1.PodSpec, *field.Error) {
	pod := corev1.PodSpec{
		RestartPolicy:    corev1.RestartPolicyNever,
		InitContainers:   []corev1.Container{downloader},
		Containers:       []corev1.Container{builder},
		Volumes:          volumes,
		ImagePullSecrets: dc.Spec.ImagePullSecrets,
	}
	extra := dc.Spec.ImageBuilderExtraPodSpec
	if extra == nil {
		return pod, nil
	}
	// mainContainer means the builder here: rename it on the way in and
	// back, so the service merge's rules apply unchanged.
	pod.Containers[0].Name = MainContainerName
	merged, err := mergeExtraPodSpec(pod, extra, specPath.Child("imageBuilderExtraPodSpec"))
	if err == nil {
		pod = merged
	}
	if c := findContainer(pod.Containers, MainContainerName); c != nil {
		c.Name = BuilderContainerName
	}
	return pod, err
}

// buildJobObject is the build Job running pod, labelled as dc's build.
func buildJobObject(dc *v1alpha1.DynamoComponent, o ImageBuildOptions, pod corev1.PodSpec, image string) *batchv1.Job {
	namespace := o.Namespace
	if namespace == "" {
		namespace = dc.Namespace
	}
	jobLabels := map[string]string{
		LabelManagedBy:               ManagedByValue,
		LabelBuildComponent:          dc.Name,
		LabelBuildComponentNamespace: dc.Namespace,
	}
	var extraLabels, extraAnnotations map[string]string
	if m := dc.Spec.ImageBuilderExtraPodMetadata; m != nil {
		extraLabels, extraAnnotations = m.Labels, m.Annotations
	}
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        BuildJobName(dc, o),
			Namespace:   namespace,
			Labels:      jobLabels,
			Annotations: map[string]string{AnnotationBuiltImage: image},
		},
		Spec: batchv1.JobSpec{
			// A failed build is reported, not retried: the same
			// context fails the same way. Deleting the Job retries.
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(int64(ImageBuildTimeout(dc).Round(time.Second) / time.Second)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					// The build's labels last: a user's value would hide
					// the pod from its Job's owner.
					Labels:      merged(extraLabels, jobLabels),
					Annotations: merged(extraAnnotations),
				},
				Spec: pod,
			},
		},
	}
}

// AnnotationBuiltImage on a build Job names the image it pushes, so the
// result is read from the Job alone.
const AnnotationBuiltImage = "nvidia.com/dynamo-built-image"

func kanikoArgs(dc *v1alpha1.DynamoComponent, o ImageBuildOptions, image string) []string {
	args := []string{
		"--context=dir://" + buildContextPath,
		"--dockerfile=" + buildContextPath + "/Dockerfile",
		"--destination=" + image,
		"--cache=false",
	}
	if !o.DockerRegistrySecure {
		args = append(args, "--insecure", "--skip-tls-verify")
	}
	for _, a := range dc.Spec.BuildArgs {
		args = append(args, "--build-arg="+a)
	}
	return args
}

func buildkitCommand(dc *v1alpha1.DynamoComponent, o ImageBuildOptions, image string) (command, args []string) {
	output := "type=image,name=" + image + ",push=true"
	if !o.DockerRegistrySecure {
		output += ",registry.insecure=true"
	}
	if o.EstargzEnabled {
		output += ",compression=estargz,force-compression=true,oci-mediatypes=true"
	}
	args = []string{"build",
		"--frontend=dockerfile.v0",
		"--local=context=" + buildContextPath,
		"--local=dockerfile=" + buildContextPath,
		"--output=" + output,
	}
	for _, a := range dc.Spec.BuildArgs {
		args = append(args, "--opt=build-arg:"+a)
	}
	if o.BuildkitURL != "" {
		return []string{"buildctl", "--addr=" + o.BuildkitURL}, args
	}
	return []string{"buildctl-daemonless.sh"}, args
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// validateBuildArgs checks that each build argument is KEY=VALUE, as both
// engines take them.
func validateBuildArgs(args []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range args {
		if k, _, ok := strings.Cut(a, "="); !ok || k == "" {
			errs = append(errs, field.Invalid(path.Index(i), a, "must be KEY=VALUE"))
		}
	}
	return errs
}

package webhooks

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/webhooks/rules"
)

// Options configure the webhooks.
type Options struct {
	// OperatorVersion is stamped on new graphs (OriginVersionAnnotation).
	OperatorVersion string
	// NamespaceExcluded, when it returns true for a request's namespace,
	// makes the webhooks allow without judging or defaulting there: a
	// namespace-scoped operator owns the namespace and its webhook decides.
	// nil excludes nothing.
	NamespaceExcluded func(namespace string) bool
	// Drain, when set, closes connections after each answer once the
	// operator is stopping.
	Drain *Drain
	// PodGroupServed says whether the cluster serves the gang PodGroup API
	// (the pod webhook names a multinode pod's PodGroup only then); nil
	// means it does.
	PodGroupServed func() bool
}

// Paths the handlers are served at, in controller-runtime's naming.
const (
	PathValidateGraph               = "/validate-nvidia-com-v1alpha1-dynamographdeployment"
	PathMutateGraph                 = "/mutate-nvidia-com-v1alpha1-dynamographdeployment"
	PathValidateComponentDeployment = "/validate-nvidia-com-v1alpha1-dynamocomponentdeployment"
	PathValidateModel               = "/validate-nvidia-com-v1alpha1-dynamomodel"
	PathValidateComponent           = "/validate-nvidia-com-v1alpha1-dynamocomponent"
	PathMutatePod                   = "/mutate--v1-pod"
)

// Setup registers the admission handlers and the conversion webhook on the
// manager's webhook server; the manager's scheme must know every served
// version of the converted kinds. Call it only
// with webhooks enabled: asking the manager for its webhook server starts one.
func Setup(mgr manager.Manager, o Options) error {
	scheme := mgr.GetScheme()
	gk := func(kind string) schema.GroupKind { return v1alpha1.GroupVersion.WithKind(kind).GroupKind() }
	srv := mgr.GetWebhookServer()

	register := func(path, kind string, h admission.Handler) {
		srv.Register(path, o.Drain.Wrap(&webhook.Admission{Handler: instrumented{resource: kind, next: h}}))
	}
	register(PathValidateGraph, "DynamoGraphDeployment", admission.WithValidator(scheme, &validator[*v1alpha1.DynamoGraphDeployment]{
		kind: gk("DynamoGraphDeployment"), create: rules.ValidateGraph, update: rules.ValidateGraphUpdate, excluded: o.NamespaceExcluded,
		updateBy: rules.AdapterReplicas, beta: betaGraphErrors,
	}).Handler)
	register(PathValidateComponentDeployment, "DynamoComponentDeployment", admission.WithValidator(scheme, &validator[*v1alpha1.DynamoComponentDeployment]{
		kind: gk("DynamoComponentDeployment"), create: rules.ValidateComponentDeployment, update: rules.ValidateComponentDeploymentUpdate,
		excluded: o.NamespaceExcluded, beta: betaComponentErrors,
	}).Handler)
	register(PathValidateModel, "DynamoModel", admission.WithValidator(scheme, &validator[*v1alpha1.DynamoModel]{
		kind: gk("DynamoModel"), create: rules.ValidateModel, update: rules.ValidateModelUpdate, excluded: o.NamespaceExcluded,
	}).Handler)
	register(PathValidateComponent, "DynamoComponent", admission.WithValidator(scheme, &validator[*v1alpha1.DynamoComponent]{
		kind: gk("DynamoComponent"), create: rules.ValidateComponent, update: rules.ValidateComponentUpdate, excluded: o.NamespaceExcluded,
	}).Handler)
	register(PathMutateGraph, "DynamoGraphDeployment", &graphDefaulter{
		decoder: admission.NewDecoder(scheme), version: o.OperatorVersion, excluded: o.NamespaceExcluded,
	})
	register(PathMutatePod, "Pod", &podGroupNamer{served: o.PodGroupServed, excluded: o.NamespaceExcluded})
	// Every replica in every mode serves conversion, though the API server
	// calls only the operator the CRDs name (the release that installs
	// them): a conversion has no namespace to step aside for, and which
	// replica answers must not matter.
	srv.Register(PathConvert, o.Drain.Wrap(ConversionHandler(scheme, mgr.GetConverterRegistry())))
	return nil
}

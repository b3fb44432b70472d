package testenv

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

// inferencePoolCRD is the InferencePool CRD of the Gateway API inference
// extension (inference.networking.k8s.io/v1), as its release manifests
// install it, cut to the fields the operator writes and validated as they
// are there (a kubernetes.io group needs the approval annotation): the
// extension's Go module, which carries the CRD, is not one the build can
// fetch. Unknown fields are pruned, so a misspelt field of
// the operator's does not survive a round trip.
const inferencePoolCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: inferencepools.inference.networking.k8s.io
  annotations:
    api-approved.kubernetes.io: https://github.com/kubernetes-sigs/gateway-api-inference-extension
spec:
  group: inference.networking.k8s.io
  scope: Namespaced
  names:
    kind: InferencePool
    listKind: InferencePoolList
    plural: inferencepools
    singular: inferencepool
    shortNames: [infpool]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [endpointPickerRef, selector, targetPorts]
            properties:
              selector:
                type: object
                properties:
                  matchLabels:
                    type: object
                    maxProperties: 64
                    additionalProperties:
                      type: string
                      maxLength: 63
                x-kubernetes-map-type: atomic
              targetPorts:
                type: array
                minItems: 1
                maxItems: 8
                x-kubernetes-list-type: atomic
                items:
                  type: object
                  required: [number]
                  properties:
                    number: {type: integer, format: int32, minimum: 1, maximum: 65535}
              endpointPickerRef:
                type: object
                required: [name]
                properties:
                  group: {type: string, default: "", maxLength: 253}
                  kind: {type: string, default: Service, minLength: 1, maxLength: 63}
                  name: {type: string, minLength: 1, maxLength: 253}
                  port:
                    type: object
                    required: [number]
                    properties:
                      number: {type: integer, format: int32, minimum: 1, maximum: 65535}
                  failureMode: {type: string, default: FailClose, enum: [FailOpen, FailClose]}
                x-kubernetes-validations:
                - rule: (has(self.group) && self.group != '') || self.kind != 'Service' || has(self.port)
                  message: port is required when kind is 'Service' or unspecified (defaults to 'Service')
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`

// InferencePoolCRD returns the inference extension's InferencePool CRD.
func InferencePoolCRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(inferencePoolCRD), crd); err != nil {
		return nil, fmt.Errorf("the InferencePool CRD: %w", err)
	}
	return crd, nil
}

// InstallInferencePoolAPI creates the InferencePool CRD through c unless
// it is there, and waits until its API is served (InstallCRD).
func InstallInferencePoolAPI(ctx context.Context, c client.Client) error {
	crd, err := InferencePoolCRD()
	if err != nil {
		return err
	}
	return InstallCRD(ctx, c, crd)
}

// InstallCRD creates crd through c unless it is there, and waits up to a
// minute until its API is served; an API, once served, stays for the
// cluster's life.
func InstallCRD(ctx context.Context, c client.Client, crd client.Object) error {
	if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("installing the CRD %s: %w", crd.GetName(), err)
	}
	return AwaitCRDEstablished(ctx, c, crd.GetName())
}

// AwaitCRDEstablished waits up to a minute until the CRD name is
// established: its API is served.
func AwaitCRDEstablished(ctx context.Context, c client.Client, name string) error {
	return await.Until(ctx, "the CRD "+name+" established", func() error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("the CRD %s is not established", name)
	}, await.Within(time.Minute))
}

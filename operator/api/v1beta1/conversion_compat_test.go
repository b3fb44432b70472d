package v1beta1

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/compat"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// alphaCompatDir holds the manifests Dynamo's users run in v1alpha1.
const alphaCompatDir = "../../../../shared/compat"

// savesOfCompat are, per manifest and object, the annotations its
// conversion to the other version writes: what of Dynamo's own manifests
// the other version cannot hold. Every other DynamoGraphDeployment and
// DynamoComponentDeployment of both folders converts with none.
var savesOfCompat = map[string]string{
	// The services' volumeMounts of spec.pvcs: v1beta1 has the claims as
	// pod volumes, the pvcs entries themselves only in the annotation.
	"backends/trtllm/deploy/disagg-multinode.yaml/trtllm-disagg-tp8": AnnotationAlphaSpec,
	// mainContainer.env: v1beta1 has one env list, which converts back as
	// envs; the annotation says which variables were mainContainer's.
	"backends/vllm/deploy/agg_tracing.yaml/vllm-agg-tracing":                           AnnotationAlphaSpec,
	"backends/vllm/deploy/disagg_tracing.yaml/vllm-disagg-tracing":                     AnnotationAlphaSpec,
	"backends/vllm/deploy/gaie/agg.yaml/qwen":                                          AnnotationAlphaSpec,
	"backends/vllm/deploy/gaie/disagg.yaml/qwen":                                       AnnotationAlphaSpec,
	"backends/vllm/deploy/lora/agg_lora.yaml/vllm-agg-lora":                            AnnotationAlphaSpec,
	"backends/vllm/deploy/lora/multimodal/agg_qwen_lora.yaml/agg-qwen-multimodal-lora": AnnotationAlphaSpec,
	"backends/vllm/deploy/agg_xpu_dra.yaml/vllm-agg-xpu-dra":                           AnnotationAlphaSpec,
	"backends/vllm/deploy/disagg_xpu_dra.yaml/vllm-disagg-xpu-dra":                     AnnotationAlphaSpec,
	// Components listed in an order other than by name.
	"backends/sglang/deploy/v1beta1/openengine-disagg.yaml/sglang-openengine-disagg":                       AnnotationBetaSpec,
	"backends/trtllm/deploy/v1beta1/openengine-disagg.yaml/trtllm-openengine-disagg":                       AnnotationBetaSpec,
	"backends/trtllm/deploy/v1beta1/openengine-multimodal-disagg.yaml/trtllm-openengine-multimodal-disagg": AnnotationBetaSpec,
	// experimental.checkpoint, which v1alpha1 does not have.
	"backends/trtllm/deploy/v1beta1/snapshot-restore.yaml/qwen3-0-6b-trtllm-snapshot-restore": AnnotationBetaSpec,
}

// Every DynamoGraphDeployment and DynamoComponentDeployment of Dynamo's
// manifests, v1alpha1 and v1beta1, converts to the other version and back
// unchanged.
func TestCompatManifestsRoundTrip(t *testing.T) {
	checks := map[string]func(testing.TB, []byte) (string, map[string]string){
		"v1alpha1/DynamoGraphDeployment":     compatCheck(checkGraphFromAlpha, graphFromAlphaAnnotations),
		"v1beta1/DynamoGraphDeployment":      compatCheck(checkGraphFromBeta, graphToAlphaAnnotations),
		"v1alpha1/DynamoComponentDeployment": compatCheck(checkComponentFromAlpha, componentFromAlphaAnnotations),
		"v1beta1/DynamoComponentDeployment":  compatCheck(checkComponentFromBeta, componentToAlphaAnnotations),
	}
	seen := map[string]int{}
	for _, dir := range []string{alphaCompatDir, compatDir} {
		docs, err := compat.Documents(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docs {
			var head struct {
				APIVersion string `json:"apiVersion"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc.Raw, &head); err != nil {
				t.Fatal(err)
			}
			version := strings.TrimPrefix(head.APIVersion, "nvidia.com/")
			check, ok := checks[version+"/"+doc.Kind]
			if !ok {
				continue
			}
			seen[version]++
			key := strings.TrimPrefix(strings.TrimPrefix(doc.File, "examples/"), "examples/") + "/" + head.Metadata.Name
			t.Run(key, func(t *testing.T) {
				failure, annotations := check(t, doc.Raw)
				if failure != "" {
					t.Fatal(failure)
				}
				var keys []string
				for k := range annotations {
					if IsConversionAnnotation(k) {
						keys = append(keys, k)
					}
				}
				if got, want := strings.Join(keys, ","), savesOfCompat[key]; got != want {
					t.Errorf("conversion annotations %q, want %q: %v", got, want, annotations)
				}
			})
		}
	}
	if seen["v1alpha1"] == 0 || seen["v1beta1"] == 0 {
		t.Fatalf("manifests converted per version: %v; want some of each", seen)
	}
	t.Logf("manifests converted per version: %v", seen)
}

// compatCheck decodes a manifest strictly, checks its round trip, and
// returns the annotations of its conversion to the other version.
func compatCheck[T any](roundTrip func(testing.TB, *T) string, convert func(*T) (map[string]string, error)) func(testing.TB, []byte) (string, map[string]string) {
	return func(t testing.TB, raw []byte) (string, map[string]string) {
		in := new(T)
		if err := yaml.UnmarshalStrict(raw, in); err != nil {
			return "decoding: " + err.Error(), nil
		}
		in = jsonRoundTrip(t, in)
		if failure := roundTrip(t, in); failure != "" {
			return failure, nil
		}
		annotations, err := convert(in)
		if err != nil {
			return err.Error(), nil
		}
		return "", annotations
	}
}

func graphFromAlphaAnnotations(in *v1alpha1.DynamoGraphDeployment) (map[string]string, error) {
	out, err := graphFromAlpha(in)
	if err != nil {
		return nil, err
	}
	return out.Annotations, nil
}

func graphToAlphaAnnotations(in *DynamoGraphDeployment) (map[string]string, error) {
	out, err := graphToAlpha(in)
	if err != nil {
		return nil, err
	}
	return out.Annotations, nil
}

func componentFromAlphaAnnotations(in *v1alpha1.DynamoComponentDeployment) (map[string]string, error) {
	out, err := componentFromAlpha(in)
	if err != nil {
		return nil, err
	}
	return out.Annotations, nil
}

func componentToAlphaAnnotations(in *DynamoComponentDeployment) (map[string]string, error) {
	out, err := componentToAlpha(in)
	if err != nil {
		return nil, err
	}
	return out.Annotations, nil
}

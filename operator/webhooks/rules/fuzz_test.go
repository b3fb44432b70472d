package rules

import (
	"encoding/json"
	"testing"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// The fuzz targets feed arbitrary JSON, decoded into each kind, to the
// validators and the defaulter: whatever a client sends that decodes, the
// webhook must answer, never panic. make fuzz runs each briefly.

func addSeeds(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"metadata":{"name":"llm"},"spec":{"services":{"Frontend":{"replicas":1}}}}`,
		`{"metadata":{"name":"llm"},"spec":{"pvcs":[{"name":"m"}],"services":{"W":{"volumeMounts":[{"name":"m"}],` +
			`"resources":{"limits":{"gpu":"1","custom":{"x":"1"}}},"multinode":{"nodeCount":2},"modelRef":{"name":"q"},` +
			`"extraPodSpec":{"containers":[{"name":"x"}],"mainContainer":{"image":"i"}},"sharedMemory":{"size":"0"}}}}}`,
		`{"metadata":{"name":"d"},"spec":{"dynamoComponent":"a:1","resources":{"requests":{"cpu":"1"}}}}`,
		`{"spec":{"modelName":"a","baseModelName":"b","modelType":"lora","source":{"uri":"s3://x"}}}`,
		`{"spec":{"dynamoComponent":"a:1","imageBuildTimeout":"-1s","imagePullSecrets":[{"name":""}]}}`,
	} {
		f.Add([]byte(s), []byte(`{"spec":{}}`))
	}
}

func FuzzValidateGraph(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		old, cur := &v1alpha1.DynamoGraphDeployment{}, &v1alpha1.DynamoGraphDeployment{}
		if json.Unmarshal(a, cur) != nil || json.Unmarshal(b, old) != nil {
			return
		}
		ValidateGraph(cur)
		ValidateGraphUpdate(old, cur)
		GraphDefaults(cur, true, "v")
	})
}

func FuzzValidateComponentDeployment(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		old, cur := &v1alpha1.DynamoComponentDeployment{}, &v1alpha1.DynamoComponentDeployment{}
		if json.Unmarshal(a, cur) != nil || json.Unmarshal(b, old) != nil {
			return
		}
		ValidateComponentDeployment(cur)
		ValidateComponentDeploymentUpdate(old, cur)
	})
}

func FuzzValidateModel(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		old, cur := &v1alpha1.DynamoModel{}, &v1alpha1.DynamoModel{}
		if json.Unmarshal(a, cur) != nil || json.Unmarshal(b, old) != nil {
			return
		}
		ValidateModel(cur)
		ValidateModelUpdate(old, cur)
	})
}

func FuzzValidateComponent(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		old, cur := &v1alpha1.DynamoComponent{}, &v1alpha1.DynamoComponent{}
		if json.Unmarshal(a, cur) != nil || json.Unmarshal(b, old) != nil {
			return
		}
		ValidateComponent(cur)
		ValidateComponentUpdate(old, cur)
	})
}

package v1beta1

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/compat"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// addCompatSeeds seeds a fuzz target with every DynamoGraphDeployment and
// DynamoComponentDeployment of Dynamo's manifests of both versions.
func addCompatSeeds(f *testing.F) {
	for _, dir := range []string{alphaCompatDir, compatDir} {
		docs, err := compat.Documents(dir)
		if err != nil {
			f.Fatal(err)
		}
		for _, d := range docs {
			if d.Kind == "DynamoGraphDeployment" || d.Kind == "DynamoComponentDeployment" {
				f.Add(d.Raw)
			}
		}
	}
}

// FuzzRoundTripManifest reads its input as a manifest of a graph or a
// component in either version; whatever decodes converts to the other
// version and back unchanged.
func FuzzRoundTripManifest(f *testing.F) {
	addCompatSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var (
			ag v1alpha1.DynamoGraphDeployment
			bg DynamoGraphDeployment
			ac v1alpha1.DynamoComponentDeployment
			bc DynamoComponentDeployment
		)
		var failures []string
		if yaml.Unmarshal(raw, &ag) == nil {
			failures = append(failures, checkGraphFromAlpha(t, jsonRoundTrip(t, &ag)))
		}
		if yaml.Unmarshal(raw, &bg) == nil && uniqueComponents(&bg) {
			failures = append(failures, checkGraphFromBeta(t, jsonRoundTrip(t, &bg)))
		}
		if yaml.Unmarshal(raw, &ac) == nil {
			failures = append(failures, checkComponentFromAlpha(t, jsonRoundTrip(t, &ac)))
		}
		if yaml.Unmarshal(raw, &bc) == nil {
			failures = append(failures, checkComponentFromBeta(t, jsonRoundTrip(t, &bc)))
		}
		for _, f := range failures {
			if f != "" {
				t.Fatal(f)
			}
		}
	})
}

// FuzzRoundTripFilled fills objects of both kinds and versions from its
// input (randfill) and converts them there and back.
func FuzzRoundTripFilled(f *testing.F) {
	addCompatSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fill := fillerFromFuzz(data)
		var (
			ag v1alpha1.DynamoGraphDeployment
			bg DynamoGraphDeployment
			ac v1alpha1.DynamoComponentDeployment
			bc DynamoComponentDeployment
		)
		fill.Fill(&ag)
		fill.Fill(&bg)
		fill.Fill(&ac)
		fill.Fill(&bc)
		for _, failure := range []string{
			checkGraphFromAlpha(t, jsonRoundTrip(t, &ag)),
			checkGraphFromBeta(t, jsonRoundTrip(t, &bg)),
			checkComponentFromAlpha(t, jsonRoundTrip(t, &ac)),
			checkComponentFromBeta(t, jsonRoundTrip(t, &bc)),
		} {
			if failure != "" {
				t.Fatal(failure)
			}
		}
	})
}

// uniqueComponents reports whether a graph's component names are unique,
// as the schema's list map requires of what the API server holds.
func uniqueComponents(b *DynamoGraphDeployment) bool {
	seen := map[string]bool{}
	for _, c := range b.Spec.Components {
		if seen[c.ComponentName] {
			return false
		}
		seen[c.ComponentName] = true
	}
	return true
}

package v1beta1

import (
	"math/rand"
	"testing"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// roundTrips is how many random objects of each kind and version the
// property tests convert there and back (with -short or -race: a tenth).
const roundTrips = 2000

func iterations() int {
	if testing.Short() || raceDetector {
		return roundTrips / 10
	}
	return roundTrips
}

// The four round trips below convert random objects of one version to the
// other, through JSON as the API server stores them, and back, and want
// the object they started from (apiequality.Semantic), annotations
// included: what the other version cannot hold is saved on the way and
// removed once restored.

func TestRoundTripGraphFromV1beta1(t *testing.T) {
	t.Parallel()
	f := filler(rand.New(rand.NewSource(1)))
	for i := range iterations() {
		var in DynamoGraphDeployment
		f.Fill(&in)
		if err := checkGraphFromBeta(t, jsonRoundTrip(t, &in)); err != "" {
			t.Fatalf("object %d: %s", i, err)
		}
	}
}

func TestRoundTripGraphFromV1alpha1(t *testing.T) {
	t.Parallel()
	f := filler(rand.New(rand.NewSource(2)))
	for i := range iterations() {
		var in v1alpha1.DynamoGraphDeployment
		f.Fill(&in)
		if err := checkGraphFromAlpha(t, jsonRoundTrip(t, &in)); err != "" {
			t.Fatalf("object %d: %s", i, err)
		}
	}
}

func TestRoundTripComponentFromV1beta1(t *testing.T) {
	t.Parallel()
	f := filler(rand.New(rand.NewSource(3)))
	for i := range iterations() {
		var in DynamoComponentDeployment
		f.Fill(&in)
		if err := checkComponentFromBeta(t, jsonRoundTrip(t, &in)); err != "" {
			t.Fatalf("object %d: %s", i, err)
		}
	}
}

func TestRoundTripComponentFromV1alpha1(t *testing.T) {
	t.Parallel()
	f := filler(rand.New(rand.NewSource(4)))
	for i := range iterations() {
		var in v1alpha1.DynamoComponentDeployment
		f.Fill(&in)
		if err := checkComponentFromAlpha(t, jsonRoundTrip(t, &in)); err != "" {
			t.Fatalf("object %d: %s", i, err)
		}
	}
}

// checkGraphFromBeta converts a v1beta1 graph to v1alpha1 and back and
// returns what went wrong, "" if nothing.
func checkGraphFromBeta(t testing.TB, in *DynamoGraphDeployment) string {
	t.Helper()
	var hub v1alpha1.DynamoGraphDeployment
	if err := in.DeepCopy().ConvertTo(&hub); err != nil {
		return "ConvertTo: " + err.Error()
	}
	var out DynamoGraphDeployment
	if err := out.ConvertFrom(jsonRoundTrip(t, &hub)); err != nil {
		return "ConvertFrom: " + err.Error()
	}
	// The conversion leaves TypeMeta to its caller (the webhook sets it).
	out.TypeMeta = in.TypeMeta
	if d := semanticDiff(in, jsonRoundTrip(t, &out)); d != "" {
		return "v1beta1 -> v1alpha1 -> v1beta1 (-in +out):\n" + d
	}
	return ""
}

func checkGraphFromAlpha(t testing.TB, in *v1alpha1.DynamoGraphDeployment) string {
	t.Helper()
	var spoke DynamoGraphDeployment
	if err := spoke.ConvertFrom(in.DeepCopy()); err != nil {
		return "ConvertFrom: " + err.Error()
	}
	var out v1alpha1.DynamoGraphDeployment
	if err := jsonRoundTrip(t, &spoke).ConvertTo(&out); err != nil {
		return "ConvertTo: " + err.Error()
	}
	// The conversion leaves TypeMeta to its caller (the webhook sets it).
	out.TypeMeta = in.TypeMeta
	if d := semanticDiff(in, jsonRoundTrip(t, &out)); d != "" {
		return "v1alpha1 -> v1beta1 -> v1alpha1 (-in +out):\n" + d
	}
	return ""
}

func checkComponentFromBeta(t testing.TB, in *DynamoComponentDeployment) string {
	t.Helper()
	var hub v1alpha1.DynamoComponentDeployment
	if err := in.DeepCopy().ConvertTo(&hub); err != nil {
		return "ConvertTo: " + err.Error()
	}
	var out DynamoComponentDeployment
	if err := out.ConvertFrom(jsonRoundTrip(t, &hub)); err != nil {
		return "ConvertFrom: " + err.Error()
	}
	// The conversion leaves TypeMeta to its caller (the webhook sets it).
	out.TypeMeta = in.TypeMeta
	if d := semanticDiff(in, jsonRoundTrip(t, &out)); d != "" {
		return "v1beta1 -> v1alpha1 -> v1beta1 (-in +out):\n" + d
	}
	return ""
}

func checkComponentFromAlpha(t testing.TB, in *v1alpha1.DynamoComponentDeployment) string {
	t.Helper()
	var spoke DynamoComponentDeployment
	if err := spoke.ConvertFrom(in.DeepCopy()); err != nil {
		return "ConvertFrom: " + err.Error()
	}
	var out v1alpha1.DynamoComponentDeployment
	if err := jsonRoundTrip(t, &spoke).ConvertTo(&out); err != nil {
		return "ConvertTo: " + err.Error()
	}
	// The conversion leaves TypeMeta to its caller (the webhook sets it).
	out.TypeMeta = in.TypeMeta
	if d := semanticDiff(in, jsonRoundTrip(t, &out)); d != "" {
		return "v1alpha1 -> v1beta1 -> v1alpha1 (-in +out):\n" + d
	}
	return ""
}

package v1alpha1

// v1alpha1 is the conversion hub of DynamoGraphDeployment and
// DynamoComponentDeployment: the version stored and the one the operator
// reads and writes. Each other served version (nvidia.com/v1beta1) converts
// to and from it, and only to and from it, so that n versions need n-1
// conversions rather than one per pair, and a v1beta1 object round-trips
// through the stored form (package v1beta1 says why v1alpha1 stays stored).

// Hub marks DynamoGraphDeployment as the conversion hub.
func (*DynamoGraphDeployment) Hub() {}

// Hub marks DynamoComponentDeployment as the conversion hub.
func (*DynamoComponentDeployment) Hub() {}

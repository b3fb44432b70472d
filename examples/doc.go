// Package examples holds the example graphs of this repository's README and
// docs, in nvidia.com/v1beta1 (Dynamo's current API) and v1alpha1. It has no
// code: its test proves that every example parses strictly into the
// operator's API types and passes every admission webhook rule, so an
// example a user copies is never refused.
package examples

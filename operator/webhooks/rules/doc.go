// Package rules holds the admission rules of the four kinds as pure
// functions of the objects (ValidateX, ValidateXUpdate, GraphDefaults); the
// package webhooks wraps them in admission handlers. The table of every rule
// and where it lives is in the webhooks package documentation.
//
// The rules live apart from the admission glue so that their fuzz targets
// (fuzz_test.go) build without controller-runtime: `go test -fuzz`
// instruments every package the test binary links, and that instrumented
// build of controller-runtime and its dependencies used to be the longest
// step of a cold `make test`.
package rules

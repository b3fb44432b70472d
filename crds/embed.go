// Package crds embeds the project's CustomResourceDefinitions, generated
// into this directory by `make generate`, so the operator binary can apply
// the very CRDs it was built with (dynamo-operator --apply-crds, the chart's
// init container) and `helm upgrade` upgrades them with the image.
package crds

import "embed"

// FS holds every generated CRD manifest (*.yaml) of this directory.
//
//go:embed *.yaml
var FS embed.FS

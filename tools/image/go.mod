module github.com/dynamoctl/dynamo-operator/tools/image

// Builds the operator's OCI image without a Docker daemon
// (go-containerregistry); its own module, so its dependencies do not move
// the operator's.
go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/google/go-containerregistry v0.20.7
)

require (
	github.com/containerd/stargz-snapshotter/estargz v0.18.1 // indirect
	github.com/klauspost/compress v1.19.0 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/vbatts/tar-split v0.12.2 // indirect
	golang.org/x/sync v0.22.0 // indirect
)

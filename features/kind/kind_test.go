package kind

import "testing"

func TestContainerdName(t *testing.T) {
	for image, want := range map[string]string{
		"nvcr.io/nvidia/ai-dynamo/vllm-runtime:9.9": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:9.9",
		"vllm-runtime:1":                  "docker.io/library/vllm-runtime:1",
		"my-registry/vllm-runtime:my-tag": "docker.io/my-registry/vllm-runtime:my-tag",
		"localhost/x:1":                   "localhost/x:1",
		"registry.example:5000/a/b":       "registry.example:5000/a/b:latest",
		"envoy":                           "docker.io/library/envoy:latest",
		"registry.example/a@sha256:0123":  "registry.example/a@sha256:0123",
	} {
		if got := ContainerdName(image); got != want {
			t.Errorf("ContainerdName(%q) = %q, want %q", image, got, want)
		}
	}
}

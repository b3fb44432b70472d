package main

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestRuntimeImageArchive builds the fake runtime program, makes the
// archive as make runtime-image does, and reads it back as docker load and
// containerd (kind load image-archive) do: every name of
// runtime-images.txt names the one image, whose layer links every program
// name to the binary, which answers as the shell it is called as.
func TestRuntimeImageArchive(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir, "./sim/cmd/dynamo-runtime")
	archive := filepath.Join(dir, "runtime.tar")
	if err := buildRuntimeArchive(bin, "runtime-images.txt", "0.1.0", runtime.GOARCH, archive); err != nil {
		t.Fatal(err)
	}
	tags, err := ReadNames("runtime-images.txt")
	if err != nil {
		t.Fatal(err)
	}

	// containerd's reading: index.json lists the manifest once per name,
	// named as the kubelet asks for it.
	idx := untarLayout(t, archive, filepath.Join(dir, "layout"))
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	digests := map[v1.Hash]bool{}
	for _, m := range im.Manifests {
		names = append(names, m.Annotations["io.containerd.image.name"])
		digests[m.Digest] = true
	}
	wantNames := []string{
		"docker.io/lambda108/dynamo:post-rebase",
		"docker.io/library/my-dynamo-image:my-tag",
		"docker.io/my-registry/dynamo-openengine-sidecar:my-tag",
		"docker.io/my-registry/dynamo-planner:my-tag",
		"docker.io/my-registry/sglang-openengine:my-tag",
		"docker.io/my-registry/sglang-runtime:my-tag",
		"docker.io/my-registry/tensorrtllm-openengine:my-tag",
		"docker.io/my-registry/tensorrtllm-runtime:my-tag",
		"docker.io/my-registry/vllm-runtime:my-tag",
		"nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.3.1",
		"nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.3.1",
		"nvcr.io/nvidia/ai-dynamo/dynamo-planner:my-tag",
		"nvcr.io/nvidia/ai-dynamo/epp-image:my-tag",
		"nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1",
		"nvcr.io/nvidia/ai-dynamo/sglang-runtime:my-tag",
		"nvcr.io/nvidia/ai-dynamo/tensorrtllm-placeholder:1.3.0",
		"nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.3.1",
		"nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:my-tag",
		"nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0",
		"nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0",
		"nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1",
		"nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1",
		"nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1-efa",
		"nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag",
		"registry.example/dynamo/frontend:v1",
	}
	slices.Sort(names)
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("index.json names (-want +got):\n%s", diff)
	}
	if len(digests) != 1 {
		t.Fatalf("index.json lists %d manifests, want one image under every name", len(digests))
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}

	// Docker's reading: manifest.json, one entry with every name.
	var manifest []struct{ Config string }
	if err := json.Unmarshal(readFromTar(t, archive, "manifest.json"), &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %d entries, %v", len(manifest), err)
	}
	cfgName, _ := img.ConfigName()
	for _, tag := range tags {
		dockerImg, err := tarball.ImageFromPath(archive, &tag)
		if err != nil {
			t.Fatalf("reading the archive back as %s (docker load's manifest.json): %v", tag, err)
		}
		if d, _ := dockerImg.ConfigName(); d != cfgName {
			t.Errorf("%s: config %s, the OCI index's is %s", tag, d, cfgName)
		}
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if !slices.Equal(c.Entrypoint, []string{RuntimeEntrypoint}) || len(c.Cmd) != 0 || c.User != "" || c.WorkingDir != "/workspace" || cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("config: entrypoint %v, cmd %v, user %q, workdir %q, %s/%s", c.Entrypoint, c.Cmd, c.User, c.WorkingDir, cfg.OS, cfg.Architecture)
	}

	// The layer: the binary, and every program name linked to it.
	extracted := filepath.Join(dir, "from-layer")
	links := map[string]string{}
	for n, h := range layerFiles(t, img, strings.TrimPrefix(RuntimeBinary, "/"), extracted) {
		if h.Typeflag == tar.TypeSymlink {
			links["/"+n] = h.Linkname
		}
	}
	wantLinks := map[string]string{}
	for _, n := range []string{"/bin/sh", "/bin/bash", "/usr/bin/python3", "/usr/bin/python", "/usr/bin/curl", "/usr/bin/wget", "/usr/bin/jq", "/usr/bin/grep",
		"/bin/sleep", "/bin/echo", "/bin/cat", "/bin/true", "/bin/false", "/opt/nvidia/nvidia_entrypoint.sh"} {
		wantLinks[n] = RuntimeBinary
	}
	if diff := cmp.Diff(wantLinks, links); diff != "" {
		t.Errorf("symbolic links (-want +got):\n%s", diff)
	}
	sh := exec.Command(extracted, "-c", "exit 3")
	sh.Args[0] = "/bin/sh"
	if err := sh.Run(); sh.ProcessState == nil || sh.ProcessState.ExitCode() != 3 {
		t.Errorf("the binary from the layer, as sh -c 'exit 3': %v", err)
	}
}

func readFromTar(t *testing.T, archive, file string) []byte {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in %s: %v", file, archive, err)
		}
		if h.Name == file {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}

// Every Dynamo runtime image the repository's example graphs run is one of
// the fake runtime's names, so the archive serves each graph on kind.
func TestRuntimeNamesCoverTheExamples(t *testing.T) {
	tags, err := ReadNames("runtime-images.txt")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, tag := range tags {
		have[ContainerdName(tag)] = true
	}
	image := regexp.MustCompile(`(?m)^\s*image:\s*"?([^"\s]+)"?`)
	runtimeRepo := regexp.MustCompile(`(-runtime|/dynamo-planner|/dynamo-frontend)$`)
	seen := 0
	err = filepath.WalkDir(filepath.Join("..", "..", "examples"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range image.FindAllStringSubmatch(string(data), -1) {
			ref, err := name.NewTag(m[1])
			if err != nil || !runtimeRepo.MatchString(ref.Context().Name()) {
				continue
			}
			seen++
			if !have[ContainerdName(ref)] {
				t.Errorf("%s runs %s, which runtime-images.txt does not name", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no runtime image found in examples/: the pattern is wrong")
	}
}

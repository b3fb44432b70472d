// Command image builds the dynamo-operator container image from a static
// binary, without a Docker daemon, and writes it as an image archive that
// `docker load -i` and `kind load image-archive` read (make image).
//
// The image is what the Dockerfile describes: a distroless-style root file
// system (no shell, no package manager) with the binary at /dynamo-operator,
// /etc/passwd and /etc/group naming the nonroot user 65532, a writable /tmp,
// and the binary as entrypoint run as 65532:65532. It is built from scratch
// rather than on gcr.io/distroless/static so the build needs no registry;
// the layout is the same.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entrypoint and User are the contract with the chart (command
// /dynamo-operator, runAsUser 65532).
const (
	Entrypoint = "/dynamo-operator"
	User       = "65532:65532"
)

func main() {
	binary := flag.String("binary", "", "static dynamo-operator binary (linux)")
	repo := flag.String("repository", "ghcr.io/dynamoctl/dynamo-operator", "image repository")
	tag := flag.String("tag", "", "image tag: the chart's appVersion")
	out := flag.String("out", "", "image archive to write")
	arch := flag.String("arch", "amd64", "architecture of the binary")
	flag.Parse()
	if *binary == "" || *tag == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "image: --binary, --tag and --out are required")
		os.Exit(2)
	}
	if err := buildArchive(*binary, *repo+":"+*tag, *tag, *arch, *out); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func buildArchive(binaryPath, ref, version, arch, out string) error {
	bin, err := os.ReadFile(binaryPath)
	if err != nil {
		return err
	}
	img, err := Image(bin, version, arch)
	if err != nil {
		return err
	}
	tagRef, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, tagRef, img)
}

// epoch stamps every file and the image, so the same binary always makes
// the same image digest.
var epoch = time.Unix(0, 0).UTC()

// Image is the operator image holding bin.
func Image(bin []byte, version, arch string) (v1.Image, error) {
	layerTar, err := rootFS(bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", arch, v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{Entrypoint}
	cfg.Config.User = User
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/"}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "dynamo-operator",
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.source":  "https://github.com/dynamoctl/dynamo-operator",
	}
	return mutate.ConfigFile(img, cfg)
}

// rootFS is the single layer: the distroless static nonroot layout.
func rootFS(bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		name string
		mode int64
		dir  bool
		data []byte
		uid  int
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: 65532},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "dynamo-operator", mode: 0o755, data: bin},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Uid: e.uid, Gid: e.uid, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

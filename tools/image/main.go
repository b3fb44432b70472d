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
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
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
	runtimeNames := flag.String("runtime-names", "", "build the fake Dynamo runtime image from --binary (sim/cmd/dynamo-runtime) instead, tagged with every image name this file lists")
	flag.Parse()
	if *binary == "" || *tag == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "image: --binary, --tag and --out are required")
		os.Exit(2)
	}
	build := func() error { return buildArchive(*binary, *repo+":"+*tag, *tag, *arch, *out) }
	if *runtimeNames != "" {
		build = func() error { return buildRuntimeArchive(*binary, *runtimeNames, *tag, *arch, *out) }
	}
	if err := build(); err != nil {
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
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return WriteArchive(out, []name.Tag{tag}, img)
}

// WriteArchive writes img as one tar holding both an OCI image layout
// (oci-layout, index.json naming each tag, blobs/sha256/...) and Docker's
// manifest.json over the same blobs, as `docker save` does since Docker 25:
// `docker load` of any version, `kind load image-archive`, containerd's
// `ctr import` and skopeo's oci-archive all read it. An image with several
// names is one manifest listed once per name in index.json (containerd names
// each image by its io.containerd.image.name) and once in manifest.json with
// every name in RepoTags (docker load).
func WriteArchive(out string, tags []name.Tag, img v1.Image) error {
	dir, err := os.MkdirTemp("", "dynamo-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	var repoTags []string
	for _, tag := range tags {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": tag.TagStr(),
			"io.containerd.image.name":          ContainerdName(tag),
		})); err != nil {
			return err
		}
		repoTags = append(repoTags, ContainerdName(tag))
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	var layerPaths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		layerPaths = append(layerPaths, "blobs/sha256/"+d.Hex)
	}
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   "blobs/sha256/" + cfgName.Hex,
		"RepoTags": repoTags,
		"Layers":   layerPaths,
	}})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644); err != nil {
		return err
	}
	return tarDir(dir, out)
}

// ContainerdName is tag as containerd and the kubelet spell an image:
// Docker Hub's registry is docker.io (go-containerregistry says
// index.docker.io, under which the kubelet would never find the image).
func ContainerdName(tag name.Tag) string {
	if tag.RegistryStr() == name.DefaultRegistry {
		return "docker.io/" + tag.RepositoryStr() + ":" + tag.TagStr()
	}
	return tag.Name()
}

// tarDir writes the files under dir into the tar file out, in a stable order.
func tarDir(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), epoch, 0, 0, "", ""
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		_ = f.Close()
		return err
	}
	if err := tw.Close(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// epoch stamps every file and the image, so the same binary always makes
// the same image digest.
var epoch = time.Unix(0, 0).UTC()

// Image is the operator image holding bin.
func Image(bin []byte, version, arch string) (v1.Image, error) {
	fs, err := rootFS(bin)
	if err != nil {
		return nil, err
	}
	return singleLayerImage(fs, arch, func(c *v1.Config) {
		c.Entrypoint = []string{Entrypoint}
		c.User = User
		c.WorkingDir = "/"
		c.Env = []string{"PATH=/"}
		c.Labels = map[string]string{
			"org.opencontainers.image.title":   "dynamo-operator",
			"org.opencontainers.image.version": version,
			"org.opencontainers.image.source":  "https://github.com/dynamoctl/dynamo-operator",
		}
	})
}

// singleLayerImage is an OCI image of one layer, for linux/arch, created at
// epoch, its config set by configure.
func singleLayerImage(fs []byte, arch string, configure func(*v1.Config)) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(fs)), nil },
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
	configure(&cfg.Config)
	return mutate.ConfigFile(img, cfg)
}

// rootFS is the single layer: the distroless static nonroot layout.
func rootFS(bin []byte) ([]byte, error) {
	return layerTar([]entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: 65532},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "dynamo-operator", mode: 0o755, data: bin},
	})
}

// entry is a file, directory or symbolic link of a layer.
type entry struct {
	name string
	mode int64
	dir  bool
	data []byte
	uid  int
	// link is a symbolic link's target.
	link string
}

// layerTar is a layer holding entries, stamped with epoch.
func layerTar(entries []entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Uid: e.uid, Gid: e.uid, Format: tar.FormatPAX}
		switch {
		case e.dir:
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
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

package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestImageArchive builds the real operator binary, makes the image archive
// as make image does, reads it back, and runs the binary taken out of the
// image's layer.
func TestImageArchive(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir, "./operator/cmd/manager")
	archive := filepath.Join(dir, "image.tar")
	if err := buildArchive(bin, "ghcr.io/dynamoctl/dynamo-operator:0.1.0", "0.1.0", runtime.GOARCH, archive); err != nil {
		t.Fatal(err)
	}

	// Docker's reading: manifest.json with the tag.
	tag, _ := name.NewTag("ghcr.io/dynamoctl/dynamo-operator:0.1.0")
	dockerImg, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatalf("reading the archive back as %s (docker load's manifest.json): %v", tag, err)
	}
	// The OCI reading: index.json names the tag, the manifest is OCI.
	img := readOCILayout(t, archive, filepath.Join(dir, "layout"))
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want OCI", mt)
	}
	d1, _ := dockerImg.ConfigName()
	d2, _ := img.ConfigName()
	if d1 != d2 {
		t.Errorf("manifest.json and index.json name different configs: %s, %s", d1, d2)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if !slices.Equal(c.Entrypoint, []string{"/dynamo-operator"}) || c.User != "65532:65532" || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %v, cmd %v, user %q; want [/dynamo-operator], none, 65532:65532", c.Entrypoint, c.Cmd, c.User)
	}
	if cfg.OS != "linux" || c.Labels["org.opencontainers.image.version"] != "0.1.0" {
		t.Errorf("os %s, version label %q", cfg.OS, c.Labels["org.opencontainers.image.version"])
	}

	extracted := filepath.Join(dir, "from-layer")
	files := layerFiles(t, img, "dynamo-operator", extracted)
	for _, want := range []string{"etc/passwd", "etc/group", "tmp/", "dynamo-operator"} {
		if files[want] == nil {
			t.Errorf("layer lacks %s", want)
		}
	}
	if h := files["dynamo-operator"]; h == nil || h.Mode&0o111 == 0 {
		t.Fatal("/dynamo-operator missing or not executable")
	}
	out, err := exec.Command(extracted, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("/dynamo-operator --help from the layer: %v\n%s", err, out)
	}
	for _, want := range []string{"Usage: dynamo-operator", "-apply-crds", "-webhook-manage-configurations"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--help output lacks %q:\n%s", want, out)
		}
	}
}

// buildBinary builds the module's package pkg for linux, static, as the
// Makefile does, into dir.
func buildBinary(t *testing.T, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	build := exec.Command("go", "build", "-trimpath", "-o", bin, pkg)
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// layerFiles reads the image's only layer: its entries by name, the file
// named extract written to the path to.
func layerFiles(t *testing.T, img v1.Image, extract, to string) map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if h.Name == extract {
			f, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
}

// readOCILayout unpacks the archive and opens it as an OCI image layout,
// returning the image index.json tags 0.1.0.
func readOCILayout(t *testing.T, archive, dir string) v1.Image {
	t.Helper()
	idx := untarLayout(t, archive, dir)
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "0.1.0" {
		t.Fatalf("index.json: %+v", im.Manifests)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// untarLayout unpacks the archive into dir and opens it as an OCI image
// layout.
func untarLayout(t *testing.T, archive, dir string) v1.ImageIndex {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("not an OCI image layout: %v", err)
	}
	return idx
}

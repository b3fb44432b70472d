package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The fake Dynamo runtime image (make runtime-image): the simulator's fake
// worker (sim/cmd/dynamo-runtime, one static program) laid out as Dynamo's
// runtime images are used by graphs: the program answers as python3 and
// python (`python3 -m dynamo.frontend ...`), as sh and bash (`sh -c "..."`
// commands and exec probes), as curl, wget, jq and grep (the probes'
// pipelines), as sleep, echo, cat, true and false (a container's or an exec
// probe's command without a shell, which the simulator runs as well), and
// as NVIDIA's entrypoint script, which runs its arguments.
// It runs as root with /workspace as working directory, as the runtime
// images do.
const (
	// RuntimeBinary is where the program lives; every name links to it.
	RuntimeBinary = "/usr/local/bin/dynamo-runtime"
	// RuntimeEntrypoint is the entrypoint of NVIDIA's images.
	RuntimeEntrypoint = "/opt/nvidia/nvidia_entrypoint.sh"
)

// RuntimeNames are the programs the image links to RuntimeBinary.
var RuntimeNames = []string{
	"/bin/sh", "/bin/bash", "/usr/bin/python3", "/usr/bin/python",
	"/usr/bin/curl", "/usr/bin/wget", "/usr/bin/jq", "/usr/bin/grep",
	"/bin/sleep", "/bin/echo", "/bin/cat", "/bin/true", "/bin/false", RuntimeEntrypoint,
}

// RuntimeImage is the fake runtime image holding bin.
func RuntimeImage(bin []byte, version, arch string) (v1.Image, error) {
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/bin/sh\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\n")},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "workspace/", mode: 0o755, dir: true},
	}
	dirs := map[string]bool{"etc/": true}
	addDirs := func(path string) {
		parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/") + "/"
			if !dirs[d] {
				dirs[d] = true
				entries = append(entries, entry{name: d, mode: 0o755, dir: true})
			}
		}
	}
	addDirs(RuntimeBinary)
	entries = append(entries, entry{name: strings.TrimPrefix(RuntimeBinary, "/"), mode: 0o755, data: bin})
	for _, n := range RuntimeNames {
		addDirs(n)
		entries = append(entries, entry{name: strings.TrimPrefix(n, "/"), mode: 0o777, link: RuntimeBinary})
	}
	fs, err := layerTar(entries)
	if err != nil {
		return nil, err
	}
	return singleLayerImage(fs, arch, func(c *v1.Config) {
		c.Entrypoint = []string{RuntimeEntrypoint}
		c.WorkingDir = "/workspace"
		c.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
		c.Labels = map[string]string{
			"org.opencontainers.image.title":       "dynamo-runtime (simulated)",
			"org.opencontainers.image.description": "the dynamo-operator simulator's fake Dynamo runtime: serves what python3 -m dynamo.* would, no model",
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.source":      "https://github.com/dynamoctl/dynamo-operator",
		}
	})
}

// ReadNames reads image names, one a line; blank lines and # comments are
// skipped.
func ReadNames(file string) ([]name.Tag, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var tags []name.Tag
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		tag, err := name.NewTag(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", file, line, err)
		}
		if !strings.HasSuffix(line, ":"+tag.TagStr()) {
			return nil, fmt.Errorf("%s: %q names no tag", file, line)
		}
		tags = append(tags, tag)
	}
	if len(tags) == 0 {
		return nil, fmt.Errorf("%s names no image", file)
	}
	return tags, sc.Err()
}

func buildRuntimeArchive(binaryPath, namesFile, version, arch, out string) error {
	bin, err := os.ReadFile(binaryPath)
	if err != nil {
		return err
	}
	tags, err := ReadNames(namesFile)
	if err != nil {
		return err
	}
	img, err := RuntimeImage(bin, version, arch)
	if err != nil {
		return err
	}
	return WriteArchive(out, tags, img)
}

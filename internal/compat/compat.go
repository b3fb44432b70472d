// Package compat reads the manifests Dynamo's users run (../shared/compat
// beside the repository) for the tests that must accept and run every one.
package compat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Document is one YAML document of a compat manifest.
type Document struct {
	// File is the manifest's path relative to the compat directory.
	File string
	Kind string
	Raw  []byte
}

// Documents reads every document of every .yaml/.yml file under dir, in
// walk order. A missing dir is an error: tests must not pass on nothing.
func Documents(dir string) ([]Document, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("the compat manifests are missing: %w", err)
	}
	var docs []Document
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			raw, err := reader.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			var head struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(raw, &head); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			docs = append(docs, Document{File: rel, Kind: head.Kind, Raw: raw})
		}
	})
	return docs, err
}

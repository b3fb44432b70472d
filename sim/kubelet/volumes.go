package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// volumes materialises a pod's volumes as directories under dir, one per
// volume, and keeps them current: Secret, ConfigMap, downward API and
// projected contents are rewritten when they change (as the kubelet
// syncs them, so a certificate Secret written after the pod started
// reaches it), service account tokens are requested bound to the pod and
// renewed at 80% of their lifetime. emptyDir is a plain directory.
type volumes struct {
	r   *Runner
	pod *corev1.Pod
	dir string
	// tokens remembers when each projected token must be renewed, by file.
	tokens map[string]time.Time
}

// Path is the host directory of volume name.
func (v *volumes) Path(name string) string { return filepath.Join(v.dir, name) }

// sync writes every volume; a missing non-optional source is an error
// naming the volume (the container does not start, as with a kubelet).
func (v *volumes) sync(ctx context.Context) error {
	for i := range v.pod.Spec.Volumes {
		vol := &v.pod.Spec.Volumes[i]
		files, err := v.files(ctx, vol)
		if err != nil {
			return fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		if files == nil {
			// Writable by the container's user, whoever it runs as.
			if err := os.MkdirAll(v.Path(vol.Name), 0o777); err != nil {
				return err
			}
			if err := os.Chmod(v.Path(vol.Name), 0o777); err != nil {
				return err
			}
			continue
		}
		if err := writeFiles(v.Path(vol.Name), files); err != nil {
			return fmt.Errorf("volume %q: %w", vol.Name, err)
		}
	}
	return nil
}

// file is the content and mode of one file of a volume.
type file struct {
	data []byte
	mode os.FileMode
}

// files is the content of a volume that has content; nil for emptyDir
// and kinds the simulator only gives an empty directory (hostPath, PVCs).
func (v *volumes) files(ctx context.Context, vol *corev1.Volume) (map[string]file, error) {
	out := map[string]file{}
	switch {
	case vol.Secret != nil:
		s := vol.Secret
		return out, v.secretFiles(ctx, out, s.SecretName, s.Items, mode(s.DefaultMode), isTrue(s.Optional))
	case vol.ConfigMap != nil:
		c := vol.ConfigMap
		return out, v.configMapFiles(ctx, out, c.Name, c.Items, mode(c.DefaultMode), isTrue(c.Optional))
	case vol.DownwardAPI != nil:
		return out, v.downwardFiles(out, vol.DownwardAPI.Items, mode(vol.DownwardAPI.DefaultMode))
	case vol.Projected != nil:
		m := mode(vol.Projected.DefaultMode)
		for _, src := range vol.Projected.Sources {
			var err error
			switch {
			case src.Secret != nil:
				err = v.secretFiles(ctx, out, src.Secret.Name, src.Secret.Items, m, isTrue(src.Secret.Optional))
			case src.ConfigMap != nil:
				err = v.configMapFiles(ctx, out, src.ConfigMap.Name, src.ConfigMap.Items, m, isTrue(src.ConfigMap.Optional))
			case src.DownwardAPI != nil:
				err = v.downwardFiles(out, src.DownwardAPI.Items, m)
			case src.ServiceAccountToken != nil:
				err = v.tokenFile(ctx, out, src.ServiceAccountToken, m)
			}
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, nil
}

func mode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m)
}

func itemMode(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m)
}

func (v *volumes) secretFiles(ctx context.Context, out map[string]file, name string, items []corev1.KeyToPath, m os.FileMode, optional bool) error {
	s, err := v.r.objects.Secret(ctx, v.pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional {
			return nil
		}
		return fmt.Errorf("secret %q: %w", name, err)
	}
	return keyFiles(out, "secret", name, s.Data, items, m)
}

func (v *volumes) configMapFiles(ctx context.Context, out map[string]file, name string, items []corev1.KeyToPath, m os.FileMode, optional bool) error {
	cm, err := v.r.objects.ConfigMap(ctx, v.pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional {
			return nil
		}
		return fmt.Errorf("configmap %q: %w", name, err)
	}
	data := map[string][]byte{}
	for k, s := range cm.Data {
		data[k] = []byte(s)
	}
	for k, b := range cm.BinaryData {
		data[k] = b
	}
	return keyFiles(out, "configmap", name, data, items, m)
}

func keyFiles(out map[string]file, kind, name string, data map[string][]byte, items []corev1.KeyToPath, m os.FileMode) error {
	if len(items) == 0 {
		for k, b := range data {
			out[k] = file{b, m}
		}
		return nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("%s %q has no key %q", kind, name, it.Key)
		}
		out[it.Path] = file{b, itemMode(it.Mode, m)}
	}
	return nil
}

func (v *volumes) downwardFiles(out map[string]file, items []corev1.DownwardAPIVolumeFile, m os.FileMode) error {
	for _, it := range items {
		if it.FieldRef == nil {
			continue // resourceFieldRef: not needed by any pod the simulator runs
		}
		val, err := FieldValue(v.pod, it.FieldRef.FieldPath)
		if err != nil {
			return err
		}
		out[it.Path] = file{[]byte(val), itemMode(it.Mode, m)}
	}
	return nil
}

// tokenFile requests the pod's ServiceAccount token from the TokenRequest
// API, bound to the pod (it dies with the pod), or keeps the current one
// until 80% of its lifetime has passed.
func (v *volumes) tokenFile(ctx context.Context, out map[string]file, src *corev1.ServiceAccountTokenProjection, m os.FileMode) error {
	key := src.Path
	path := filepath.Join(v.dir, "tokens", strings.ReplaceAll(key, "/", "_")+"-"+src.Audience)
	if renew, ok := v.tokens[path]; ok && v.r.clock.Now().Before(renew) {
		b, err := os.ReadFile(path)
		if err == nil {
			out[key] = file{b, m}
			return nil
		}
	}
	exp := int64(3600)
	if src.ExpirationSeconds != nil {
		exp = *src.ExpirationSeconds
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(exp),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: v.pod.Name, UID: v.pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	sa := v.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := v.r.client.CoreV1().ServiceAccounts(v.pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of serviceaccount %q: %w", sa, err)
	}
	now := v.r.clock.Now()
	life := tr.Status.ExpirationTimestamp.Sub(now)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(tr.Status.Token), 0o600); err != nil {
		return err
	}
	v.tokens[path] = now.Add(life * 8 / 10)
	out[key] = file{[]byte(tr.Status.Token), m}
	return nil
}

// writeFiles makes dir hold exactly files, changing only what differs.
// Each file is replaced by a rename, so a reader sees the old or the new
// content, never half of it.
func writeFiles(dir string, files map[string]file) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The volumes' parents must be passable for a container's non-root
	// user (t.TempDir and umask make them 0700 or 0755).
	_ = os.Chmod(filepath.Dir(dir), 0o755)
	for rel, f := range files {
		p := filepath.Join(dir, filepath.Clean("/"+rel))
		if old, err := os.ReadFile(p); err == nil && string(old) == string(f.data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(tmp, f.mode); err != nil {
			return err
		}
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
	}
	return nil
}

package v1beta1

// Items are the named entries of an object converted one by one: a graph's
// services (components), a status's services (components). Each is paired
// with the entry of the same name in the other version.

// saveItems saves the parts of each item of src that back (the other
// version converted back) does not reproduce.
func saveItems[S, O any](list []part[S, O], src map[string]*S, back func(string) *S, other func(string) *O, out *saved) error {
	for _, name := range sortedKeys(src) {
		s, b, o := src[name], back(name), other(name)
		if s == nil || b == nil || o == nil {
			continue
		}
		p, err := saveParts(list, s, b, o)
		if err != nil {
			return err
		}
		out.putItem(name, p)
	}
	return nil
}

// restoreItems restores the saved parts of each item of dst.
func restoreItems[S, O any](list []part[S, O], dst map[string]*S, other func(string) *O, in *saved) error {
	for _, name := range sortedKeys(dst) {
		d, o, p := dst[name], other(name), in.item(name)
		if d == nil || o == nil || p == nil {
			continue
		}
		if err := restoreParts(list, d, o, p); err != nil {
			return err
		}
	}
	return nil
}

// entries returns pointers to copies of the values of m; writeBack stores
// them again once changed.
func entries[V any](m map[string]V) map[string]*V {
	out := make(map[string]*V, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

func writeBack[V any](m map[string]V, ptrs map[string]*V) {
	for k, v := range ptrs {
		m[k] = *v
	}
}

// lookup returns a function finding an entry of m by name, nil if absent.
func lookup[V any](m map[string]V) func(string) *V {
	return func(name string) *V {
		v, ok := m[name]
		if !ok {
			return nil
		}
		return &v
	}
}

// lookupPtr is lookup for a map of pointers.
func lookupPtr[V any](m map[string]*V) func(string) *V {
	return func(name string) *V { return m[name] }
}

// components indexes a graph's components by name.
func components(b *DynamoGraphDeployment) map[string]*betaService {
	out := make(map[string]*betaService, len(b.Spec.Components))
	for i := range b.Spec.Components {
		out[b.Spec.Components[i].ComponentName] = &b.Spec.Components[i]
	}
	return out
}

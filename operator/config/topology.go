package config

import (
	"flag"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TopologyLevel is one topology level a graph's topologyConstraint may name
// (packDomain) and the node label whose value tells the level's domains
// apart: the pods packed within a rack all run on nodes whose rack label has
// one value.
type TopologyLevel struct {
	Domain string
	Label  string
}

const flagTopologyDomainLabels = "topology-domain-labels"

// DefaultTopologyDomainLabels are the levels when --topology-domain-labels
// is not given, broadest first: Kubernetes' well-known region, zone and
// hostname labels, the NVLink domain (clique) NVIDIA's GPU feature discovery
// labels GPU nodes with, and block and rack labels for the levels Kubernetes
// names none for.
const DefaultTopologyDomainLabels = "region=topology.kubernetes.io/region,zone=topology.kubernetes.io/zone," +
	"block=topology.nvidia.com/block,rack=topology.nvidia.com/rack,nvlink=nvidia.com/gpu.clique,host=kubernetes.io/hostname"

// topologyDomainPattern is the CRDs' pattern of a packDomain.
var topologyDomainPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

func addTopologyFlags(fs *flag.FlagSet, v *flagValues) {
	fs.StringVar(&v.topology, flagTopologyDomainLabels, DefaultTopologyDomainLabels,
		"The topology levels a topologyConstraint's packDomain may name, each as domain=node-label, broadest first: "+
			"the pods packed within a domain are placed on nodes that share one value of its label.")
}

// parseTopologyDomainLabels parses --topology-domain-labels: a comma-separated
// list of domain=label, each domain once.
func parseTopologyDomainLabels(s string, p *problems) []TopologyLevel {
	var out []TopologyLevel
	seen := map[string]bool{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		domain, label, ok := strings.Cut(entry, "=")
		domain, label = strings.TrimSpace(domain), strings.TrimSpace(label)
		switch {
		case !ok:
			p.flag(flagTopologyDomainLabels, "%q is not domain=node-label", entry)
			continue
		case !topologyDomainPattern.MatchString(domain):
			p.flag(flagTopologyDomainLabels, "domain %q must be lowercase letters, digits and inner dashes", domain)
			continue
		case seen[domain]:
			p.flag(flagTopologyDomainLabels, "domain %q is given twice", domain)
			continue
		}
		if errs := validation.IsQualifiedName(label); len(errs) > 0 {
			p.flag(flagTopologyDomainLabels, "label %q of domain %s: %s", label, domain, strings.Join(errs, "; "))
			continue
		}
		seen[domain] = true
		out = append(out, TopologyLevel{Domain: domain, Label: label})
	}
	return out
}

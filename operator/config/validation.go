package config

import (
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// maxLogVerbosity keeps -verbosity within zapcore.Level's int8 range.
	maxLogVerbosity = 127
	// maxOperatorVersionLength bounds the version so Lease holder identities
	// that embed it stay readable and within API limits.
	maxOperatorVersionLength = 128
	// leaderElectionJitterFactor mirrors k8s.io/client-go/tools/leaderelection.JitterFactor,
	// not imported to keep this package free of client dependencies.
	leaderElectionJitterFactor = 1.2
)

// imageRepositoryPattern is the path component grammar of the OCI
// distribution reference spec.
var imageRepositoryPattern = regexp.MustCompile(
	`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$`)

// problems collects validation failures so they can be reported together.
type problems []string

func (p *problems) flag(name, format string, args ...any) {
	*p = append(*p, "--"+name+": "+fmt.Sprintf(format, args...))
}

func (p *problems) env(name, format string, args ...any) {
	*p = append(*p, name+": "+fmt.Sprintf(format, args...))
}

// err joins all problems into one line; values are quoted with %q where
// they come from the user, so they cannot introduce line breaks.
func (p problems) err() error {
	return errors.New("invalid configuration: " + strings.Join(p, "; "))
}

// checkServiceAddress accepts "" (unset), scheme://host[:port] or host:port.
func checkServiceAddress(p *problems, name, addr, example string) {
	if addr == "" {
		return
	}
	if strings.Contains(addr, "://") {
		u, err := url.Parse(addr)
		if err == nil && u.Scheme != "" && validHost(u.Hostname()) && (u.Port() == "" || validPort(u.Port(), 1)) {
			return
		}
		if err == nil {
			// Redact so credentials in a URL never reach the logs.
			addr = u.Redacted()
		}
	} else if host, port, err := net.SplitHostPort(addr); err == nil && validHost(host) && validPort(port, 1) {
		return
	}
	p.flag(name, "must be a URL with scheme and host (e.g. %s) or host:port, got %q", example, addr)
}

// checkBindAddress accepts host:port with an optional host, or "0" which
// controller-runtime treats as disabled.
func checkBindAddress(p *problems, name, addr string) {
	if addr == "0" {
		return
	}
	if host, port, err := net.SplitHostPort(addr); err == nil && (host == "" || validHost(host)) && validPort(port, 0) {
		return
	}
	p.flag(name, `must be host:port with a port between 0 and 65535, or "0" to disable, got %q`, addr)
}

// validPort reports whether port is a decimal number in [lowest, 65535].
func validPort(port string, lowest int) bool {
	if port == "" || strings.Trim(port, "0123456789") != "" {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= lowest && n <= 65535
}

// validHost accepts IP addresses and DNS names. Underscores are tolerated
// because container runtimes commonly use them in service names.
func validHost(host string) bool {
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil {
		return true
	}
	return len(validation.IsDNS1123SubdomainWithUnderscore(strings.ToLower(host))) == 0
}

// hasScheme requires an explicit "scheme://", because url.Parse would
// read "host:1234" as scheme "host".
func hasScheme(s string) bool {
	u, err := url.Parse(s)
	i := strings.Index(s, "://")
	return err == nil && i > 0 && strings.EqualFold(s[:i], u.Scheme)
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && validHost(u.Hostname())
}

func checkDNS1123Label(p *problems, name, value string) {
	addValidationErrors(p, name, value, validation.IsDNS1123Label(value))
}

func checkDNS1123Subdomain(p *problems, name, value string) {
	addValidationErrors(p, name, value, validation.IsDNS1123Subdomain(value))
}

func checkDNS1035Label(p *problems, name, value string) {
	addValidationErrors(p, name, value, validation.IsDNS1035Label(value))
}

// addValidationErrors records apimachinery validation messages; name is
// already in display form (--flag or ENV_VAR).
func addValidationErrors(p *problems, name, value string, errs []string) {
	if len(errs) == 0 {
		return
	}
	*p = append(*p, fmt.Sprintf("%s: %s, got %q", name, strings.Join(errs, ", "), value))
}

// parseLogLevel returns the normalised level name or verbosity.
func parseLogLevel(s string) (string, error) {
	switch level := strings.ToLower(s); level {
	case "debug", "info", "warn", "error":
		return level, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return "", errors.New("must be one of debug, info, warn, error or a verbosity number")
	}
	if n < 0 || n > maxLogVerbosity {
		return "", fmt.Errorf("verbosity must be between 0 and %d", maxLogVerbosity)
	}
	return strconv.Itoa(n), nil
}

func parseBoolEnv(env func(string) (string, bool), p *problems, name string, def bool) bool {
	s, ok := env(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		p.env(name, "must be true or false, got %q", s)
		return def
	}
	return b
}

// parseCABundle decodes --webhook-ca-bundle: base64 (as webhook
// configurations and the chart's webhook.caBundle carry it) of PEM
// certificates, meaningful only in the external cert mode, where the
// installer provides the certificate.
func parseCABundle(s string, mode WebhookCertMode, p *problems) []byte {
	if s == "" {
		return nil
	}
	if mode != WebhookCertModeExternal {
		p.flag(flagWebhookCABundle, "only used with --%s=%s; in the other modes the CA is injected", flagWebhookCertMode, WebhookCertModeExternal)
		return nil
	}
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		p.flag(flagWebhookCABundle, "must be base64-encoded PEM: %v", err)
		return nil
	}
	if block, _ := pem.Decode(data); block == nil || block.Type != "CERTIFICATE" {
		p.flag(flagWebhookCABundle, "must be base64-encoded PEM certificates")
		return nil
	}
	return data
}

package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dynamoctl/dynamo-operator/sim/command"
)

// httpClient probes like the kubelet: no keep-alive (every probe is a new
// connection, so a server that stopped accepting fails at once), no
// certificate checks for HTTPS, redirects not followed (3xx is success).
var httpClient = &http.Client{
	Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet does
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Run performs probe p of container c in a pod at podIP and reports
// whether it succeeded, and why not. The error is an exec probe whose
// command the simulator cannot evaluate: the probe fails, and the caller
// says so.
func Run(ctx context.Context, podIP string, c *corev1.Container, p *corev1.Probe, timeout time.Duration) (bool, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.Exec != nil:
		return execProbe(ctx, podIP, c, p.Exec)
	case p.HTTPGet != nil:
		ok, msg := httpGet(ctx, podIP, c, p.HTTPGet)
		return ok, msg, nil
	case p.GRPC != nil:
		ok, msg := grpcHealth(ctx, podIP, p.GRPC)
		return ok, msg, nil
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, c)
		if err != nil {
			return false, err.Error(), nil
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(podIP, strconv.Itoa(port)))
		if err != nil {
			return false, err.Error(), nil
		}
		_ = conn.Close()
		return true, "", nil
	default:
		return false, "probe has no handler", nil
	}
}

// execProbe evaluates an exec probe's command as the container would run
// it (sim/command): its shell, curl, wget, jq and grep, localhost being the
// pod's address (where its fake worker serves), env the container's
// literal values ($(VAR) substituted as the kubelet does). The probe succeeds when the command exits 0, as the
// kubelet's; a command the simulator cannot evaluate fails it.
func execProbe(ctx context.Context, podIP string, c *corev1.Container, e *corev1.ExecAction) (bool, string, error) {
	env := map[string]string{}
	for _, v := range c.Env {
		if v.ValueFrom == nil {
			env[v.Name] = v.Value
		}
	}
	// The kubelet substitutes $(VAR) from the container's literal env in
	// an exec probe's command, as in the container's.
	argv := make([]string, len(e.Command))
	for i, a := range e.Command {
		argv[i] = command.Expand(a, env)
	}
	r := &command.Runner{Host: podIP, Env: env}
	res, err := r.Exec(ctx, argv)
	if errors.Is(err, command.ErrUnsupported) {
		return false, "exec probe not evaluated: " + err.Error(), err
	}
	if err != nil {
		// The probe's timeout ended it, as the kubelet's does.
		return false, fmt.Sprintf("command %q timed out", e.Command), nil
	}
	if res.Code != 0 {
		return false, fmt.Sprintf("command %q exited with %d: %s", e.Command, res.Code, res.Stdout), nil
	}
	return true, "", nil
}

// httpGet is an HTTP probe: success is a status from 200 to 399.
func httpGet(ctx context.Context, podIP string, c *corev1.Container, g *corev1.HTTPGetAction) (bool, string) {
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return false, err.Error()
	}
	host := podIP
	if g.Host != "" {
		host = g.Host
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	path := g.Path
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host, strconv.Itoa(port))+path, nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/dynamo-sim")
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, ""
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
}

// resolvePort turns a number or a container port name into a number.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, p.StrVal)
}

// grpcHealth is a gRPC probe, as the kubelet's: the gRPC health service's
// Check of the probe's service at the pod's port, over plain text;
// success is SERVING.
func grpcHealth(ctx context.Context, podIP string, g *corev1.GRPCAction) (bool, string) {
	addr := net.JoinHostPort(podIP, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent("kube-probe"))
	if err != nil {
		return false, fmt.Sprintf("failed to connect service %q: %v", addr, err)
	}
	defer func() { _ = conn.Close() }()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return false, fmt.Sprintf("health check of %q at %s failed: %v", service, addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return false, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus())
	}
	return true, ""
}

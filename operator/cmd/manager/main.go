// Command manager runs the Dynamo operator, which reconciles the
// nvidia.com/v1alpha1 inference graph resources.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
)

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stderr))
}

// Exit codes of run.
const (
	exitOK          = 0
	exitFailure     = 1
	exitInvalidArgs = 2
)

// run is main without the process exit, so tests can drive it with their
// own arguments and environment.
func run(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	o, err := config.Parse(args, lookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		config.Usage(stderr)
		return exitOK
	}
	if err != nil {
		printError(stderr, err)
		return exitInvalidArgs
	}

	logger := newLogger(o, stderr)
	ctrl.SetLogger(logger)
	// client-go (leader election, watches) logs through klog; keep one
	// format and one level for everything.
	klog.SetLogger(logger)
	log := logger.WithName("setup")
	memory := tuneMemory(lookupEnv, o.PprofBindAddress != "0" && o.PprofBindAddress != "", log)

	restConfig, err := ctrl.GetConfig()
	if err != nil {
		printError(stderr, fmt.Errorf("loading Kubernetes client configuration: %w", err))
		return exitFailure
	}
	if o.ApplyCRDs {
		return applyCRDs(restConfig, crdinstall.ConversionFor(o), log, stderr)
	}
	mgr, err := app.New(restConfig, o, app.Deps{})
	if err != nil {
		printError(stderr, fmt.Errorf("creating manager: %w", err))
		return exitFailure
	}

	startup := append([]any{"version", o.OperatorVersion, "mode", o.Mode(), "namespace", o.OperatorNamespace}, memory...)
	if o.RestrictNamespace != "" {
		startup = append(startup, "watchNamespace", o.RestrictNamespace)
	}
	log.Info("starting dynamo-operator", startup...)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		return exitFailure
	}
	return exitOK
}

// newLogger logs JSON for collectors unless --log-format=console asks for
// the human-readable format. LOG_LEVEL selects how much: info is V(0), what
// users must see; a number n shows V(n) too (1: each child written and why;
// 2: reconciles with nothing to do). Stack traces only come with errors.
func newLogger(o *config.Options, w io.Writer) logr.Logger {
	opts := []zap.Opts{zap.WriteTo(w), zap.Level(o.ZapLevel()), zap.StacktraceLevel(zapcore.ErrorLevel)}
	if o.LogFormat == config.LogFormatConsole {
		opts = append(opts, zap.ConsoleEncoder())
	} else {
		opts = append(opts, zap.JSONEncoder())
	}
	return zap.New(opts...)
}

// crdApplyTimeout bounds the init container: the API server establishes a
// CRD within seconds, so a minute means something is wrong.
const crdApplyTimeout = time.Minute

// applyCRDs is the --apply-crds mode: the chart's init container applies
// the CRDs this binary embeds, so they move with the image on helm upgrade,
// with their conversion webhook pointing at conv: the release's own webhook
// (see crdinstall.ConversionFor).
func applyCRDs(cfg *rest.Config, conv crdinstall.Conversion, log logr.Logger, stderr io.Writer) int {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		printError(stderr, err)
		return exitFailure
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		printError(stderr, fmt.Errorf("creating client: %w", err))
		return exitFailure
	}
	ctx, cancel := context.WithTimeout(ctrl.SetupSignalHandler(), crdApplyTimeout+10*time.Second)
	defer cancel()
	if err := crdinstall.Apply(ctx, c, crdApplyTimeout, conv); err != nil {
		printError(stderr, fmt.Errorf("applying CRDs: %w", err))
		return exitFailure
	}
	names, _ := crdinstall.Names()
	cc, _ := conv.ClientConfig()
	log.Info("CRDs applied and established", "crds", names, "conversionWebhook", cc)
	return exitOK
}

var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// printError writes err as the single line operators and tests expect.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "dynamo-operator: %s\n", lineBreaks.Replace(err.Error()))
}

// Command manager runs the Dynamo operator, which reconciles the
// nvidia.com/v1alpha1 inference graph resources.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dynamoctl/dynamo-operator/operator/app"
	"github.com/dynamoctl/dynamo-operator/operator/config"
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

	restConfig, err := ctrl.GetConfig()
	if err != nil {
		printError(stderr, fmt.Errorf("loading Kubernetes client configuration: %w", err))
		return exitFailure
	}
	mgr, err := app.New(restConfig, o, app.Deps{})
	if err != nil {
		printError(stderr, fmt.Errorf("creating manager: %w", err))
		return exitFailure
	}

	startup := []any{"version", o.OperatorVersion, "mode", o.Mode(), "namespace", o.OperatorNamespace}
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

var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// printError writes err as the single line operators and tests expect.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "dynamo-operator: %s\n", lineBreaks.Replace(err.Error()))
}

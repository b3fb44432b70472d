// Package certs provides the webhook server's serving certificate and keeps
// the operator's webhook configurations pointing at it, in the three modes
// of --webhook-cert-mode:
//
//   - auto (default): the operator keeps a CA and a serving certificate in
//     the Secret --webhook-cert-secret, writes the serving pair to
//     --webhook-cert-dir, injects the CA bundle into its webhook
//     configurations and restores it when it is edited away. It renews the
//     serving certificate before it expires, and the CA too, without a failed
//     admission: a new CA is added to the bundle first and signs only once
//     the bundle has been in the configurations for a grace period (see
//     Timing), and old CAs stay trusted until they expire.
//   - cert-manager: cert-manager fills the Secret and, through the
//     cert-manager.io/inject-ca-from annotation the operator sets, the CA
//     bundle. The operator never touches caBundle.
//   - external: the installer provides the Secret (or the files) and sets
//     caBundle. The operator never touches caBundle.
//
// In every mode the webhook server reads the pair from the cert dir on each
// TLS handshake whose files changed (ServeFromDir), so a renewed or remounted
// certificate is served without a restart. In cert-manager and external
// modes the operator also copies the Secret's pair into the cert dir when it
// differs and the directory is writable (a mounted Secret volume is not, and
// needs no copy), so the given Secret is what is served either way.
//
// The operator creates its webhook configurations itself, with server-side
// apply as field owner "dynamo-operator", and writes them only when they
// differ from what they should be.
//
// The CRDs that convert by webhook (DynamoGraphDeployment,
// DynamoComponentDeployment) name one operator's webhook, the one that
// installed them (operator/crdinstall). In the auto mode that operator's
// manager also keeps its bundle in their
// spec.conversion.webhook.clientConfig.caBundle (crds.go), and a new CA
// waits until they trust it too. In the cert-manager mode the installer
// annotates the CRDs for cert-manager's CA injector, in the external mode it
// sets their bundle; the manager never reads CRDs in either.
package certs

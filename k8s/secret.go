package k8s

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The OAuth2 client secret of a run with --oauth2-token-url reaches the
// shards from a Kubernetes Secret (--oauth2-client-secret-k8s-secret
// NAME[:KEY]): the container's environment variable the run reads
// (--oauth2-client-secret-env, default OAUTH2_CLIENT_SECRET) refers to the
// Secret's key (valueFrom.secretKeyRef), so the secret is never a literal
// in the manifest or on a command line.

// DefaultSecretKey is the key of the Secret holding the client secret
// when --oauth2-client-secret-k8s-secret names none.
const DefaultSecretKey = "client-secret"

// defaultSecretEnv is the variable replay run reads the secret from
// unless --oauth2-client-secret-env names another.
const defaultSecretEnv = "OAUTH2_CLIENT_SECRET"

// secretRef splits NAME[:KEY].
func secretRef(s string) (name, key string) {
	name, key, ok := strings.Cut(s, ":")
	if !ok {
		key = DefaultSecretKey
	}
	return name, key
}

// secretErrors checks --oauth2-client-secret-k8s-secret, and that a run
// getting tokens by OAuth2 (run, parsed; nil: not known) has it.
func (m *Manifest) secretErrors(run *pflag.FlagSet) []string {
	const flag = "--oauth2-client-secret-k8s-secret"
	if m.ClientSecret == "" {
		if run != nil && changed(run, "oauth2-token-url") {
			return []string{"run flag --oauth2-token-url: the shards need the client secret: give " + flag +
				" NAME[:KEY], a Secret of the namespace holding it (kubectl create secret generic NAME --from-literal=" + DefaultSecretKey + "=…)"}
		}
		return nil
	}
	name, key := secretRef(m.ClientSecret)
	errs := nameErrors(flag, name, dns1123Subdomain)
	for _, e := range validation.IsConfigMapKey(key) {
		errs = append(errs, fmt.Sprintf("%s %q: key %q: %s", flag, m.ClientSecret, key, e))
	}
	for _, e := range validation.IsEnvVarName(m.secretEnvName()) {
		errs = append(errs, fmt.Sprintf("run flag --oauth2-client-secret-env %q: %s", m.secretEnvName(), e))
	}
	return errs
}

func changed(f *pflag.FlagSet, name string) bool {
	fl := f.Lookup(name)
	return fl != nil && fl.Changed
}

// secretEnv is the container's environment entry of the client secret;
// nil without --oauth2-client-secret-k8s-secret.
func (m *Manifest) secretEnv() []corev1.EnvVar {
	if m.ClientSecret == "" {
		return nil
	}
	name, key := secretRef(m.ClientSecret)
	return []corev1.EnvVar{{Name: m.secretEnvName(), ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key},
	}}}
}

// secretEnvName is the variable the run flags read the secret from: the
// last --oauth2-client-secret-env, else OAUTH2_CLIENT_SECRET.
func (m *Manifest) secretEnvName() string {
	env := defaultSecretEnv
	for i, a := range m.RunArgs {
		if v, ok := strings.CutPrefix(a, "--oauth2-client-secret-env="); ok {
			env = v
		} else if a == "--oauth2-client-secret-env" && i+1 < len(m.RunArgs) {
			env = m.RunArgs[i+1]
		}
	}
	return env
}

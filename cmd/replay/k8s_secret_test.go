package main

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestK8sManifestOAuth2SecretFromAKubernetesSecret: a run getting tokens
// by OAuth2 takes its client secret, in the pods, from a Kubernetes Secret
// the manifest names (env valueFrom secretKeyRef, under the variable the
// run reads), never a literal; without one the manifest is refused (every
// pod would fail), naming the flag.
func TestK8sManifestOAuth2SecretFromAKubernetesSecret(t *testing.T) {
	t.Setenv("OAUTH2_CLIENT_SECRET", "s3cret-of-the-shell")
	base := []string{"k8s", "manifest", "--shards", "2", "--image", "registry.local/replay:dev",
		"--snapshot", "/snap/o.snap", "--target", "http://orders:8080",
		"--oauth2-token-url", "https://idp.example/oauth2/token", "--oauth2-client-id", "loadgen"}
	for _, c := range []struct {
		name      string
		args      []string
		env       string
		ref, key  string
		runSecret bool // the run flags name the variable
	}{
		{"default key and variable", []string{"--oauth2-client-secret-k8s-secret", "api-creds"}, "OAUTH2_CLIENT_SECRET", "api-creds", "client-secret", false},
		{"key and variable given", []string{"--oauth2-client-secret-k8s-secret=idp.creds:secret", "--oauth2-client-secret-env", "IDP_SECRET"},
			"IDP_SECRET", "idp.creds", "secret", true},
	} {
		code, stdout, stderr := cliRun(t, "", append(base, c.args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		if strings.Contains(stdout, "s3cret-of-the-shell") {
			t.Errorf("%s: the manifest holds the secret", c.name)
		}
		var job batchv1.Job
		if err := yaml.UnmarshalStrict([]byte(strings.Split(stdout, "\n---\n")[1]), &job); err != nil {
			t.Fatal(err)
		}
		ctr := job.Spec.Template.Spec.Containers[0]
		var got *corev1.EnvVar
		for i, e := range ctr.Env {
			if e.Name == c.env {
				got = &ctr.Env[i]
			}
		}
		if got == nil || got.Value != "" || got.ValueFrom == nil || got.ValueFrom.SecretKeyRef == nil ||
			got.ValueFrom.SecretKeyRef.Name != c.ref || got.ValueFrom.SecretKeyRef.Key != c.key {
			t.Errorf("%s: env %+v; want %s from Secret %s key %s", c.name, ctr.Env, c.env, c.ref, c.key)
		}
		if cmd := strings.Join(ctr.Command, " "); strings.Contains(cmd, "k8s-secret") || strings.Contains(cmd, "--oauth2-client-secret-env IDP_SECRET") != c.runSecret {
			t.Errorf("%s: shard command %q", c.name, cmd)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "give --oauth2-client-secret-k8s-secret NAME[:KEY]"},
		{[]string{"--oauth2-client-secret-k8s-secret", "Api_Creds"}, `--oauth2-client-secret-k8s-secret "Api_Creds"`},
		{[]string{"--oauth2-client-secret-k8s-secret", "api:bad/key"}, `key "bad/key"`},
	} {
		code, stdout, stderr := cliRun(t, "", append(base, c.args...)...)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

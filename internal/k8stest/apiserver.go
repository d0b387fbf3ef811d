// Package k8stest serves, on loopback, the read paths of a Kubernetes API
// server that replay k8s collect uses, backed by client-go's fake
// clientset: the Job, its pods by label selector, and the pods' logs,
// which tests set to what real shards printed. No kube-apiserver can run
// here; this lets collect's own client (client-go's REST client, the
// kubeconfig loading) run as it runs against a cluster. Tests only.
package k8stest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// APIServer is the fake clientset's objects over HTTP.
type APIServer struct {
	*httptest.Server
	Client *fake.Clientset

	mu   sync.Mutex
	logs map[string]string // "namespace/pod"
	reqs []string
}

// New serves objs until the test ends.
func New(t testing.TB, objs ...runtime.Object) *APIServer {
	t.Helper()
	s := &APIServer{Client: fake.NewClientset(objs...), logs: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /apis/batch/v1/namespaces/{ns}/jobs/{name}", func(w http.ResponseWriter, r *http.Request) {
		job, err := s.Client.BatchV1().Jobs(r.PathValue("ns")).Get(r.Context(), r.PathValue("name"), metav1.GetOptions{})
		if err == nil {
			job.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}
		}
		reply(w, job, err)
	})
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/pods", func(w http.ResponseWriter, r *http.Request) {
		list, err := s.Client.CoreV1().Pods(r.PathValue("ns")).List(r.Context(), metav1.ListOptions{LabelSelector: r.URL.Query().Get("labelSelector")})
		if err == nil {
			list.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}
		}
		reply(w, list, err)
	})
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/pods/{name}/log", func(w http.ResponseWriter, r *http.Request) {
		ns, name := r.PathValue("ns"), r.PathValue("name")
		if _, err := s.Client.CoreV1().Pods(ns).Get(r.Context(), name, metav1.GetOptions{}); err != nil {
			reply(w, nil, err)
			return
		}
		s.mu.Lock()
		text, ok := s.logs[ns+"/"+name]
		s.mu.Unlock()
		if !ok { // the fake clientset's own log: "fake logs"
			rc, err := s.Client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: r.URL.Query().Get("container")}).Stream(r.Context())
			if err != nil {
				reply(w, nil, err)
				return
			}
			defer rc.Close()
			b, _ := io.ReadAll(rc)
			text = string(b)
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, text)
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Method+" "+r.URL.String())
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// reply writes obj as JSON, or err as the API server's Status.
func reply(w http.ResponseWriter, obj any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		st := apierrors.NewInternalError(err).ErrStatus
		if se, ok := err.(apierrors.APIStatus); ok {
			st = se.Status()
		}
		st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
		w.WriteHeader(int(st.Code))
		json.NewEncoder(w).Encode(st)
		return
	}
	json.NewEncoder(w).Encode(obj)
}

// SetLog sets a pod's log (pods without one log "fake logs").
func (s *APIServer) SetLog(namespace, pod, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs[namespace+"/"+pod] = text
}

// Requests are the requests served so far: "GET /api/v1/...".
func (s *APIServer) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

// Kubeconfig writes a kubeconfig file naming the server (context "test")
// and returns its path.
func (s *APIServer) Kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	text := strings.ReplaceAll(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: URL}
users:
- name: test
  user: {token: test-token}
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
`, "URL", s.URL)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Pod is shard k's pod of a Job as the Job controller makes it, in phase.
func Pod(namespace, job string, k int, suffix string, phase corev1.PodPhase) *corev1.Pod {
	idx := strconv.Itoa(k)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job + "-" + idx + "-" + suffix, Namespace: namespace,
			Labels:      map[string]string{batchv1.JobNameLabel: job, batchv1.JobCompletionIndexAnnotation: idx},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: idx}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

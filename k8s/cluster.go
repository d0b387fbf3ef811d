package k8s

import (
	"context"
	"io"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Cluster is what Collect reads of a cluster: a Job, its pods, their
// logs. NewCluster reads them from an API server; tests may give their
// own.
type Cluster interface {
	// Job returns the Job; an error for which apierrors.IsNotFound holds
	// when there is none.
	Job(ctx context.Context, namespace, name string) (*batchv1.Job, error)
	// Pods lists the pods a label selector selects.
	Pods(ctx context.Context, namespace, selector string) ([]corev1.Pod, error)
	// Log streams a container's whole log.
	Log(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error)
}

// newScheme knows only the kinds collect reads (and metav1's Status): not
// client-go's kubernetes/scheme, which registers every API group and
// would triple what the k8s package adds to the binary.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// apiServer reads through client-go's REST client, as the typed clients
// do (GET .../jobs/NAME, .../pods?labelSelector=, .../pods/NAME/log).
type apiServer struct{ core, batch *rest.RESTClient }

// NewCluster returns the Cluster of the API server cfg names.
func NewCluster(cfg *rest.Config) (Cluster, error) {
	core, err := restClient(cfg, "/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	batch, err := restClient(cfg, "/apis", batchv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return apiServer{core: core, batch: batch}, nil
}

func restClient(cfg *rest.Config, apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	c.APIPath, c.GroupVersion = apiPath, &gv
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = "replay-k8s-collect"
	}
	return rest.RESTClientFor(c)
}

func (a apiServer) Job(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	var job batchv1.Job
	err := a.batch.Get().Namespace(namespace).Resource("jobs").Name(name).Do(ctx).Into(&job)
	return &job, err
}

func (a apiServer) Pods(ctx context.Context, namespace, selector string) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := a.core.Get().Namespace(namespace).Resource("pods").Param("labelSelector", selector).Do(ctx).Into(&list)
	return list.Items, err
}

func (a apiServer) Log(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error) {
	return a.core.Get().Namespace(namespace).Resource("pods").Name(pod).SubResource("log").Param("container", container).Stream(ctx)
}

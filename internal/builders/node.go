package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeWrapper builds a Node as a kubelet registers it.
type NodeWrapper struct{ corev1.Node }

// MakeNode starts a node with its hostname label and no capacity.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
	}}
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *corev1.Node { return &n.Node }

// Label sets a label, e.g. the control-plane role kubeadm gives.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	n.Labels[k] = v
	return n
}

// Capacity sets the status' capacity and allocatable, as the kubelet
// reports them.
func (n *NodeWrapper) Capacity(rl corev1.ResourceList) *NodeWrapper {
	n.Status.Capacity = rl.DeepCopy()
	n.Status.Allocatable = rl.DeepCopy()
	return n
}

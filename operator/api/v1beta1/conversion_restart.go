package v1beta1

import (
	"slices"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// spec.restart and status.restart have the same shape in both versions.

func restartUp(a *v1alpha1.Restart) *Restart {
	if a == nil {
		return nil
	}
	b := &Restart{ID: a.ID}
	if s := a.Strategy; s != nil {
		b.Strategy = &RestartStrategy{Type: RestartStrategyType(s.Type), Order: slices.Clone(s.Order)}
	}
	return b
}

func restartDown(b *Restart) *v1alpha1.Restart {
	if b == nil {
		return nil
	}
	a := &v1alpha1.Restart{ID: b.ID}
	if s := b.Strategy; s != nil {
		a.Strategy = &v1alpha1.RestartStrategy{Type: v1alpha1.RestartStrategyType(s.Type), Order: slices.Clone(s.Order)}
	}
	return a
}

func restartStatusUp(a *v1alpha1.RestartStatus) *RestartStatus {
	if a == nil {
		return nil
	}
	return &RestartStatus{ObservedID: a.ObservedID, Phase: RestartPhase(a.Phase), InProgress: slices.Clone(a.InProgress)}
}

func restartStatusDown(b *RestartStatus) *v1alpha1.RestartStatus {
	if b == nil {
		return nil
	}
	return &v1alpha1.RestartStatus{ObservedID: b.ObservedID, Phase: v1alpha1.RestartPhase(b.Phase), InProgress: slices.Clone(b.InProgress)}
}

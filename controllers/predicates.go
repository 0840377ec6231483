package controllers

import (
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

func builderPredicates(p ...predicate.Predicate) builder.Predicates {
	return builder.WithPredicates(p...)
}

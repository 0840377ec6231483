// Package webhooks defaults and validates the Metal3 kinds at admission, so a
// mistake in a manifest is reported to whoever applies it, naming the field,
// instead of surfacing later as a stuck machine.
package webhooks

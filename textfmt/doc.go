// Package textfmt is the leaf that every layer may import for generic text:
// durations, ages, counts and byte sizes as an operator reads them, and
// (in sanitize.go) the sanitiser for server-supplied text. It imports
// nothing from dbxtop, so model, sources, report and tui can all share it
// without a cycle. Domain wording (flags, errors, events) lives in model.
package textfmt

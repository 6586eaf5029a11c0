// Package doccheck holds the tests that keep the repository
// self-contained: no tracked file points outside it, and every relative
// link of the documentation reaches a file (and a heading) that exists.
// It has no code of its own.
package doccheck

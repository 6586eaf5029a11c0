// Package composecheck validates the deployment files at the repository root
// — Dockerfile, .dockerignore and docker-compose.yml — without a container
// engine. Its tests load the compose file with the official compose-spec
// library, parse the Dockerfile, and run the Dockerfile's own `go build`
// command. The package's non-test code is a small Dockerfile parser that uses
// only the standard library; nothing in the finsync binary imports it.
package composecheck

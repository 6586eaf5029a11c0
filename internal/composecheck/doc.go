// Package composecheck validates the deployment files at the repository root
// — Dockerfile, .dockerignore and docker-compose.yml — without a container
// engine. Each file is read by the parser its tools use: the Dockerfile by
// BuildKit's parser and instruction reader (RUN commands by a POSIX shell
// parser), .dockerignore by moby's patternmatcher, and the compose file by
// the compose-spec loader. The tests also run the Dockerfile's own `go build`
// command. The package's non-test code is a thin layer over BuildKit's
// reader; nothing in the finsync binary imports it.
package composecheck

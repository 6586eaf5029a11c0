// Package credinput reads the credentials an operator gives on the command
// line (`connections add`, `connections reauth`, `providers configure`):
// from a file, standard input, the command line itself (with a warning), or
// the provider simulator's link flow, and hands them to package linking,
// naming the flag at fault in every refusal. It never prints a credential.
package credinput

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/linking"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/storage"
)

// Input is what the credential flags give: where the credentials come from
// (a file, standard input, the command line, or the simulator), the base
// URL, and whether to try them with the provider first.
type Input struct {
	// Credentials is --credentials: a JSON object, or - for standard input.
	Credentials string
	// CredentialsFile is --credentials-file.
	CredentialsFile string
	// BaseURL is --base-url; SimURL --sim-url, SimName --sim-name.
	BaseURL, SimURL, SimName string
	// UseSim is --sim, Check --check.
	UseSim, Check bool
	// Stdin is where `--credentials -` reads; Warn receives the warning
	// about credentials given on the command line (nil: none).
	Stdin io.Reader
	Warn  io.Writer
}

// maxCredentialsBytes bounds credentials read from a file or standard
// input (a provider's JSON object is a few hundred bytes).
const maxCredentialsBytes = 64 << 10

// inlineCredentialsWarning is printed when credentials are given on the
// command line.
const inlineCredentialsWarning = "warning: --credentials JSON shows the credentials to every user of this machine " +
	"(the process list) and in your shell's history; use --credentials-file PATH or --credentials - (standard input)\n"

// Read returns the credentials of --credentials-file PATH, --credentials -
// (standard input) or --credentials JSON (with a warning: the command line
// is visible in the process list); nil when none is given.
func (in *Input) Read() ([]byte, error) {
	switch {
	case in.CredentialsFile != "" && in.Credentials != "":
		return nil, fmt.Errorf("give either --credentials or --credentials-file, not both")
	case in.CredentialsFile != "":
		f, err := os.Open(in.CredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("--credentials-file: %w", err)
		}
		defer f.Close()
		return readBounded("--credentials-file", f)
	case in.Credentials == "-":
		if in.Stdin == nil {
			return nil, fmt.Errorf("--credentials -: no standard input")
		}
		return readBounded("--credentials -", in.Stdin)
	case in.Credentials != "":
		if in.Warn != nil {
			fmt.Fprint(in.Warn, inlineCredentialsWarning)
		}
		return []byte(in.Credentials), nil
	}
	return nil, nil
}

// readBounded reads r whole, refusing more than maxCredentialsBytes, and
// trims the surrounding white space (a file's final newline).
func readBounded(flag string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxCredentialsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if len(b) > maxCredentialsBytes {
		return nil, fmt.Errorf("%s: longer than %d KiB", flag, maxCredentialsBytes>>10)
	}
	return bytes.TrimSpace(b), nil
}

// Given reads what the flags give for a connection of the described
// provider: the credentials of --credentials-file, --credentials - or
// --credentials JSON, or with --sim the simulator's (by the provider's link
// flow where it has one, signed with the stored settings; the simulator at
// --sim-url, else at simURL, FINSYNC_SIM_URL), and the base URL
// (--base-url, else the simulator's with --sim; empty means the caller's
// default).
func (in *Input) Given(ctx context.Context, desc providers.Description, settings []byte, simURL string) (linking.Given, error) {
	g := linking.Given{BaseURL: in.BaseURL, Check: in.Check}
	if in.BaseURL != "" {
		if err := linking.CheckBaseURL(in.BaseURL); err != nil {
			return g, Flagged(err)
		}
	}
	if !in.UseSim {
		creds, err := in.Read()
		if err != nil {
			return g, err
		}
		if len(creds) == 0 {
			return g, fmt.Errorf("credentials are required: --credentials-file PATH, --credentials - (standard input) or --credentials JSON (a JSON object), or --sim")
		}
		g.Credentials = creds
		return g, nil
	}
	root := in.SimURL
	if root == "" {
		root = simURL
	}
	if root == "" {
		return g, fmt.Errorf("--sim needs --sim-url or FINSYNC_SIM_URL")
	}
	name := in.SimName
	if name == "" {
		name = uuid.NewString()
	}
	creds, err := allsim.Link(ctx, &http.Client{Timeout: linking.CallTimeout}, desc.Name, root, name, settings)
	if err != nil {
		return g, fmt.Errorf("--sim: %w", err)
	}
	g.Credentials, g.FromLinkFlow = creds, true
	if g.BaseURL == "" {
		g.BaseURL = allsim.BaseURL(desc.Name, root)
	}
	return g, nil
}

// Flagged names the flag at fault in a refusal of package linking
// (--credentials, --base-url, --check); other errors pass as they are.
func Flagged(err error) error {
	var in *linking.InputError
	if errors.As(err, &in) && in.Field != "" {
		return fmt.Errorf("--%s: %w", in.Field, err)
	}
	return err
}

// ProviderNames lists the registry's providers, comma-separated, for help
// and refusals.
func ProviderNames(reg *providers.Registry) string {
	var n []string
	for _, d := range reg.Descriptions() {
		n = append(n, d.Name)
	}
	return strings.Join(n, ", ")
}

// Add is `connections add`: the user, the provider, the institution's
// name, the sync interval (0: the default) and the credential flags.
type Add struct {
	Input
	User, Provider, Institution string
	Interval                    time.Duration
}

// Build checks the flags and the credentials (against the provider's
// declared schema, and with --check by one call to the provider) and
// returns the connection to store; nothing is stored when it fails. simURL
// is FINSYNC_SIM_URL (empty: unset).
func (a *Add) Build(ctx context.Context, l *linking.Linker, simURL string) (storage.NewConnection, error) {
	var nc storage.NewConnection
	var err error
	if nc.UserID, err = uuid.Parse(a.User); err != nil {
		return nc, fmt.Errorf("--user: %w", err)
	}
	desc, ok := l.Registry.Describe(a.Provider)
	if !ok {
		return nc, fmt.Errorf("--provider must be one of %s", ProviderNames(l.Registry))
	}
	nc.Provider, nc.InstitutionName = a.Provider, a.Institution
	settings, err := l.Settings(ctx, desc)
	if err != nil {
		return nc, err
	}
	g, err := a.Given(ctx, desc, settings, simURL)
	if err != nil {
		return nc, err
	}
	var creds []byte
	if creds, nc.BaseURL, err = l.Resolve(ctx, desc, settings, g, desc.DefaultBaseURL); err != nil {
		return nc, Flagged(err)
	}
	if a.Interval > 0 {
		nc.SyncInterval = &a.Interval
	}
	nc.SealedCredentials, err = l.Box.Seal(creds)
	return nc, err
}

// Reauth puts the flags' credentials on connection id and enqueues its
// sync, as linking.Linker.Reauth does for every caller (the ops console's
// re-auth form too). Unknown connections and credentials that are not the
// connection's provider's are refused, nothing stored. The linker is
// built (newLinker: it needs the encryption key) only for a connection
// that exists.
func (in *Input) Reauth(ctx context.Context, st *storage.Store, newLinker func() (*linking.Linker, error), id uuid.UUID, simURL string) (domain.BankConnection, error) {
	conn, err := st.GetConnectionAnyUser(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return conn, fmt.Errorf("connection %s not found", id)
	}
	if err != nil {
		return conn, err
	}
	l, err := newLinker()
	if err != nil {
		return conn, err
	}
	desc, ok := l.Registry.Describe(conn.Provider)
	if !ok {
		return conn, fmt.Errorf("connection %s: provider %q has no adapter in this build", id, conn.Provider)
	}
	var settings []byte
	if in.UseSim {
		if settings, err = l.Settings(ctx, desc); err != nil {
			return conn, err
		}
	}
	g, err := in.Given(ctx, desc, settings, simURL)
	if err != nil {
		return conn, fmt.Errorf("connection %s (%s): %w", id, conn.Provider, err)
	}
	res, err := l.Reauth(ctx, id, g)
	if errors.Is(err, storage.ErrNotFound) {
		return conn, fmt.Errorf("connection %s not found", id)
	}
	return res.Connection, Flagged(err)
}

// Settings returns the provider settings to store for desc (`providers
// configure`): the simulator's with --sim, else those read from
// --credentials-file, --credentials - or --credentials JSON, checked
// against the provider's declared Settings.
func (in *Input) Settings(desc providers.Description) ([]byte, error) {
	if len(desc.Settings) == 0 {
		return nil, fmt.Errorf("%s has no provider settings: its connections carry all their credentials", desc.Name)
	}
	raw, err := in.Read()
	switch {
	case err != nil:
		return nil, err
	case in.UseSim && raw != nil:
		return nil, errors.New("give either --sim or the settings, not both")
	case in.UseSim:
		return allsim.Settings(desc.Name), nil
	case raw == nil:
		return nil, errors.New("settings are required: --credentials-file PATH, --credentials - (standard input), --credentials JSON, or --sim")
	}
	if err := desc.CheckSettings(raw); err != nil {
		return nil, fmt.Errorf("--credentials: %w", err)
	}
	return raw, nil
}

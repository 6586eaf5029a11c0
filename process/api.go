package process

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/linking"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// Serve is `finsync serve`: it checks the keys, waits for the database,
// opens the read replica if one is configured, and serves the API on addr
// and the ops endpoints on metricsAddr (empty: none) until ctx ends.
func (e Env) Serve(ctx context.Context, addr, metricsAddr string) error {
	if _, err := e.Config.RequireKeys(); err != nil {
		return err
	}
	conns := e.Config.DBConns(config.DefaultServeConns)
	primary, err := AwaitDatabase(ctx, e.Config.DatabaseURLOrDefault(), storage.Options{MaxConns: conns}, e.Log)
	if err != nil {
		return err
	}
	defer primary.Close()
	st, rep, err := e.readReplica(ctx, primary, conns)
	if err != nil {
		return err
	}
	if rep != nil {
		defer rep.Close()
		go rep.Run(ctx)
	}
	reg := prometheus.NewRegistry()
	BaseMetrics(reg, st)
	return e.RunAPI(ctx, st, addr, metricsAddr, reg)
}

// RunAPI serves the API on addr, and the ops endpoints with reg's metrics
// on metricsAddr (empty: none), until ctx ends. Without FINSYNC_PUBLIC_URL
// it warns that v1's links name the listen address.
func (e Env) RunAPI(ctx context.Context, st *storage.Store, addr, metricsAddr string, reg *prometheus.Registry) error {
	debug.SetGCPercent(e.Config.GCPercentOr(DefaultGCPercent))
	public, defaulted, err := e.Config.PublicURLFor(addr)
	if err != nil {
		return err
	}
	if defaulted {
		e.Log.Warn("FINSYNC_PUBLIC_URL is not set: v1's nextPage links name the listen address; set it to the URL clients reach the API at",
			"public_url", public.String())
	}
	e.Config.PublicURL = public
	g, ctx := errgroup.WithContext(ctx)
	srv, err := e.NewAPI(ctx, st, reg)
	if err != nil {
		return err
	}
	g.Go(func() error { srv.Run(ctx); return nil })
	g.Go(func() error { return api.Serve(ctx, addr, srv.Handler, e.Log) })
	if metricsAddr != "" {
		g.Go(func() error { return api.Serve(ctx, metricsAddr, OpsHandler(st, reg), e.Log) })
	}
	return g.Wait()
}

// NewAPI builds the API server, registering its metrics on reg, with the
// ops console when FINSYNC_OPS_TOKEN is set; ctx bounds the console's
// background work. It needs both keys.
func (e Env) NewAPI(ctx context.Context, st *storage.Store, reg prometheus.Registerer) (*api.API, error) {
	jobs, err := worker.NewInsertClient(st)
	if err != nil {
		return nil, err
	}
	cursorKeys, err := e.Config.Cursor()
	if err != nil {
		return nil, err
	}
	box, err := e.Config.Box()
	if err != nil {
		return nil, err
	}
	var console *ops.Console
	if e.Config.OpsToken != "" {
		linker := &linking.Linker{Store: st, Registry: e.Registry, Box: box, Jobs: jobs}
		if console, err = ops.New(ctx, ops.Config{Token: e.Config.OpsToken, Store: st, Jobs: jobs, Log: e.Log,
			Providers: providerNames(e.Registry), Reauth: OpsReauth(linker)}); err != nil {
			return nil, err
		}
	}
	receiver, err := e.noticeReceiver(st, box, jobs)
	if err != nil {
		return nil, err
	}
	return api.New(api.Config{Store: st, Log: e.Log, Providers: e.Registry.Profiles(), CursorKey: cursorKeys[0], PreviousCursorKeys: cursorKeys[1:],
		Metrics: reg, Jobs: jobs, TrustedProxies: e.Config.TrustedProxies, Ops: console, Box: box, WebhookPolicy: e.Config.WebhookPolicy,
		PublicURL: e.Config.PublicURL, Notices: receiver, PageCacheBytes: e.Config.PageCacheBytes()})
}

// noticeReceiver builds what serve answers the providers' notifications
// with: the adapters (to read and verify them) and what a sync records
// (docs/webhooks.md, "Provider notifications in").
func (e Env) noticeReceiver(st *storage.Store, box *secrets.Box, jobs *storage.JobClient) (*worker.NoticeReceiver, error) {
	provs, err := worker.NewProviders(e.Registry, worker.ProviderOptions{Rates: st, Quotas: st})
	if err != nil {
		return nil, fmt.Errorf("provider adapters: %w", err)
	}
	syncer := &worker.Syncer{Store: st, Providers: provs, Box: box, Log: e.Log,
		ReconnectURL: e.Config.ReconnectURL, ConsentWarning: e.Config.ConsentWarning}
	return &worker.NoticeReceiver{Syncer: syncer, Jobs: jobs}, nil
}

// providerNames lists the registry's providers, for the ops console's
// provider filter.
func providerNames(reg *providers.Registry) []string {
	var names []string
	for _, d := range reg.Descriptions() {
		names = append(names, d.Name)
	}
	return names
}

// OpsReauth is the ops console's re-auth (its connection page's form):
// exactly `connections reauth ID --credentials JSON [--base-url URL]`,
// through l. A refusal of the input is the operator's (shown on the page,
// never holding a credential); an unknown connection stays
// storage.ErrNotFound; anything else is the console's to report.
func OpsReauth(l *linking.Linker) ops.ReauthFunc {
	return func(ctx context.Context, r ops.ReauthRequest) (ops.ReauthResult, error) {
		res, err := l.Reauth(ctx, r.ConnectionID, linking.Given{Credentials: r.Credentials, BaseURL: r.BaseURL})
		var in *linking.InputError
		if errors.As(err, &in) {
			return ops.ReauthResult{Refused: in.Error()}, nil
		}
		if err != nil {
			return ops.ReauthResult{}, err
		}
		return ops.ReauthResult{JobID: res.JobID}, nil
	}
}

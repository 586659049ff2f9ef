package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options configure Handler. The zero Options serve the dashboard at the root path,
// with its actions.
type Options struct {
	// BasePath is the path the handler is mounted at, such as "/pgq": it receives
	// requests whose path starts with it, and its links start with it. "" or "/" is the
	// root. It must start with "/".
	BasePath string
	// ReadOnly hides every action and refuses every POST with 403 Forbidden.
	ReadOnly bool
	// Actor names the person behind a request, recorded with each of their actions as
	// pgq.actions.on_behalf_of ("dashboard:NAME"; "dashboard" when it returns "").
	// Default: the user name of the request's basic authentication, if any.
	Actor func(*http.Request) string
	// Logger receives the errors of failed requests. Default: slog.Default().
	Logger *slog.Logger
	// WorkerTimeout and WorkerTries are the workers' --timeout and --tries, the
	// defaults of the config check page (pgq.check). Defaults: 60 s and 1.
	WorkerTimeout time.Duration
	WorkerTries   int
	// PageSize is the number of rows of a list page. Default 50; at most 1000.
	PageSize int
}

// requestTimeout bounds the database work of one request.
const requestTimeout = 15 * time.Second

// server is one Handler: read-only after Handler returns, safe for concurrent use.
type server struct {
	pool  *pgxpool.Pool
	q     *dbsqlc.Queries // reads, each planned for its own arguments
	opts  Options
	base  string // BasePath without a trailing slash: "" for the root
	log   *slog.Logger
	pages map[string]*template.Template
	// outcomes keeps the chart's counts of settled minutes; it has its own lock.
	outcomes outcomeCounts
}

// Handler returns the dashboard for the pgq schema in pool's database. Its requests
// are safe to serve concurrently. It returns an error for bad Options or a nil pool;
// it does not connect (a database that is down or not migrated shows as an error page).
func Handler(pool *pgxpool.Pool, opts Options) (http.Handler, error) {
	if pool == nil {
		return nil, errors.New("dashboard: pool is nil")
	}
	base := strings.TrimRight(opts.BasePath, "/")
	if base != "" && !strings.HasPrefix(base, "/") {
		return nil, fmt.Errorf("dashboard: BasePath must start with /, got %q", opts.BasePath)
	}
	if strings.ContainsAny(base, "?#{}") {
		return nil, fmt.Errorf("dashboard: BasePath must be a plain path, got %q", opts.BasePath)
	}
	switch {
	case opts.PageSize == 0:
		opts.PageSize = 50
	case opts.PageSize < 1 || opts.PageSize > 1000:
		return nil, fmt.Errorf("dashboard: PageSize must be between 1 and 1000, got %d", opts.PageSize)
	}
	if opts.WorkerTimeout == 0 {
		opts.WorkerTimeout = 60 * time.Second
	}
	if opts.WorkerTimeout < 0 {
		return nil, fmt.Errorf("dashboard: WorkerTimeout must be >= 0, got %s", opts.WorkerTimeout)
	}
	if opts.WorkerTries == 0 {
		opts.WorkerTries = 1
	}
	if opts.WorkerTries < 0 {
		return nil, fmt.Errorf("dashboard: WorkerTries must be >= 0, got %d", opts.WorkerTries)
	}
	if opts.Actor == nil {
		opts.Actor = basicAuthUser
	}
	s := &server{pool: pool, q: dbsqlc.New(customPlans{pool}), opts: opts, base: base, log: opts.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	var err error
	if s.pages, err = parsePages(s); err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page(s.overview))
	mux.HandleFunc("GET /jobs", s.page(s.jobs))
	mux.HandleFunc("GET /jobs/{uuid}", s.page(s.job))
	mux.HandleFunc("GET /batches", s.page(s.batches))
	mux.HandleFunc("GET /batches/{id}", s.page(s.batch))
	mux.HandleFunc("GET /chains", s.page(s.chains))
	mux.HandleFunc("GET /chains/{id}", s.page(s.chain))
	mux.HandleFunc("GET /locks", s.page(s.locks))
	mux.HandleFunc("GET /fair", s.page(s.fair))
	mux.HandleFunc("GET /workers", s.page(s.workers))
	mux.HandleFunc("GET /schedules", s.page(s.schedules))
	mux.HandleFunc("GET /check", s.page(s.check))
	mux.HandleFunc("GET /history", s.page(s.history))
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(static)))
	if opts.ReadOnly {
		mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "pgq dashboard: read-only: actions are disabled", http.StatusForbidden)
		})
	} else {
		mux.HandleFunc("POST /jobs/{uuid}/run-now", s.page(s.runNow))
		mux.HandleFunc("POST /jobs/{uuid}/cancel", s.page(s.cancel))
		mux.HandleFunc("POST /jobs/{uuid}/retry", s.page(s.retryOne))
		mux.HandleFunc("POST /jobs/{uuid}/forget", s.page(s.forget))
		mux.HandleFunc("POST /failed/retry", s.page(s.retrySelected))
		mux.HandleFunc("POST /failed/retry-all", s.page(s.retryAll))
		mux.HandleFunc("POST /failed/flush", s.page(s.flush))
		mux.HandleFunc("POST /batches/{id}/retry", s.page(s.retryBatch))
		mux.HandleFunc("POST /batches/{id}/cancel", s.page(s.cancelBatch))
		mux.HandleFunc("POST /queues/{queue}/pause", s.page(s.pause))
		mux.HandleFunc("POST /queues/{queue}/resume", s.page(s.resume))
		mux.HandleFunc("POST /schedules/{name}/run-now", s.page(s.runSchedule))
		mux.HandleFunc("POST /schedules/{name}/pause", s.page(s.pauseSchedule))
		mux.HandleFunc("POST /schedules/{name}/resume", s.page(s.resumeSchedule))
	}

	// Every POST, refused or not, first passes the cross-origin check: a form another
	// site makes a browser submit never reaches an action (CSRF).
	var h http.Handler = http.NewCrossOriginProtection().Handler(mux)
	if base != "" {
		h = http.StripPrefix(base, h)
	}
	return securityHeaders(h), nil
}

// securityHeaders: no page may be framed (clickjacking), nothing but the dashboard's own
// stylesheet and inline SVG may load, and no page is cached by a shared cache.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func staticFiles(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		files.ServeHTTP(w, r)
	})
}

func basicAuthUser(r *http.Request) string {
	user, _, _ := r.BasicAuth()
	return user
}

// onBehalfOf is what pgq.actions records as on_behalf_of for r's actions.
func (s *server) onBehalfOf(r *http.Request) string {
	if who := s.opts.Actor(r); who != "" {
		return "dashboard:" + who
	}
	return "dashboard"
}

// customPlans sends each query as an unnamed statement (pgx's QueryExecModeCacheDescribe),
// which PostgreSQL plans for the arguments given, never with a generic plan: the
// dashboard's optional filters (@x IS NULL OR col = @x) then fold away, and what is left
// can use the indexes. The descriptions are cached, so it costs one round trip as usual.
type customPlans struct{ db dbsqlc.DBTX }

func (c customPlans) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return c.db.Exec(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

func (c customPlans) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return c.db.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

func (c customPlans) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return c.db.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

// httpError is an error with the status and the message the user sees.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf(format, args...)}
}

// view is what a page handler produces: a template and its data, or a redirect.
type view struct {
	name     string // template, e.g. "overview"
	title    string
	data     any
	status   int    // default 200
	redirect string // path below the base: answered with 303 See Other
}

// pageData is what every template gets.
type pageData struct {
	Title    string
	Nav      string // the name of the page, for the navigation bar
	Base     string
	ReadOnly bool
	Flash    string
	Data     any
}

// page turns a page handler into an http.HandlerFunc: it bounds its database work,
// renders its view (or its error) and logs what failed.
func (s *server) page(fn func(r *http.Request) (view, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		v, err := fn(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if v.redirect != "" {
			http.Redirect(w, r, s.base+v.redirect, http.StatusSeeOther)
			return
		}
		s.render(w, r, v)
	}
}

func (s *server) render(w http.ResponseWriter, r *http.Request, v view) {
	t := s.pages[v.name]
	var buf bytes.Buffer
	err := t.ExecuteTemplate(&buf, "layout", pageData{
		Title: v.title, Nav: v.name, Base: s.base, ReadOnly: s.opts.ReadOnly,
		Flash: flashMessage(r.URL.Query()), Data: v.data,
	})
	if err != nil {
		s.log.Error("dashboard: render", "page", v.name, "err", err)
		http.Error(w, "pgq dashboard: the page could not be rendered (see the server's log)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if v.status != 0 {
		w.WriteHeader(v.status)
	}
	_, _ = buf.WriteTo(w)
}

// fail renders err as an error page. Only messages meant for the user are shown: a
// request's own mistakes, and PostgreSQL's refusals of bad input or missing rights.
// Anything else (a connection failure could name the host, user and database) is
// logged, and the page says only that it failed.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "the database request failed (the server's log has the details)"
	var he *httpError
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &he):
		status, msg = he.status, he.msg
	case errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || pgErr.Code == "42501"):
		status, msg = http.StatusBadRequest, pgErr.Message
		if pgErr.Code == "42501" {
			status = http.StatusForbidden
		}
	case errors.As(err, &pgErr) && pgErr.Code == "3F000":
		msg = "the database has no pgq schema: run `pgq-worker migrate`"
	case errors.Is(err, context.DeadlineExceeded):
		status, msg = http.StatusGatewayTimeout, "the database did not answer in time"
	}
	if status >= 500 {
		s.log.Error("dashboard: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	s.render(w, r, view{name: "error", title: http.StatusText(status), status: status, data: msg})
}

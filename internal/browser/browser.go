// Package browser starts headless Chromium for the dashboard's browser tests and its
// screenshots (chromedp). Debian's package is `chromium`; .ci/run installs it.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// ErrNoChromium: no Chromium or Chrome binary was found.
var ErrNoChromium = errors.New("browser: no chromium found (Debian: apt-get install -y chromium)")

// candidates are the names Chromium goes by, in the order tried. $CHROMIUM, when set,
// comes first.
var candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// Path returns the Chromium binary to run, or ErrNoChromium.
func Path() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%w: $CHROMIUM: %w", ErrNoChromium, err)
		}
		return path, nil
	}
	for _, name := range candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// New starts a headless Chromium with a fresh profile in userDataDir and returns a
// context for chromedp tasks; cancel stops the browser. Each chromedp.NewContext made
// from the returned context is a new tab of the same browser.
func New(parent context.Context, userDataDir string) (context.Context, context.CancelFunc, error) {
	path, err := Path()
	if err != nil {
		return nil, nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(userDataDir),
		// The flags this machine and CI containers need: no sandbox (root in a
		// container), no GPU, and nothing that reaches the network on its own.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(parent, opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	// Start the browser now, so that a failure to start is reported here.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		return nil, nil, err
	}
	return ctx, func() { cancelCtx(); cancelAlloc() }, nil
}

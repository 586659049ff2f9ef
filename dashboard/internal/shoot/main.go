// Command shoot captures the dashboard's screenshots for the docs with headless
// Chromium: scripts/dashboard-screenshots runs it against the demo database.
//
//	go run ./dashboard/internal/shoot -url http://127.0.0.1:8080 -out docs/img -job UUID -batch ID -chain ID
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pgq-dev/pgq/internal/browser"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "the dashboard's `URL`")
	out := flag.String("out", "docs/img", "write the PNGs into this `DIR`")
	job := flag.String("job", "", "the `UUID` of the job whose timeline to capture")
	batch := flag.String("batch", "", "the `ID` of the batch whose page to capture")
	chain := flag.String("chain", "", "the `ID` of the chain whose page to capture")
	width := flag.Int("width", 1280, "viewport width in CSS pixels")
	also := flag.String("also", "", "more `PATHS` to capture, comma separated (e.g. /workers,/jobs?state=failed), for review")
	flag.Parse()
	if err := run(*base, *out, *job, *batch, *chain, *also, int64(*width)); err != nil {
		fmt.Fprintln(os.Stderr, "shoot:", err)
		os.Exit(1)
	}
}

func run(base, out, job, batch, chain, also string, width int64) error {
	profile, err := os.MkdirTemp("", "pgq-shoot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	ctx, cancel, err := browser.New(context.Background(), profile)
	if err != nil {
		return err
	}
	defer cancel()
	shots := []struct{ path, file string }{
		{"/", "dashboard-overview.png"},
		{"/locks", "dashboard-locks.png"},
		{"/fair", "dashboard-fair.png"},
		{"/schedules", "dashboard-schedules.png"},
		{"/batches", "dashboard-batches.png"},
	}
	if job != "" {
		shots = append(shots, struct{ path, file string }{"/jobs/" + job, "dashboard-job.png"})
	}
	if batch != "" {
		shots = append(shots, struct{ path, file string }{"/batches/" + batch, "dashboard-batch.png"})
	}
	if chain != "" {
		shots = append(shots, struct{ path, file string }{"/chains/" + chain, "dashboard-chain.png"})
	}
	for i, p := range strings.Split(also, ",") {
		if p != "" {
			shots = append(shots, struct{ path, file string }{p, fmt.Sprintf("review-%d.png", i+1)})
		}
	}
	for _, s := range shots {
		tctx, stop := context.WithTimeout(ctx, 30*time.Second)
		err := chromedp.Do(tctx,
			chromedp.EmulateViewport(width, 800),
			chromedp.Navigate(base+s.path),
			chromedp.WaitVisible(chromedp.CSS("main")),
		)
		var png []byte
		if err == nil {
			png, err = chromedp.Run(tctx, chromedp.FullScreenshot(100))
		}
		stop()
		if err != nil {
			return fmt.Errorf("%s: %w", s.path, err)
		}
		if err := os.WriteFile(filepath.Join(out, s.file), png, 0o644); err != nil {
			return err
		}
		fmt.Println(filepath.Join(out, s.file))
	}
	return nil
}

// Command cmd writes the shapes this checkout's code writes (compat.Shapes) into a folder, one
// file each: make compat-fixtures runs it on an earlier release's code to keep that release's
// shapes in infra/compat/testdata/<release>/.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/resetnotify/resetnotify/infra/compat"
)

func main() {
	out := flag.String("out", "", "folder to write the shapes into")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "compat: -out is required")
		os.Exit(2)
	}
	shapes, err := compat.Shapes()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, raw := range shapes {
		if err := os.WriteFile(filepath.Join(*out, name), append(raw, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

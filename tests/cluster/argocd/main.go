// The two Argo CD components the real-cluster tests run, in one binary chosen by the name it is
// called by (as Argo CD's own binary is): argocd-application-controller and argocd-repo-server.
// Only these two are linked, which keeps the build to what the tests use.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/spf13/cobra"
)

func main() {
	var command *cobra.Command
	switch name := filepath.Base(os.Args[0]); name {
	case "argocd-application-controller":
		command = appcontroller.NewCommand()
	case "argocd-repo-server":
		command = reposerver.NewCommand()
	default:
		fmt.Fprintf(os.Stderr, "%s: call me as argocd-application-controller or argocd-repo-server\n", name)
		os.Exit(2)
	}
	if err := command.Execute(); err != nil {
		os.Exit(1)
	}
}

// Command testparent is a stand-in rep for the executor package's tests: it
// runs one instance with an Executor, prints "pid <n>" once it started,
// and waits to be killed. The tests SIGKILL it and check that the instance
// died with it.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/isolation"
)

func main() {
	dataDir := flag.String("data-dir", "", "the executor's data dir")
	appsDir := flag.String("apps-dir", "", "the executor's apps dir")
	portMin := flag.Uint("port-min", 0, "first host port")
	portMax := flag.Uint("port-max", 0, "last host port")
	path := flag.String("path", "./hello", "action path")
	mode := flag.String("isolation", "auto", "isolation: auto, full or none")
	flag.Parse()

	exe, err := executor.NewExecutor(executor.ExecutorConfig{
		CellID:    "test-parent",
		DataDir:   *dataDir,
		AppsDir:   *appsDir,
		PortMin:   uint32(*portMin),
		PortMax:   uint32(*portMax),
		Isolation: isolation.Config{Mode: isolation.Mode(*mode)},
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = exe.Run(executor.InstanceSpec{
		ProcessGuid:  "orphan-test",
		InstanceGuid: "orphan-test-0",
		Definition: &models.LRPDefinition{
			DefinitionId: "v1",
			Action:       &models.RunAction{Path: *path, Args: flag.Args()},
			Ports:        []uint32{8080},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("pid %d\n", exe.Instances()[0].Pid)
	os.Stdout.Sync()
	for {
		time.Sleep(time.Hour)
	}
}

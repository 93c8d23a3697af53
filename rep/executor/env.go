package executor

import (
	"strconv"

	"github.com/corkboard/corkboard/models"
)

// defaultPath is the PATH an instance gets unless its definition sets one.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

type envInputs struct {
	spec        InstanceSpec
	cellID      string
	home        string // the instance's working directory
	instanceURL string // empty: no CORK_INSTANCE_URL
	ports       []*models.PortMapping
}

// instanceEnv is an instance's whole environment; nothing of the rep's own
// environment leaks in. Three layers, later ones winning on a name:
//
//  1. PATH (defaultPath) and HOME (the working directory): defaults the
//     definition may override.
//  2. The definition's env, in order (a repeated name: the last wins).
//  3. What the rep says about the instance, which the definition cannot
//     override, since the instance would otherwise lie about itself or
//     listen on a port it was not given: PORT (the host port of the
//     definition's first port; absent without ports), PORT_<container
//     port> for every port, INSTANCE_INDEX, INSTANCE_GUID, PROCESS_GUID,
//     DEFINITION_ID, CELL_ID, and CORK_INSTANCE_URL when the agent serves
//     a local instance endpoint.
func instanceEnv(in envInputs) []string {
	var names []string
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}

	set("PATH", defaultPath)
	set("HOME", in.home)
	for _, v := range in.spec.Definition.GetAction().GetEnv() {
		set(v.GetName(), v.GetValue())
	}
	if len(in.ports) > 0 {
		set("PORT", strconv.FormatUint(uint64(in.ports[0].GetHostPort()), 10))
	}
	for _, m := range in.ports {
		set("PORT_"+strconv.FormatUint(uint64(m.GetContainerPort()), 10), strconv.FormatUint(uint64(m.GetHostPort()), 10))
	}
	set("INSTANCE_INDEX", strconv.FormatInt(int64(in.spec.Index), 10))
	set("INSTANCE_GUID", in.spec.InstanceGuid)
	set("PROCESS_GUID", in.spec.ProcessGuid)
	set("DEFINITION_ID", in.spec.Definition.GetDefinitionId())
	set("CELL_ID", in.cellID)
	if in.instanceURL != "" {
		set("CORK_INSTANCE_URL", in.instanceURL)
	}

	env := make([]string, 0, len(names))
	for _, name := range names {
		env = append(env, name+"="+values[name])
	}
	return env
}

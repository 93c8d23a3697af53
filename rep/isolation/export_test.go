package isolation

var ReadEphemeralPorts = readEphemeralPorts

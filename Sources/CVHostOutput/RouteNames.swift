import CVHostLines

/// The names a protocol gives the routes of lines (MQTT topics, NATS subjects), each made once
/// and kept: a run has few routes (inputs x plugins x events), and a name is made of several
/// parts scalar by scalar. Kept for 10,000 routes at most (a plugin with a new event name per
/// frame cannot grow it): past them, names are made each time.
struct RouteNames {
    private var names: [OutputLine.Route: String] = [:]

    mutating func name(for route: OutputLine.Route, _ make: (OutputLine.Route) -> String) -> String {
        if let known = names[route] { return known }
        let made = make(route)
        if names.count < 10_000 { names[route] = made }
        return made
    }
}

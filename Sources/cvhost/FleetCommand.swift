import ArgumentParser
import CVHostCore
import CVHostFleet
import Foundation

/// `cvhost fleet`: a site's inputs given and taken away, and the site as it is, from any machine
/// that reaches its NATS servers (FleetAdmin).
struct FleetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Give a site of cvhost nodes its inputs, zones, lines and tracks, take them away, and see the site (NATS JetStream).",
        discussion: """
            A site is any number of `cvhost run --fleet nats://.../SITE` nodes sharing a NATS JetStream cluster (3 servers keep it when one goes). The site's inputs are kept there; each is run by one node, which holds it by a lease it renews every few seconds; when a node dies, its inputs are taken by the others once their leases lapse (10 s). See docs/fleet.md.

            EXAMPLES
              cvhost run --fleet nats://n1,n2,n3/depot --plugin detect   # each node
              cvhost fleet --fleet nats://n1,n2,n3/depot add-input door \\
                           rtsp://cam/1 --needs detect
              cvhost fleet --fleet nats://n1,n2,n3/depot remove-input door
              cvhost fleet --fleet nats://n1,n2,n3/depot status

            EXIT CODES
              0    done
              2    refused: an input of that name is there already (add-input),
                   or none is (remove-...)
              5    the site's store cannot be reached (--timeout)
              64   bad command line
            """,
        subcommands: [AddInput.self, RemoveInput.self, SetZone.self, SetLine.self, SetTrack.self, RemoveZone.self, RemoveLine.self, RemoveTrack.self,
                      Status.self])

    /// Given before the subcommand's name (`cvhost fleet --fleet URL status`) or after it.
    @OptionGroup var site: Site

    struct Site: ParsableArguments {
        @Option(help: ArgumentHelp("The site: nats://HOST[:PORT][,HOST...]/SITE (as cvhost run --fleet).", valueName: "url"))
        var fleet: String

        @Option(help: ArgumentHelp("How long to wait for the site's servers (seconds).", valueName: "seconds"))
        var timeout: Double = 5

        func admin() throws -> FleetAdmin {
            let address: FleetAddress
            do { address = try FleetAddress(parsing: fleet) } catch { throw ValidationError(error.description) }
            guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout is from 0 to 3600 seconds") }
            return try failing { try FleetAdmin(address, timeout: timeout) }
        }
    }

    struct AddInput: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-input",
            abstract: "Give the site an input: one node will run it.",
            discussion: "INPUT is what cvhost run --input takes (a URL, a file every node can read, testsrc); --device a camera's path instead. The node that takes it runs the plugins named with --needs (all of its plugins when none is named); only a node with those plugins takes it.")

        @OptionGroup var site: Site

        @Argument(help: ArgumentHelp("The input's name (letters, digits, _, - or .): its lines' \"source\".", valueName: "name"))
        var name: String

        @Argument(help: ArgumentHelp("What cvhost run --input takes.", valueName: "input"))
        var input: String?

        @Option(help: ArgumentHelp("A camera's path on whichever node takes it, instead of INPUT.", valueName: "path"))
        var device: String?

        @Option(help: ArgumentHelp("A plugin the input needs (repeatable): one of the nodes' --plugin names; only a node with it takes the input.", valueName: "plugin"))
        var needs: [String] = []

        @Flag(help: "Replace the input of that name, if there is one (its node runs the new one).")
        var replace = false

        func run() throws {
            guard (input == nil) != (device == nil) else { throw ValidationError("give INPUT (what --input takes) or --device PATH, one of them") }
            let admin = try site.admin()
            let revision = try failing {
                try admin.addInput(name, SiteInput(input: input, device: device, plugins: needs.isEmpty ? nil : needs), replace: replace)
            }
            print("input \(name) given to the site (revision \(revision))")
        }
    }

    struct RemoveInput: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove-input", abstract: "Take an input away from the site: its node stops it.")

        @OptionGroup var site: Site

        @Argument(help: ArgumentHelp("The input's name.", valueName: "name"))
        var name: String

        func run() throws {
            let admin = try site.admin()
            try failing { try admin.removeInput(name) }
            print("input \(name) taken away from the site")
        }
    }

    struct SetZone: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-zone", abstract: "Set a zone of the site, as --zone takes it, with input=NAME: the node running that input sets it.")
        @OptionGroup var site: Site
        @Argument(help: ArgumentHelp("NAME=x,y x,y x,y ...[:input=INPUT,dwell=S,...] (as cvhost run --zone; input= is required).", valueName: "zone"))
        var zone: String
        func run() throws { try setRule(site, "zone", zone) }
    }

    struct SetLine: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-line", abstract: "Set a counting line of the site, as --line takes it, with input=NAME: the node running that input sets it.")
        @OptionGroup var site: Site
        @Argument(help: ArgumentHelp("NAME=x,y x,y[:in=left,input=INPUT,...] (as cvhost run --line; input= is required).", valueName: "line"))
        var line: String
        func run() throws { try setRule(site, "line", line) }
    }

    struct SetTrack: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-track", abstract: "Follow a plugin's boxes on every node that has the plugin, as --track takes it.")
        @OptionGroup var site: Site
        @Argument(help: ArgumentHelp("PLUGIN[:high=0.5,lost=2,...] (as cvhost run --track).", valueName: "track"))
        var track: String
        func run() throws { try setRule(site, "track", track) }
    }

    struct RemoveZone: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove-zone", abstract: "Take a zone away from the site.")
        @OptionGroup var site: Site
        @Argument(help: ArgumentHelp("The zone's name.", valueName: "name"))
        var name: String
        func run() throws { try removeRule(site, "zone", name) }
    }

    struct RemoveLine: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove-line", abstract: "Take a counting line away from the site.")
        @OptionGroup var site: Site
        @Argument(help: ArgumentHelp("The line's name.", valueName: "name"))
        var name: String
        func run() throws { try removeRule(site, "line", name) }
    }

    struct RemoveTrack: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove-track", abstract: "Stop following a plugin's boxes on the site's nodes.")
        @OptionGroup var site: Site
        @Argument(help: ArgumentHelp("The plugin's name.", valueName: "plugin"))
        var plugin: String
        func run() throws { try removeRule(site, "track", plugin) }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "The site now: its nodes, and each input with the node that runs it, its state, frame rate and last frame's age.")

        @OptionGroup var site: Site

        @Flag(help: "One JSON object on stdout, for programs.")
        var json = false

        func run() throws {
            let admin = try site.admin()
            let status = try failing { try admin.status() }
            if json {
                let data = try JSONSerialization.data(withJSONObject: status.json, options: [.sortedKeys, .withoutEscapingSlashes])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print(status.text)
            }
        }
    }
}

private func setRule(_ site: FleetCommand.Site, _ kind: String, _ text: String) throws {
    let admin = try site.admin()
    let (name, revision) = try failing { try admin.setRule(kind, text) }
    print("\(kind) \(name) set for the site (revision \(revision))")
}

private func removeRule(_ site: FleetCommand.Site, _ kind: String, _ name: String) throws {
    let admin = try site.admin()
    try failing { try admin.removeRule(kind, name) }
    print("\(kind) \(name) taken away from the site")
}

/// A fleet command's failure said on stderr, one line, and its exit code.
private func failing<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let f as FleetAdmin.Failure {
        if f.exitCode == 64 { throw ValidationError(f.description) }
        Log.error(f.description)
        throw ExitCode(f.exitCode)
    }
}

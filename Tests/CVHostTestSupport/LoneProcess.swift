import Foundation
import Glibc

/// A helper process that lives through a test (a reader that never reads, a server that never
/// answers), started with posix_spawn and holding no descriptor but /dev/null on stdin and
/// stdout and the test's stderr.
///
/// Why not Foundation's Process: on Linux it learns that a child ended when a socket the child
/// inherited closes, and every child started meanwhile inherits the sockets (and pipes) of the
/// others. A long-lived child started that way keeps other tests' processes "running" until it
/// ends, and a child that closes its descriptors looks ended at once (Foundation then blocks in
/// wait4 on it, and notices no other exit). Two such tests side by side waited on each other's
/// sleepers: five minutes lost per run.
public final class LoneProcess: @unchecked Sendable {
    // @unchecked Sendable: `pid` is set once; waiting is done once, by the test that started it.
    public let pid: pid_t
    private var exited = false

    /// Starts `executable` (a path, or a name looked up on PATH) with no signal blocked or ignored.
    public init(_ executable: String, _ arguments: [String]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        // Every descriptor above stderr is closed in the child before the tool starts (python's
        // os.closerange, then exec): posix_spawn's closefrom action is a GNU extension that Swift's
        // Glibc module does not show.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ["/usr/bin/python3", "-c", "import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])",
                    executable] + arguments
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, argv[0], &actions, &attributes, &cArguments, environ)
        guard status == 0 else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "cannot start \(executable): \(String(cString: strerror(status)))"])
        }
        pid = child
    }

    /// SIGTERM, then waits for it to end.
    public func stop() {
        guard !exited else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        exited = true
    }

    /// Waits for it to end by itself.
    public func wait() {
        guard !exited else { return }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        exited = true
    }

    deinit { stop() }
}

import CVHostCore
import Foundation
import Glibc

/// Reads JSON commands from stdin, one a line, on a thread of its own, while the run goes on
/// (`LiveCommands`); each is answered by a `command.result` line. Off when an input is stdin
/// itself or with --no-stdin-commands. A cvhost in the background of a shell reads nothing:
/// SIGTTIN is ignored, so reading the terminal fails instead of stopping the process.
enum StdinCommands {
    /// A line longer than this is refused as a whole (a command is a few dozen bytes).
    static let maxLine = 64 * 1024

    static func start(_ commands: LiveCommands, lines: RunLines) {
        signal(SIGTTIN, SIG_IGN)
        let t = Thread {
            var pending: [UInt8] = []
            var skipping = false
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }  // end of stdin, or not readable: no more commands
                for byte in buffer[..<n] {
                    if byte != UInt8(ascii: "\n") {
                        if pending.count < maxLine { pending.append(byte) } else { skipping = true }
                        continue
                    }
                    defer {
                        pending.removeAll(keepingCapacity: true)
                        skipping = false
                    }
                    if skipping {
                        Log.warning("a command on stdin longer than \(maxLine) bytes was ignored")
                        continue
                    }
                    if pending.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) { continue }
                    lines.writeWhileRunning(commands.handle(pending, from: .stdin).line)
                }
            }
        }
        t.name = "cvhost-stdin-commands"
        t.start()
    }
}

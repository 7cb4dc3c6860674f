import CVHostCore
import Foundation
import Glibc

/// Reads JSON commands from stdin, one a line, on a thread of its own, while the run goes on
/// (`LiveCommands`); each is answered by a `command.result` line. Off when an input is stdin
/// itself or with --no-stdin-commands. A cvhost in the background of a shell reads nothing:
/// SIGTTIN is ignored, so reading the terminal fails instead of stopping the process.
enum StdinCommands {
    static func start(_ commands: LiveCommands, lines: RunLines) {
        signal(SIGTTIN, SIG_IGN)
        SystemThread.start("cvhost-stdin-commands") {
            var splitter = CommandLines()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let (n, _) = buffer.withUnsafeMutableBytes { b in SystemCall.retrying { read(0, b.baseAddress, b.count) } }
                guard n > 0 else { return }  // end of stdin, or not readable: no more commands
                splitter.feed(buffer[..<n]) { line in
                    switch line {
                    case .command(let bytes): lines.writeWhileRunning(commands.handle(bytes, from: .stdin).line)
                    case .tooLong: Log.warning("a command on stdin longer than \(CommandLines.maxLine) bytes was ignored")
                    }
                }
            }
        }
    }
}
